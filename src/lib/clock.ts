/** Time source, injectable so tests can pin "now". */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC with milliseconds: sorts lexicographically in time order, on SQLite and PostgreSQL alike. */
export function toIso(d: Date): string {
  return d.toISOString();
}
