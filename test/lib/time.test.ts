import { describe, expect, it } from 'vitest';
import { instantOfWallTime, isIsoTimestamp, isOutOfRangeTimestamp, parseIsoTimestamp, wallTimeOf } from '../../src/lib/time.js';

describe('parseIsoTimestamp: what the API accepts as a timestamp, canonical (UTC, milliseconds, Z)', () => {
  it.each([
    ['2026-10-01T08:00:00.000Z', '2026-10-01T08:00:00.000Z'],
    ['2026-10-01T08:00:00Z', '2026-10-01T08:00:00.000Z'],
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'], // a leap day
    ['2000-02-29T00:00:00.000Z', '2000-02-29T00:00:00.000Z'], // divisible by 400: leap
    ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['2026-10-01T08:00:00+02:00', '2026-10-01T06:00:00.000Z'],
    ['2026-10-01T08:00:00.123456-0500', '2026-10-01T13:00:00.123Z'],
    ['2026-10-01T08:00', '2026-10-01T08:00:00.000Z'], // no zone: UTC
    ['2026-10-01', '2026-10-01T00:00:00.000Z'],
    ['2024-01-01T08:00:00.5Z', '2024-01-01T08:00:00.500Z'], // 1 to 9 fraction digits
    // Years 0000–0099 are real years (Date.UTC would read them as 1900–1999): 0000 is a leap year, 1900 is not.
    ['0000-02-29', '0000-02-29T00:00:00.000Z'],
    ['0004-02-29T12:00+01:00', '0004-02-29T11:00:00.000Z'],
    ['0099-12-31', '0099-12-31T00:00:00.000Z'],
    ['0050-06-01T10:00:00.25+02:00', '0050-06-01T08:00:00.250Z'],
  ])('%s → %s', (input, canonical) => {
    expect(parseIsoTimestamp(input)).toBe(canonical);
    expect(isIsoTimestamp(input)).toBe(true);
  });

  it.each([
    '2023-02-29T00:00:00Z', // not a leap year
    '1900-02-29T00:00:00.000Z', // divisible by 100, not 400
    '2024-02-31T00:00:00Z', // JavaScript would roll it over to March 2
    '2024-04-31T00:00:00.000Z',
    '2024-13-01T00:00:00Z',
    '2024-00-10T00:00:00Z',
    '2024-01-00T00:00:00Z',
    '2024-01-01T24:00:00Z',
    '2024-01-01T23:60:00Z',
    '2024-01-01T23:59:60Z',
    '2024-1-01T08:00:00Z',
    'yesterday',
    '9999-12-31T23:00:00-14:00', // year 10000 in UTC (JavaScript writes +010000-01-01T13:00:00.000Z)
    '0000-01-01T00:30:00+01:00', // year -1 in UTC
  ])('refuses %s', (input) => {
    expect(parseIsoTimestamp(input)).toBeNull();
    expect(isIsoTimestamp(input)).toBe(false);
  });
});

describe('timestamps an offset or a zone moves outside years 0000–9999 in UTC', () => {
  it('are refused, and told apart from malformed ones (their 422 says why)', () => {
    expect(isOutOfRangeTimestamp('9999-12-31T23:00:00-14:00')).toBe(true);
    expect(isOutOfRangeTimestamp('0000-01-01T00:30:00+01:00')).toBe(true);
    expect(isOutOfRangeTimestamp('9999-12-31T23:00:00Z')).toBe(false);
    expect(isOutOfRangeTimestamp('2024-02-31T00:00:00Z')).toBe(false);
    expect(isOutOfRangeTimestamp('next tuesday')).toBe(false);
    // A wall time in a zone behind UTC at the very end of year 9999.
    expect(instantOfWallTime('9999-12-31T23:00:00', 'America/Chicago')).toEqual({ refused: 'out_of_range' });
    expect(instantOfWallTime('9999-12-31T12:00:00', 'America/Chicago')).toEqual({ instant: '9999-12-31T18:00:00.000Z' });
  });
});

describe("wall-clock times in a zone (tracking events' occurred_at_local)", () => {
  it.each([
    ['2026-03-02T10:10', 'America/Chicago', '2026-03-02T16:10:00.000Z'], // CST, −6
    ['2026-07-02T10:10:30', 'America/Chicago', '2026-07-02T15:10:30.000Z'], // CDT, −5
    ['2026-03-08T01:59:59', 'America/Chicago', '2026-03-08T07:59:59.000Z'], // the last second before spring forward
    ['2026-03-08T03:00:00', 'America/Chicago', '2026-03-08T08:00:00.000Z'],
    ['2026-11-01T01:30:00', 'America/Chicago', '2026-11-01T06:30:00.000Z'], // repeated: the first (CDT) one
    ['2026-10-25T02:30', 'Europe/Berlin', '2026-10-25T00:30:00.000Z'], // repeated: the first (CEST) one
    ['2026-10-04T02:30', 'Australia/Lord_Howe', '2026-10-03T15:30:00.000Z'], // a half-hour DST change
    ['0050-06-01T10:00:00', 'America/Chicago', '0050-06-01T15:50:36.000Z'], // a real year 50, local mean time
    ['0001-01-01T00:00', 'UTC', '0001-01-01T00:00:00.000Z'],
  ])('%s in %s is %s, and reads back', (wall, zone, instant) => {
    expect(instantOfWallTime(wall, zone)).toEqual({ instant });
    expect(wallTimeOf(instant, zone)).toBe(wall.length === 16 ? `${wall}:00` : wall);
  });

  it('refuses a time the clocks skipped, and what is not a wall time', () => {
    expect(instantOfWallTime('2026-03-08T02:30:00', 'America/Chicago')).toEqual({ refused: 'skipped' });
    expect(instantOfWallTime('2026-03-29T02:00', 'Europe/Berlin')).toEqual({ refused: 'skipped' });
    expect(instantOfWallTime('2026-02-30T10:00', 'America/Chicago')).toEqual({ refused: 'invalid' });
    expect(instantOfWallTime('2026-03-02T10:10:00Z', 'America/Chicago')).toEqual({ refused: 'invalid' });
  });

  it("writes a local year before 0000 in ISO 8601's expanded form", () => {
    expect(wallTimeOf('0000-01-01T00:00:00.000Z', 'America/Chicago')).toBe('-000001-12-31T18:09:24');
  });
});
