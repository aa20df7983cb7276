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
  const probe = new Date(Date.UTC(Number(y), month - 1, day));
  if (probe.getUTCDate() !== day) return null;
  return storedForm(t);
}

const LOCAL_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/;
const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** Milliseconds the zone's wall clock is ahead of UTC at instant `t`. */
function zoneOffsetMs(t: number, timeZone: string): number {
  let f = zoneFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    zoneFormats.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(new Date(t)).map((p) => [p.type, p.value]));
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return wall - Math.floor(t / 1000) * 1000;
}

/**
 * A timestamp that may lack an offset: with one (or Z) it is that instant; without, it is the wall-clock
 * time in `timeZone` (an IANA zone; UTC when null). A wall time skipped by a DST change is read with the
 * offset before the change; a repeated one as its first occurrence. null when it is not a timestamp.
 */
export function parseLocalTimestamp(value: string, timeZone: string | null): string | null {
  const m = LOCAL_RE.exec(value);
  if (!m || timeZone === null) return parseIsoTimestamp(value);
  if (parseIsoTimestamp(`${value}Z`) === null) return null;
  const [, y, mo, d, h, mi, s = '00', frac] = m;
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  // The offset at the instant the wall time names: two rounds settle it (the second only moves across a DST change).
  const first = wall - zoneOffsetMs(wall, timeZone);
  const second = wall - zoneOffsetMs(first, timeZone);
  const t = zoneOffsetMs(second, timeZone) === zoneOffsetMs(first, timeZone) ? Math.min(first, second) : first;
  return storedForm(t);
}
