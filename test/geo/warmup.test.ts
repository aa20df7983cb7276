import { describe, expect, it } from 'vitest';

import { timezoneAt, warmup } from '../../src/geo/index.js';

describe('warmup', () => {
  it('loads every data set and reports what it loaded', () => {
    const summary = warmup();
    expect(summary.subdivisions).toBe(102); // US 50 + DC + 6 territories, CA 13, MX 32
    expect(summary.boundaryVertices).toBeGreaterThan(100_000);
    expect(summary.usZipCodes).toBeGreaterThan(41_000);
    expect(summary.canadianFsas).toBeGreaterThan(1_600);
    expect(timezoneAt(39.1, -94.58)).toBe('America/Chicago');
    expect(summary.milliseconds).toBeGreaterThanOrEqual(0);
  });

  it('is cheap the second time, the data being kept', () => {
    warmup();
    expect(warmup().milliseconds).toBeLessThan(50);
  });
});
