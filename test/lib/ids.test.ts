import { describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';

describe('ids', () => {
  it('sort in the order they were made, also within one millisecond', () => {
    const made = Array.from({ length: 5000 }, () => newId('loc'));
    const sorted = [...made].sort();
    expect(sorted).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
    // ULID layout: kind, 10 time characters, 16 random ones, Crockford base32 in lower case.
    for (const id of made.slice(0, 10)) expect(id).toMatch(/^loc_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it('carry the given time when one is given, without disturbing the sequence', () => {
    const first = newId('load');
    const old = newId('load', Date.UTC(2024, 0, 1));
    const next = newId('load');
    expect(old < first).toBe(true);
    expect(next > first).toBe(true);
    expect(newId('load', Date.UTC(2024, 0, 1)).slice(0, 15)).toBe(old.slice(0, 15));
  });
});
