/**
 * Whether a stop's arrival window falls outside its location's hours (issue 19: flagged on the load
 * page). Both ends of the window are read on the location's own clock (its time zone, else UTC); each
 * end is checked against that day's hours (Saturday and Sunday: weekend hours, else weekday hours).
 * Hours that are not given are not checked (unknown is not closed).
 */

const partsFormats = new Map<string, Intl.DateTimeFormat>();

function localParts(iso: string, timeZone: string | null): { weekend: boolean; minutes: number } | null {
  const zone = timeZone ?? 'UTC';
  let f = partsFormats.get(zone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    } catch {
      return null;
    }
    partsFormats.set(zone, f);
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return null;
  const parts = Object.fromEntries(f.formatToParts(d).map((p) => [p.type, p.value]));
  return { weekend: parts.weekday === 'Sat' || parts.weekday === 'Sun', minutes: Number(parts.hour) * 60 + Number(parts.minute) };
}

const toMinutes = (hhmm: string) => {
  const [h, m] = hhmm.split(':').map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
};

export interface LocationHours {
  timezone: string | null;
  weekday_open_hours: string | null;
  weekday_close_hours: string | null;
  weekend_open_hours: string | null;
  weekend_close_hours: string | null;
}

/** A sentence saying why the window is outside the hours, or null when it fits (or hours are unknown). */
export function outsideHours(early: string, late: string, loc: LocationHours | undefined): string | null {
  if (!loc) return null;
  const problems: { which: string; hours: string }[] = [];
  for (const [which, iso] of [
    ['starts', early],
    ['ends', late],
  ] as const) {
    const p = localParts(iso, loc.timezone);
    if (!p) continue;
    const open = p.weekend ? loc.weekend_open_hours : loc.weekday_open_hours;
    const close = p.weekend ? loc.weekend_close_hours : loc.weekday_close_hours;
    if (!open || !close) continue;
    if (p.minutes < toMinutes(open) || p.minutes > toMinutes(close))
      problems.push({ which, hours: `${p.weekend ? 'weekend' : 'weekday'} hours ${open}–${close}` });
  }
  if (problems.length === 0) return null;
  if (problems.length === 2 && problems[0]!.hours === problems[1]!.hours) return `Arrival window starts and ends outside ${problems[0]!.hours}`;
  return `Arrival window ${problems.map((x) => `${x.which} outside ${x.hours}`).join(' and ')}`;
}
