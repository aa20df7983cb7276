import { haversineMiles } from '../geo/distance.js';

/**
 * A coarse spatial key for lane history: 1-degree cells. A 100-mile neighbourhood spans a handful of
 * cells, so a lane query reads the history near the lane through an index instead of scanning it all.
 */
export const CELL_DEGREES = 1;
const COLUMNS = 360 / CELL_DEGREES;
const MILES_PER_DEGREE_LAT = 69.05;

export function cellOf(latitude: number, longitude: number): number {
  const row = Math.floor((Math.min(latitude, 89.9999) + 90) / CELL_DEGREES);
  const col = Math.floor(((((longitude + 180) % 360) + 360) % 360) / CELL_DEGREES);
  return row * COLUMNS + col;
}

/** The centre of a grid cell (cells are CELL_DEGREES squares numbered row by row from -90/-180). */
export function cellCentre(cell: number): { latitude: number; longitude: number } {
  return { latitude: Math.floor(cell / COLUMNS) * CELL_DEGREES - 90 + CELL_DEGREES / 2, longitude: (cell % COLUMNS) * CELL_DEGREES - 180 + CELL_DEGREES / 2 };
}

/** Cells and ellipses are trimmed only for places whose neighbourhood stays within this latitude. */
const TRIM_UP_TO_LATITUDE = 70;

/**
 * The great-circle miles from a point to the nearest point of a cell (its latitude and longitude
 * clamped to the cell's). On a sphere the clamped point can lie a little farther than the true nearest
 * one (by about 0.03% at 250 miles), so callers keep a margin.
 */
function milesToCell(latitude: number, longitude: number, cell: number): number {
  const south = Math.floor(cell / COLUMNS) * CELL_DEGREES - 90;
  const west = (cell % COLUMNS) * CELL_DEGREES - 180;
  const nearLat = Math.min(Math.max(latitude, south), south + CELL_DEGREES);
  // How far east of the cell's west edge the point lies, in [0, 360): inside, or nearer one edge.
  const east = (((longitude - west) % 360) + 360) % 360;
  const nearLon = east <= CELL_DEGREES ? longitude : east - CELL_DEGREES < 360 - east ? west + CELL_DEGREES : west;
  return haversineMiles({ latitude, longitude }, { latitude: nearLat, longitude: nearLon });
}

/**
 * Every cell that holds a point within `miles` of the given one (a superset: callers filter exactly).
 * The cells of the bounding box, less its corners that lie wholly farther away (below 70° of latitude) (a lane read seeks each
 * pair of origin and destination cells: about 340 pairs at 100 miles from the box, about 200 without
 * its corners).
 */
export function cellsWithin(latitude: number, longitude: number, miles: number): number[] {
  const dLat = miles / MILES_PER_DEGREE_LAT;
  const minLat = Math.max(-90, latitude - dLat);
  const maxLat = Math.min(89.9999, latitude + dLat);
  // Longitude degrees shrink towards the poles: use the widest span over the latitude band.
  const widestCos = Math.max(Math.cos((Math.max(Math.abs(minLat), Math.abs(maxLat)) * Math.PI) / 180), 0.01);
  const dLon = Math.min(180, miles / (MILES_PER_DEGREE_LAT * widestCos));
  const cells = new Set<number>();
  for (let lat = minLat; ; lat = Math.min(lat + CELL_DEGREES, maxLat)) {
    for (let lon = longitude - dLon; ; lon = Math.min(lon + CELL_DEGREES, longitude + dLon)) {
      cells.add(cellOf(lat, lon));
      if (lon >= longitude + dLon) break;
    }
    if (lat >= maxLat) break;
  }
  // Near the poles the clamped point is no longer close to the nearest one (meridians converge): there
  // the box's cells are kept whole.
  if (Math.max(Math.abs(minLat), Math.abs(maxLat)) > TRIM_UP_TO_LATITUDE) return [...cells];
  const reach = miles * 1.01 + 1;
  return [...cells].filter((c) => milesToCell(latitude, longitude, c) <= reach);
}

/** A latitude/longitude box that holds every point within `miles` (callers still filter exactly). */
export function boxWithin(latitude: number, longitude: number, miles: number) {
  const dLat = miles / MILES_PER_DEGREE_LAT;
  const widestCos = Math.max(Math.cos((Math.min(89.9, Math.abs(latitude) + dLat) * Math.PI) / 180), 0.01);
  const dLon = Math.min(180, miles / (MILES_PER_DEGREE_LAT * widestCos));
  return { minLat: latitude - dLat, maxLat: latitude + dLat, minLon: longitude - dLon, maxLon: longitude + dLon };
}

/**
 * An ellipse in degrees around a point that holds every point within `miles` of it, for a condition a
 * database checks with plain arithmetic: (Δlat)² × latScale2 + (Δlon)² × lonScale2 ≤ reach2. The scales
 * are a little under the miles in a degree (longitude's at the band's widest latitude) and the reach a
 * little over the radius, so it is a superset (callers filter exactly); it leaves out the box's corners,
 * which hold about a fifth of the box. None (undefined) for a neighbourhood reaching past 70° of latitude.
 */
export interface Near {
  latitude: number;
  longitude: number;
  latScale2: number;
  lonScale2: number;
  reach2: number;
}

// Miles in a degree of a great circle on the haversine's sphere (3,958.76 mi) are 69.09: a little under.
const MILES_PER_DEGREE_LOW = 69.0;

export function nearWithin(latitude: number, longitude: number, miles: number): Near | undefined {
  const farthest = Math.abs(latitude) + miles / MILES_PER_DEGREE_LAT;
  // Near the poles a degree of longitude shrinks across the neighbourhood and great circles cross the pole: no ellipse.
  if (farthest > TRIM_UP_TO_LATITUDE) return undefined;
  const lonScale = MILES_PER_DEGREE_LOW * Math.max(Math.cos((farthest * Math.PI) / 180), 0.01);
  return { latitude, longitude, latScale2: MILES_PER_DEGREE_LOW ** 2, lonScale2: lonScale ** 2, reach2: (miles * 1.02 + 1) ** 2 };
}
