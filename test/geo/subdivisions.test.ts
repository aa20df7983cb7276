import { readFileSync } from 'node:fs';

import whichPolygon from 'which-polygon';
import { describe, expect, it } from 'vitest';

import { COASTAL_SEARCH_RADIUS_KM, locateSubdivision, subdivisionAt } from '../../src/geo/index.js';

describe('subdivisionAt on both sides of state and national lines', () => {
  // Each point lies at least 1 km from the line, inside the named city.
  const pairs: Array<[string, number, number, string]> = [
    ['Kansas City, Missouri', 39.0997, -94.5786, 'US-MO'],
    ['Kansas City, Kansas', 39.1141, -94.6275, 'US-KS'],
    ['Texarkana, Texas', 33.43, -94.07, 'US-TX'],
    ['Texarkana, Arkansas', 33.44, -94.02, 'US-AR'],
    ['Windsor, Ontario', 42.3, -83.01, 'CA-ON'],
    ['Detroit, Michigan', 42.3314, -83.0458, 'US-MI'],
    ['El Paso, Texas', 31.78, -106.45, 'US-TX'],
    ['Ciudad Juarez, Chihuahua', 31.7, -106.43, 'MX-CHH'],
    ['Jersey City, New Jersey', 40.7178, -74.0431, 'US-NJ'],
    ['New York (Midtown Manhattan)', 40.7549, -73.984, 'US-NY'],
    ['San Diego (San Ysidro), California', 32.555, -117.04, 'US-CA'],
    ['Tijuana, Baja California', 32.5, -117.03, 'MX-BCN'],
  ];
  it.each(pairs.map(([place, latitude, longitude, expected]) => ({ place, latitude, longitude, expected })))(
    '$place is $expected',
    ({ latitude, longitude, expected }) => {
      expect(subdivisionAt(latitude, longitude)).toBe(expected);
      expect(subdivisionAt(latitude, longitude, expected.slice(0, 2))).toBe(expected);
      expect(locateSubdivision(latitude, longitude)?.distanceKm).toBe(0);
    },
  );
});

describe('subdivisionAt, Natural Earth quirks', () => {
  it('codes Mexico City MX-CMX, not MX-DIF', () => {
    expect(locateSubdivision(19.4326, -99.1332)).toEqual({ code: 'MX-CMX', country: 'MX', name: 'Ciudad de México', distanceKm: 0 });
  });

  it('codes Puerto Rico US-PR, with country US or PR', () => {
    expect(subdivisionAt(18.4655, -66.1057)).toBe('US-PR');
    expect(subdivisionAt(18.4655, -66.1057, 'US')).toBe('US-PR');
    expect(subdivisionAt(18.4655, -66.1057, 'pr')).toBe('US-PR');
    expect(subdivisionAt(41.8781, -87.6298, 'PR')).toBeNull();
  });

  it('codes the other territories as US subdivisions', () => {
    expect(subdivisionAt(13.4443, 144.7937)).toBe('US-GU');
    expect(subdivisionAt(18.3419, -64.9307)).toBe('US-VI');
  });

  it('resolves Alaska, Hawaii and the Aleutians west of 180', () => {
    expect(subdivisionAt(61.2181, -149.9003)).toBe('US-AK');
    expect(subdivisionAt(21.3069, -157.8583)).toBe('US-HI');
    expect(subdivisionAt(52.85, 173.2)).toBe('US-AK'); // Attu Island
  });

  it('resolves every Canadian capital and Mexican state capital sampled', () => {
    expect(subdivisionAt(43.6532, -79.3832)).toBe('CA-ON');
    expect(subdivisionAt(45.5017, -73.5673)).toBe('CA-QC');
    expect(subdivisionAt(49.2827, -123.1207)).toBe('CA-BC');
    expect(subdivisionAt(63.7467, -68.517)).toBe('CA-NU'); // Iqaluit
    expect(subdivisionAt(62.454, -114.3718)).toBe('CA-NT');
    expect(subdivisionAt(60.7212, -135.0568)).toBe('CA-YT');
    expect(subdivisionAt(25.6866, -100.3161)).toBe('MX-NLE');
    expect(subdivisionAt(20.6597, -103.3496)).toBe('MX-JAL');
    expect(subdivisionAt(21.1619, -86.8515)).toBe('MX-ROO');
  });
});

describe('subdivisionAt just off a simplified coastline', () => {
  // Real places that Natural Earth's 10m coastline leaves in the water (distanceKm > 0).
  const coastal: Array<[string, number, number, string]> = [
    ['Miami Beach, FL (ZIP 33139)', 25.7873, -80.1564, 'US-FL'],
    ['South Padre Island, TX', 26.1, -97.165, 'US-TX'],
    ['Tangier Island, VA (ZIP 23440), near the Maryland line', 37.8245, -75.993, 'US-VA'],
    ['Matinicus Isle, ME (ZIP 04851)', 43.8651, -68.887, 'US-ME'],
    ['Niihau, HI (ZIP 96769)', 21.9454, -159.9214, 'US-HI'],
    ['Far Rockaway, NY (ZIP 11693)', 40.6076, -73.8198, 'US-NY'],
    ['Vieques, PR (ZIP 00741)', 18.15, -65.76, 'US-PR'],
    ['Halifax, NS', 44.65, -63.57, 'CA-NS'],
    ['Cancun hotel zone, Quintana Roo', 21.135, -86.745, 'MX-ROO'],
    ['Ensenada port, Baja California', 31.85, -116.63, 'MX-BCN'],
  ];
  it.each(coastal.map(([place, latitude, longitude, expected]) => ({ place, latitude, longitude, expected })))(
    '$place is $expected',
    ({ latitude, longitude, expected }) => {
      const located = locateSubdivision(latitude, longitude);
      expect(located?.code).toBe(expected);
      expect(located?.distanceKm).toBeGreaterThan(0);
      expect(located?.distanceKm).toBeLessThanOrEqual(COASTAL_SEARCH_RADIUS_KM);
      expect(subdivisionAt(latitude, longitude, expected.slice(0, 2))).toBe(expected);
    },
  );

  it('gives up in open water', () => {
    expect(subdivisionAt(40.0, -72.5)).toBeNull(); // 60 km off Long Island
    expect(subdivisionAt(25.0, -90.0)).toBeNull(); // Gulf of Mexico
    expect(subdivisionAt(35.0, -50.0)).toBeNull(); // mid-Atlantic
  });

  it('honours a smaller search radius', () => {
    expect(locateSubdivision(43.8651, -68.887, { maxDistanceKm: 5 })).toBeNull();
    expect(locateSubdivision(43.8651, -68.887, { maxDistanceKm: 25 })?.code).toBe('US-ME');
  });
});

describe('subdivisionAt with a country', () => {
  it('does not move a point deep in another country across the border', () => {
    expect(subdivisionAt(42.29, -83.0, 'US')).toBeNull(); // Windsor
    expect(subdivisionAt(31.69, -106.4245, 'US')).toBeNull(); // Ciudad Juarez
    expect(subdivisionAt(42.29, -83.0, 'CA')).toBe('CA-ON');
  });

  it('snaps a point that the 10m border puts a few hundred metres into the neighbour', () => {
    // ZIP 78045 (Laredo, TX) lies just south of Natural Earth's Rio Grande line.
    expect(subdivisionAt(27.6357, -99.5923)).toBe('MX-TAM');
    const located = locateSubdivision(27.6357, -99.5923, { country: 'US' });
    expect(located?.code).toBe('US-TX');
    expect(located?.distanceKm).toBeLessThan(1);
  });

  it('returns null for countries without polygons and for invalid input', () => {
    expect(subdivisionAt(52.52, 13.405, 'DE')).toBeNull();
    expect(subdivisionAt(41.8781, -87.6298, 'USA')).toBeNull();
    expect(subdivisionAt(91, 0)).toBeNull();
    expect(subdivisionAt(0, 181)).toBeNull();
    expect(subdivisionAt(Number.NaN, -87)).toBeNull();
  });
});

describe('polygon index', () => {
  it('answers exactly like an index over the uncut polygons', () => {
    // The runtime cuts large polygons into small pieces for speed; this checks the cut against
    // which-polygon over the committed polygons as they are, on random points near North America.
    const collection = JSON.parse(
      readFileSync(new URL('../../src/geo/data/admin1-us-ca-mx.geojson', import.meta.url), 'utf8'),
    ) as whichPolygon.FeatureCollection<{ code: string }>;
    const uncut = whichPolygon(collection);
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    let mismatches = 0;
    let inside = 0;
    for (let i = 0; i < 100_000; i++) {
      const latitude = 14 + random() * 58;
      const longitude = -170 + random() * 118;
      const expected = uncut([longitude, latitude])?.code ?? null;
      const located = locateSubdivision(latitude, longitude);
      const actual = located && located.distanceKm === 0 ? located.code : null;
      if (actual !== expected) mismatches++;
      if (expected) inside++;
    }
    expect(inside).toBeGreaterThan(30_000);
    expect(mismatches).toBe(0);
  });
});
