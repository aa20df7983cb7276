import { describe, expect, it } from 'vitest';
import { isIsoTimestamp, isOutOfRangeTimestamp, parseIsoTimestamp, parseLocalTimestamp } from '../../src/lib/time.js';

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
    expect(parseLocalTimestamp('9999-12-31T23:00:00', 'America/Chicago')).toBeNull();
    expect(parseLocalTimestamp('9999-12-31T12:00:00', 'America/Chicago')).toBe('9999-12-31T18:00:00.000Z');
  });
});
