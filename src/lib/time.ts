// Accepted on input: ISO 8601 date-time with or without an offset (no offset means UTC), or a bare date
// (midnight UTC). Everything is stored and returned as UTC with milliseconds and a `Z`.
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/**
 * The instant as this service stores it, or null when it falls outside years 0000–9999 in UTC: an offset
 * can carry 9999-12-31T23:00:00-14:00 into year 10000, which JavaScript writes "+010000-…", a form no
 * endpoint accepts back and that sorts wrongly as text (found by a new-user trial, 2026-11-27).
 */
function storedForm(t: number): string | null {
  const iso = new Date(t).toISOString();
  return iso.length === 24 ? iso : null;
}

/** A timestamp whose form is right but whose instant is outside years 0000–9999 in UTC. */
export function isOutOfRangeTimestamp(value: string): boolean {
  const m = ISO_RE.exec(value);
  return m !== null && parseIsoTimestamp(value) === null && parseIsoTimestamp(`${value.slice(0, 4) === '9999' ? '9998' : '0001'}${value.slice(4)}`) !== null;
}

export function isIsoTimestamp(value: string): boolean {
  return parseIsoTimestamp(value) !== null;
}

/**
 * Milliseconds since the epoch of a UTC calendar time. Date.UTC reads years 0–99 as 1900–1999 (ECMA-262
 * MakeFullYear); setUTCFullYear takes the year as it is, so years 0000–0099 stay real years (docs/api.md).
 */
export function utcMs(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime();
}

const CANONICAL_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

const digits = (value: string, at: number, count: number): number => {
  let n = 0;
  for (let i = at; i < at + count; i++) n = n * 10 + (value.charCodeAt(i) - 48);
  return n;
};

/** Days in a month of the proleptic Gregorian calendar (JavaScript's). */
const daysIn = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;

export function parseIsoTimestamp(value: string): string | null {
  // The common forms, canonical (what this service returns) or to the second with Z: checked field by
  // field (a calendar date, 00:00:00 to 23:59:59), which refuses rolled-over dates such as 2024-02-31.
  // Most timestamps a batch carries take this path: no Date is made (it was a tenth of a batch's time).
  const common = CANONICAL_RE.exec(value);
  if (common) {
    const year = digits(value, 0, 4);
    const month = digits(value, 5, 2);
    const day = digits(value, 8, 2);
    if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
    if (digits(value, 11, 2) > 23 || digits(value, 14, 2) > 59 || digits(value, 17, 2) > 59) return null;
    return common[1] ? value : `${value.slice(0, 19)}.000Z`;
  }
  const m = ISO_RE.exec(value);
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac, zone] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  const ms = frac ? frac.slice(0, 3).padEnd(3, '0') : '000';
  let offset = 'Z';
  if (zone && zone.toUpperCase() !== 'Z') offset = zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${offset}`);
  if (Number.isNaN(t)) return null;
  // Reject dates JavaScript silently rolls over (2024-02-31 → March 2).
  if (new Date(utcMs(Number(y), month, day)).getUTCDate() !== day) return null;
  return storedForm(t);
}

const WALL_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;
const zoneFormats = new Map<string, Intl.DateTimeFormat>();
const DAY_MS = 86_400_000;

/** The zone's wall clock at instant `t`, to the second (the era read too: 1 BC is year 0). */
function wallPartsAt(t: number, timeZone: string): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  let f = zoneFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    zoneFormats.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const year = p.era === 'BC' ? 1 - Number(p.year) : Number(p.year);
  return { year, month: Number(p.month), day: Number(p.day), hour: Number(p.hour), minute: Number(p.minute), second: Number(p.second) };
}

/** Milliseconds the zone's wall clock is ahead of UTC at instant `t`. */
function zoneOffsetMs(t: number, timeZone: string): number {
  const w = wallPartsAt(t, timeZone);
  return utcMs(w.year, w.month, w.day, w.hour, w.minute, w.second) - Math.floor(t / 1000) * 1000;
}

/** A wall-clock time read in a zone: the instant, or why there is none. */
export type WallTimeReading = { instant: string } | { refused: 'invalid' | 'skipped' | 'out_of_range' };

/**
 * The instant a wall-clock time `YYYY-MM-DDTHH:MM[:SS]` (no offset) names in `timeZone` (IANA). A time
 * a DST change skipped (02:30 on a spring-forward night) is refused; a repeated one (01:30 on a
 * fall-back night) is its first occurrence, the earlier instant, as Temporal's 'compatible' reads it
 * (docs/api.md, tracking events).
 */
export function instantOfWallTime(value: string, timeZone: string): WallTimeReading {
  const m = WALL_RE.exec(value);
  if (!m || parseIsoTimestamp(`${value}Z`) === null) return { refused: 'invalid' };
  const [, y, mo, d, h, mi, s = '00'] = m;
  const wall = utcMs(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s));
  // The zone's offsets a day either side: a wall time is real under one of them when the offset at the instant it gives agrees.
  const offsets = new Set([zoneOffsetMs(wall - DAY_MS, timeZone), zoneOffsetMs(wall + DAY_MS, timeZone)]);
  const instants = [...offsets].map((o) => wall - o).filter((t) => zoneOffsetMs(t, timeZone) === wall - t);
  if (instants.length === 0) return { refused: 'skipped' };
  const stored = storedForm(Math.min(...instants));
  return stored === null ? { refused: 'out_of_range' } : { instant: stored };
}

/** The wall-clock time `YYYY-MM-DDTHH:MM:SS` in `timeZone` at a stored instant. */
export function wallTimeOf(iso: string, timeZone: string): string {
  const w = wallPartsAt(Date.parse(iso), timeZone);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  // A zone behind UTC takes 0000-01-01T00:00Z into year -1, written as ISO 8601's expanded year.
  const year = w.year >= 0 && w.year <= 9999 ? pad(w.year, 4) : `${w.year < 0 ? '-' : '+'}${pad(Math.abs(w.year), 6)}`;
  return `${year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
}
