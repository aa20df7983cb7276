import { describe, expect, it } from 'vitest';

import { haversineMiles } from '../../src/geo/index.js';

const dallas = { latitude: 32.7767, longitude: -96.797 };
const chicago = { latitude: 41.8781, longitude: -87.6298 };

describe('haversineMiles', () => {
  it('measures great-circle statute miles', () => {
    // Dallas to Chicago: 804.6 mi on a sphere of mean Earth radius (ellipsoid: 803.0 mi).
    expect(haversineMiles(dallas, chicago)).toBeCloseTo(804.65, 1);
    // One degree of latitude: 69.09 mi.
    expect(haversineMiles({ latitude: 0, longitude: 0 }, { latitude: 1, longitude: 0 })).toBeCloseTo(69.09, 2);
    // Los Angeles to New York: about 2,450 mi.
    expect(haversineMiles({ latitude: 34.0522, longitude: -118.2437 }, { latitude: 40.7128, longitude: -74.006 })).toBeCloseTo(2445.6, 0);
  });

  it('is zero for the same point and symmetric', () => {
    expect(haversineMiles(dallas, dallas)).toBe(0);
    expect(haversineMiles(dallas, chicago)).toBe(haversineMiles(chicago, dallas));
  });

  it('stays finite for antipodal points and across the antimeridian', () => {
    expect(haversineMiles({ latitude: 0, longitude: 0 }, { latitude: 0, longitude: 180 })).toBeCloseTo(Math.PI * 3958.7613, 6);
    expect(haversineMiles({ latitude: 52, longitude: 179.5 }, { latitude: 52, longitude: -179.5 })).toBeCloseTo(42.5, 0);
  });
});
