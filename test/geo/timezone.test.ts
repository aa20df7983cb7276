import { describe, expect, it } from 'vitest';

import { timezoneAt } from '../../src/geo/index.js';
import { BoundedTileCache } from '../../src/geo/timezone.js';

describe('timezoneAt', () => {
  const places: Array<[string, number, number, string]> = [
    ['Dallas', 32.7767, -96.797, 'America/Chicago'],
    ['Los Angeles', 34.0522, -118.2437, 'America/Los_Angeles'],
    ['Denver', 39.7392, -104.9903, 'America/Denver'],
    ['Phoenix (no daylight saving time)', 33.4484, -112.074, 'America/Phoenix'],
    ['Detroit', 42.3314, -83.0458, 'America/Detroit'],
    ['Indianapolis', 39.7684, -86.1581, 'America/Indiana/Indianapolis'],
    ['Gary, Indiana (Central time)', 41.5934, -87.3464, 'America/Chicago'],
    ['Louisville', 38.2527, -85.7585, 'America/Kentucky/Louisville'],
    ['Boise', 43.615, -116.2023, 'America/Boise'],
    ['El Paso (Mountain time in Texas)', 31.78, -106.45, 'America/Denver'],
    ['Phenix City, Alabama (Eastern time in Alabama)', 32.4709, -85.0008, 'America/New_York'],
    ['Anchorage', 61.2181, -149.9003, 'America/Anchorage'],
    ['Honolulu', 21.3069, -157.8583, 'Pacific/Honolulu'],
    ['San Juan', 18.4655, -66.1057, 'America/Puerto_Rico'],
    ['Toronto', 43.6532, -79.3832, 'America/Toronto'],
    ['Kenora, Ontario (Central time in Ontario)', 49.767, -94.489, 'America/Winnipeg'],
    ['Regina', 50.4452, -104.6189, 'America/Regina'],
    ['Halifax', 44.6488, -63.5752, 'America/Halifax'],
    ["St. John's", 47.5615, -52.7126, 'America/St_Johns'],
    ['Mexico City', 19.4326, -99.1332, 'America/Mexico_City'],
    ['Cancun', 21.1619, -86.8515, 'America/Cancun'],
    ['Tijuana', 32.5149, -117.0382, 'America/Tijuana'],
    ['Ciudad Juarez', 31.69, -106.4245, 'America/Ciudad_Juarez'],
  ];
  it.each(places.map(([place, latitude, longitude, zone]) => ({ place, latitude, longitude, zone })))('$place is $zone', ({ latitude, longitude, zone }) => {
    expect(timezoneAt(latitude, longitude)).toBe(zone);
  });

  it('gives the nautical zone at sea', () => {
    expect(timezoneAt(35, -50)).toBe('Etc/GMT+3');
  });

  it('returns null for invalid coordinates', () => {
    expect(timezoneAt(91, 0)).toBeNull();
    expect(timezoneAt(0, -181)).toBeNull();
    expect(timezoneAt(Number.NaN, 0)).toBeNull();
  });
});

describe('BoundedTileCache', () => {
  const tile = (vertices: number): unknown => ({
    features: [{ geometry: { type: 'Polygon', coordinates: [Array.from({ length: vertices }, () => [0, 0])] } }],
  });

  it('drops the least recently used tiles once over its vertex budget', () => {
    const cache = new BoundedTileCache(100);
    cache.set('a', tile(40));
    cache.set('b', tile(40));
    expect(cache.get('a')).toBeDefined(); // a is now the most recently used
    cache.set('c', tile(40));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('c')).toBeDefined();
    expect(cache.size).toBe(2);
    expect(cache.vertexCount).toBe(80);
  });

  it('keeps a single tile larger than the budget until the next one comes', () => {
    const cache = new BoundedTileCache(10);
    cache.set('big', tile(50));
    expect(cache.get('big')).toBeDefined();
    cache.set('small', tile(5));
    expect(cache.get('big')).toBeUndefined();
    expect(cache.vertexCount).toBe(5);
  });
});
