import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cellOf, cellsWithin, nearWithin, type Near } from '../../src/domain/grid.js';
import { haversineMiles } from '../../src/geo/distance.js';

// The lane reads seek every pair of origin and destination cells cellsWithin names: a cell left out that
// holds a point within the radius would drop history rows from a lane (a wrong score), one kept that
// cannot hold such a point only costs seeks.

/** The ellipse's condition as the database checks it (src/lib/db/lane-area.ts, nearEnds). */
function mayBeWithin(n: Near, latitude: number, longitude: number): boolean {
  return (latitude - n.latitude) * (latitude - n.latitude) * n.latScale2 + (longitude - n.longitude) * (longitude - n.longitude) * n.lonScale2 <= n.reach2;
}

/** The point `miles` from (lat, lon) along `bearing` degrees (great circle). */
function destination(lat: number, lon: number, bearing: number, miles: number) {
  const rad = Math.PI / 180;
  const d = miles / 3958.7613;
  const φ1 = lat * rad;
  const λ1 = lon * rad;
  const θ = bearing * rad;
  const φ2 = Math.asin(Math.sin(φ1) * Math.cos(d) + Math.cos(φ1) * Math.sin(d) * Math.cos(θ));
  const λ2 = λ1 + Math.atan2(Math.sin(θ) * Math.sin(d) * Math.cos(φ1), Math.cos(d) - Math.sin(φ1) * Math.sin(φ2));
  return { latitude: φ2 / rad, longitude: ((((λ2 / rad + 180) % 360) + 360) % 360) - 180 };
}

/**
 * For random centres, radii and points within the radius (anywhere inside, and many near the edge, where
 * a cell or an ellipse wrongly cut short would show), `holds(lat, lon, miles, point)` is true.
 */
function everyPointWithin(lonRange: number, holds: (lat: number, lon: number, miles: number, p: { latitude: number; longitude: number }) => boolean) {
  fc.assert(
    fc.property(
      fc.double({ min: -89, max: 89, noNaN: true }),
      fc.double({ min: -lonRange, max: lonRange - 0.001, noNaN: true }),
      fc.constantFrom(25, 50, 100, 150, 250, 330),
      fc.array(
        fc.tuple(
          fc.double({ min: 0, max: 360, noNaN: true }),
          fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0.97, max: 1, noNaN: true })),
        ),
        { minLength: 1, maxLength: 60 },
      ),
      (lat, lon, miles, probes) => {
        // A neighbourhood holding a pole is left aside: the box's longitudes are capped there (as before
        // the corners were trimmed), and no freight lane starts within miles of a pole.
        fc.pre(90 - Math.abs(lat) > miles / 69.05 + 0.1);
        for (const [bearing, share] of probes) {
          const p = destination(lat, lon, bearing, miles * share);
          if (haversineMiles({ latitude: lat, longitude: lon }, p) > miles) continue;
          expect(holds(lat, lon, miles, p), `${lat},${lon} ${miles} mi: ${JSON.stringify(p)} at ${bearing}°`).toBe(true);
        }
      },
    ),
    { numRuns: 400 },
  );
}

describe('cellsWithin', () => {
  it('names the cell of every point within the radius (random centres, radii and points, the antimeridian included)', () => {
    everyPointWithin(180, (lat, lon, miles, p) => cellsWithin(lat, lon, miles).includes(cellOf(p.latitude, p.longitude)));
  });

  it('names every cell a point at the radius itself lies in (the edge of the circle, all round)', () => {
    for (const [lat, lon, miles] of [
      [32.78, -96.8, 100],
      [47.61, -122.33, 100],
      [25.76, -80.19, 100],
      [0.5, 179.6, 100],
      [-33.9, 151.2, 100],
      [64.8, -147.7, 100],
      [80.25, -150.2, 250],
      [84.2, 10, 150],
      [86.6, -40, 100],
      [-88.9, 120, 250],
    ] as const) {
      const cells = new Set(cellsWithin(lat, lon, miles));
      for (let bearing = 0; bearing < 360; bearing += 0.5) {
        const p = destination(lat, lon, bearing, miles - 0.001);
        expect(cells.has(cellOf(p.latitude, p.longitude)), `${lat},${lon} bearing ${bearing}`).toBe(true);
      }
    }
  });

  it('leaves out the corners of the bounding box that lie wholly beyond the radius', () => {
    // Dallas at 100 miles: a box of 4 × 5 cells around it; its far corners hold no point within 100 miles.
    const cells = cellsWithin(32.78, -96.8, 100);
    const box = new Set<number>();
    for (let lat = 32.78 - 1.45; lat <= 32.78 + 1.45 + 1; lat += 1)
      for (let lon = -96.8 - 1.73; lon <= -96.8 + 1.73 + 1; lon += 1) box.add(cellOf(Math.min(lat, 34.23), Math.min(lon, -95.07)));
    expect(cells.length).toBeLessThan(box.size);
    for (const c of cells) expect(box.has(c)).toBe(true);
    // The cell 2 degrees south-west of the centre's cell: its nearest corner is about 130 miles away.
    expect(cells).not.toContain(cellOf(30.5, -98.5));
    expect(cells).toContain(cellOf(32.78, -96.8));
  });
});

describe('nearWithin', () => {
  it('holds every point within the radius (random centres and radii, points near the edge), and leaves the far corners out', () => {
    everyPointWithin(170, (lat, lon, miles, p) => {
      const near = nearWithin(lat, lon, miles);
      return !near || mayBeWithin(near, p.latitude, p.longitude);
    });
    for (const [lat, lon] of [
      [32.78, -96.8],
      [47.61, -122.33],
      [64.8, -147.7],
      [-33.9, 151.2],
    ] as const) {
      const near = nearWithin(lat, lon, 100)!;
      for (let bearing = 0; bearing < 360; bearing += 0.5) {
        const edge = destination(lat, lon, bearing, 99.999);
        expect(mayBeWithin(near, edge.latitude, edge.longitude), `${lat},${lon} bearing ${bearing}`).toBe(true);
        // 40% beyond the radius: outside (the condition cuts the box's corners and everything else far).
        const far = destination(lat, lon, bearing, 140);
        expect(mayBeWithin(near, far.latitude, far.longitude), `${lat},${lon} bearing ${bearing} at 140 mi`).toBe(false);
      }
    }
  });
});

it('near the poles neither is trimmed: the whole box, no ellipse', () => {
  expect(nearWithin(80.25, -150.2, 250)).toBeUndefined();
  expect(nearWithin(69, 20, 100)).toBeUndefined();
  expect(nearWithin(60, 20, 100)).toBeDefined();
});
