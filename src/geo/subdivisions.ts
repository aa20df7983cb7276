import { lazy, readDataFile } from './data-files.js';
import { normalizeCountry, subdivisionName, US_TERRITORY_COUNTRIES } from './iso3166.js';

/**
 * How far from a polygon a point may lie and still be given that polygon's subdivision. Natural
 * Earth's 10m coastline is simplified: ports, piers, barrier islands and ZIP centres on the shore
 * fall up to a few km into the "sea". 20 km covers them without reaching across open water.
 */
export const COASTAL_SEARCH_RADIUS_KM = 20;

/**
 * A point inside another country's polygon is only given a subdivision of the requested country
 * when that country's border is this close: about the positional accuracy of the 10m borders
 * along rivers (Rio Grande, Detroit River). Farther in, the coordinates and the country disagree.
 */
export const CROSS_BORDER_TOLERANCE_KM = 1;

/** Countries with subdivision polygons (US includes its territories). */
export const COUNTRIES_WITH_POLYGONS: ReadonlySet<string> = new Set(['US', 'CA', 'MX', ...US_TERRITORY_COUNTRIES]);

export interface SubdivisionLocation {
  /** ISO 3166-2 code, e.g. US-TX. */
  code: string;
  /** ISO 3166-1 alpha-2 of the subdivision's country: US (territories included), CA or MX. */
  country: string;
  name: string;
  /** 0 when the point is inside the subdivision's polygon; otherwise the km to its nearest edge. */
  distanceKm: number;
}

export interface LocateSubdivisionOptions {
  /** Only subdivisions of this country count (US territories as countries, e.g. PR, mean US-PR). */
  country?: string | null;
  /** Largest distance to a polygon for points in no polygon. Default COASTAL_SEARCH_RADIUS_KM. */
  maxDistanceKm?: number;
}

interface SubdivisionProperties {
  code: string;
  country: string;
}

type Position = [number, number];

interface BoundaryIndex {
  codes: SubdivisionProperties[];
  /** Every boundary vertex as lon, lat pairs; rings stored one after another. */
  vertices: Float64Array;
  /** Code index of the segment starting at vertex i; -1 where i ends a ring (no segment). */
  segmentCode: Int16Array;
  /** Polygon (one part of a feature's MultiPolygon) of the segment starting at vertex i; -1 where i ends a ring. */
  segmentPolygon: Int32Array;
  /** Code index of each polygon. */
  polygonCode: Int16Array;
  /** Grid cell (GRID_CELLS_PER_DEGREE) → starting vertices of the segments that touch it. */
  segmentsByCell: Map<number, Int32Array>;
  /** Grid row (latitude index) → the longitude indexes of its cells that have segments, ascending. */
  cellsByRow: Map<number, Int32Array>;
}

const GRID_CELLS_PER_DEGREE = 4;
const KM_PER_DEGREE_LATITUDE = 110.574;
const KM_PER_DEGREE_LONGITUDE_AT_EQUATOR = 111.32;

// Cell keys: a row's 1,440 cells under one key stride (latitude index × CELLS_PER_ROW_KEY + longitude index).
const CELLS_PER_ROW_KEY = 2048;
function cellKey(latIndex: number, lonIndex: number): number {
  return latIndex * CELLS_PER_ROW_KEY + lonIndex;
}
function latIndexOf(lat: number): number {
  return Math.floor((lat + 90) * GRID_CELLS_PER_DEGREE);
}
function lonIndexOf(lon: number): number {
  return Math.floor((lon + 180) * GRID_CELLS_PER_DEGREE);
}

interface SubdivisionFeatureCollection {
  type: 'FeatureCollection';
  features: Array<{
    type: 'Feature';
    properties: { code: string };
    geometry: { type: 'MultiPolygon'; coordinates: Position[][][] };
  }>;
}

const boundaryIndex = lazy((): BoundaryIndex => {
  // Parsed, read into flat arrays and dropped: nested coordinate arrays kept for a point-in-polygon
  // library (which-polygon, over the polygons cut into pieces) held about 17 MB of heap for the life of
  // the process, and building them left about 20 MB more of freed pages resident (docs/geo.md).
  const collection = JSON.parse(readDataFile('admin1-us-ca-mx.geojson')) as SubdivisionFeatureCollection;
  const codes: SubdivisionProperties[] = [];
  let vertexCount = 0;
  let polygonCount = 0;
  for (const feature of collection.features) {
    for (const polygon of feature.geometry.coordinates) {
      polygonCount++;
      for (const ring of polygon) vertexCount += ring.length;
    }
  }
  const vertices = new Float64Array(vertexCount * 2);
  const segmentCode = new Int16Array(vertexCount).fill(-1);
  const segmentPolygon = new Int32Array(vertexCount).fill(-1);
  const polygonCode = new Int16Array(polygonCount);
  let v = 0;
  let polygonIndex = 0;
  for (const feature of collection.features) {
    const codeIndex = codes.push({ code: feature.properties.code, country: feature.properties.code.slice(0, 2) }) - 1;
    for (const polygon of feature.geometry.coordinates) {
      polygonCode[polygonIndex] = codeIndex;
      for (const ring of polygon) {
        const ringStart = v;
        for (const [lon, lat] of ring) {
          vertices[2 * v] = lon;
          vertices[2 * v + 1] = lat;
          v++;
        }
        // Segment i runs from vertex i to i + 1; rings are closed, so the last vertex starts none.
        for (let i = ringStart; i < v - 1; i++) {
          segmentCode[i] = codeIndex;
          segmentPolygon[i] = polygonIndex;
        }
      }
      polygonIndex++;
    }
  }
  // The cells each segment's box touches: counted, then filled (a typed array per cell, no lists).
  const cellsOf = (i: number, visit: (key: number) => void) => {
    const lon1 = vertices[2 * i]!;
    const lat1 = vertices[2 * i + 1]!;
    const lon2 = vertices[2 * i + 2]!;
    const lat2 = vertices[2 * i + 3]!;
    const latHi = latIndexOf(Math.max(lat1, lat2));
    const lonHi = lonIndexOf(Math.max(lon1, lon2));
    for (let a = latIndexOf(Math.min(lat1, lat2)); a <= latHi; a++) for (let b = lonIndexOf(Math.min(lon1, lon2)); b <= lonHi; b++) visit(cellKey(a, b));
  };
  const counts = new Map<number, number>();
  for (let i = 0; i < vertexCount; i++) if (segmentCode[i]! >= 0) cellsOf(i, (key) => counts.set(key, (counts.get(key) ?? 0) + 1));
  const segmentsByCell = new Map<number, Int32Array>();
  const filled = new Map<number, number>();
  for (const [key, n] of counts) {
    segmentsByCell.set(key, new Int32Array(n));
    filled.set(key, 0);
  }
  for (let i = 0; i < vertexCount; i++) {
    if (segmentCode[i]! < 0) continue;
    cellsOf(i, (key) => {
      const at = filled.get(key)!;
      segmentsByCell.get(key)![at] = i;
      filled.set(key, at + 1);
    });
  }
  const rows = new Map<number, number[]>();
  for (const key of segmentsByCell.keys()) {
    const row = Math.floor(key / CELLS_PER_ROW_KEY);
    const list = rows.get(row);
    if (list) list.push(key - row * CELLS_PER_ROW_KEY);
    else rows.set(row, [key - row * CELLS_PER_ROW_KEY]);
  }
  const cellsByRow = new Map<number, Int32Array>();
  for (const [row, list] of rows) cellsByRow.set(row, Int32Array.from(list).sort());
  return { codes, vertices, segmentCode, segmentPolygon, polygonCode, segmentsByCell, cellsByRow };
});

/**
 * The subdivision whose polygon contains the point, or null: the even-odd ray test per polygon, with a
 * horizontal ray along the point's grid row (only that row's cells on one side of the point are read).
 * It is which-polygon's test to the bit: the same crossing condition and arithmetic, each segment taken
 * from its ring's later vertex to the earlier one, as which-polygon walks a ring, and a crossing east of
 * the point when `longitude < x`. The ray goes to the side with fewer cells: a closed ring crosses the
 * row's line an even number of times (the condition compares latitudes only, without arithmetic), so the
 * crossings with `!(longitude < x)` have the same parity as those east of it. A crossing is counted
 * once, in the cell of the row where it lies (clamped to the cells of the segment's box). No two
 * polygons of the data overlap; if two contained a point, the first in the file would be answered.
 */
function containingSubdivision(index: BoundaryIndex, latitude: number, longitude: number): SubdivisionProperties | null {
  const row = latIndexOf(latitude);
  const columns = index.cellsByRow.get(row);
  if (!columns) return null;
  const { vertices, segmentPolygon, segmentsByCell, polygonCode, codes } = index;
  const here = lonIndexOf(longitude);
  // East: the point's cell and beyond, and one cell back (a crossing clamped there); west: up to one cell ahead.
  let eastFrom = 0;
  while (eastFrom < columns.length && columns[eastFrom]! < here - 1) eastFrom++;
  let westTo = eastFrom;
  while (westTo < columns.length && columns[westTo]! <= here + 1) westTo++;
  const east = columns.length - eastFrom <= westTo;
  const odd = new Set<number>();
  for (let c = east ? eastFrom : 0; c < (east ? columns.length : westTo); c++) {
    const column = columns[c]!;
    for (const i of segmentsByCell.get(cellKey(row, column))!) {
      // which-polygon's rayIntersect(p, p1, p2), p1 the later vertex and p2 the earlier one.
      const x1 = vertices[2 * i + 2]!;
      const y1 = vertices[2 * i + 3]!;
      const x2 = vertices[2 * i]!;
      const y2 = vertices[2 * i + 1]!;
      if (y1 > latitude === y2 > latitude) continue;
      const x = ((x2 - x1) * (latitude - y1)) / (y2 - y1) + x1;
      if (longitude < x !== east) continue;
      const cell = Math.min(Math.max(lonIndexOf(x), lonIndexOf(Math.min(x1, x2))), lonIndexOf(Math.max(x1, x2)));
      if (cell !== column) continue;
      const polygon = segmentPolygon[i]!;
      if (odd.has(polygon)) odd.delete(polygon);
      else odd.add(polygon);
    }
  }
  if (odd.size === 0) return null;
  return codes[polygonCode[Math.min(...odd)]!]!;
}

export function loadSubdivisionBoundaries(): { subdivisions: number; vertices: number } {
  const index = boundaryIndex();
  return { subdivisions: index.codes.length, vertices: index.vertices.length / 2 };
}

function isValidCoordinate(latitude: number, longitude: number): boolean {
  return Number.isFinite(latitude) && Number.isFinite(longitude) && Math.abs(latitude) <= 90 && Math.abs(longitude) <= 180;
}

/** Which subdivisions a country filter admits; undefined admits all. */
function countryFilter(country: string | null | undefined): ((p: SubdivisionProperties) => boolean) | null | undefined {
  if (country === undefined || country === null || country.trim() === '') return undefined;
  const normalized = normalizeCountry(country);
  if (!normalized || !COUNTRIES_WITH_POLYGONS.has(normalized)) return null;
  if (US_TERRITORY_COUNTRIES.has(normalized)) {
    const territory = `US-${normalized}`;
    return (p) => p.code === territory;
  }
  return (p) => p.country === normalized;
}

/**
 * Nearest boundary of an admitted subdivision within maxKm, measured on a local flat projection
 * (error well under 1% at these distances).
 */
function nearestSubdivision(
  index: BoundaryIndex,
  latitude: number,
  longitude: number,
  maxKm: number,
  admits: ((p: SubdivisionProperties) => boolean) | undefined,
): { properties: SubdivisionProperties; distanceKm: number } | null {
  const kmPerDegreeLon = KM_PER_DEGREE_LONGITUDE_AT_EQUATOR * Math.max(Math.cos((latitude * Math.PI) / 180), 0.01);
  const dLat = maxKm / KM_PER_DEGREE_LATITUDE;
  const dLon = maxKm / kmPerDegreeLon;
  const { vertices, segmentCode, segmentsByCell, codes } = index;
  let bestSquared = maxKm * maxKm;
  let best = -1;
  const latHi = latIndexOf(Math.min(latitude + dLat, 90));
  const lonHi = lonIndexOf(Math.min(longitude + dLon, 180));
  for (let a = latIndexOf(Math.max(latitude - dLat, -90)); a <= latHi; a++) {
    for (let b = lonIndexOf(Math.max(longitude - dLon, -180)); b <= lonHi; b++) {
      const segments = segmentsByCell.get(cellKey(a, b));
      if (!segments) continue;
      for (const i of segments) {
        const codeIndex = segmentCode[i] ?? -1;
        const properties = codes[codeIndex];
        if (!properties || (admits && !admits(properties))) continue;
        // Segment end points in km relative to the query point.
        const x1 = ((vertices[2 * i] ?? 0) - longitude) * kmPerDegreeLon;
        const y1 = ((vertices[2 * i + 1] ?? 0) - latitude) * KM_PER_DEGREE_LATITUDE;
        const x2 = ((vertices[2 * i + 2] ?? 0) - longitude) * kmPerDegreeLon;
        const y2 = ((vertices[2 * i + 3] ?? 0) - latitude) * KM_PER_DEGREE_LATITUDE;
        const dx = x2 - x1;
        const dy = y2 - y1;
        const lengthSquared = dx * dx + dy * dy;
        const t = lengthSquared === 0 ? 0 : Math.min(1, Math.max(0, -(x1 * dx + y1 * dy) / lengthSquared));
        const px = x1 + t * dx;
        const py = y1 + t * dy;
        const squared = px * px + py * py;
        if (squared < bestSquared) {
          bestSquared = squared;
          best = codeIndex;
        }
      }
    }
  }
  const properties = codes[best];
  return properties ? { properties, distanceKm: Math.sqrt(bestSquared) } : null;
}

function toLocation(properties: SubdivisionProperties, distanceKm: number): SubdivisionLocation {
  return {
    code: properties.code,
    country: properties.country,
    name: subdivisionName(properties.code) ?? properties.code,
    // Metres are plenty; a point outside never rounds down to 0, which means inside.
    distanceKm: distanceKm === 0 ? 0 : Math.max(0.001, Math.round(distanceKm * 1000) / 1000),
  };
}

/**
 * The US, CA or MX subdivision at a point, from Natural Earth 10m admin-1 polygons. A point in no
 * polygon (just off a simplified coastline) takes the subdivision whose boundary is nearest, up to
 * maxDistanceKm. With a country, only that country's subdivisions count, and a point inside
 * another country's polygon resolves only within CROSS_BORDER_TOLERANCE_KM of the border.
 * Returns null when unresolved, for invalid coordinates, and for countries without polygons.
 */
export function locateSubdivision(latitude: number, longitude: number, options: LocateSubdivisionOptions = {}): SubdivisionLocation | null {
  if (!isValidCoordinate(latitude, longitude)) return null;
  const admits = countryFilter(options.country);
  if (admits === null) return null;
  const index = boundaryIndex();
  const inside = containingSubdivision(index, latitude, longitude);
  if (inside && (!admits || admits(inside))) return toLocation(inside, 0);
  const maxKm = inside ? CROSS_BORDER_TOLERANCE_KM : (options.maxDistanceKm ?? COASTAL_SEARCH_RADIUS_KM);
  const nearest = nearestSubdivision(index, latitude, longitude, maxKm, admits);
  return nearest ? toLocation(nearest.properties, nearest.distanceKm) : null;
}

/** ISO 3166-2 code of the subdivision at a point (see locateSubdivision), or null. */
export function subdivisionAt(latitude: number, longitude: number, country?: string | null): string | null {
  return locateSubdivision(latitude, longitude, { country })?.code ?? null;
}

/**
 * How far past a subdivision's border a point may lie and still be said to be in it
 * (docs/api.md, "Locations"): the positional accuracy of the 10m boundaries, as for borders between
 * countries.
 */
export const SUBDIVISION_BORDER_TOLERANCE_KM = CROSS_BORDER_TOLERANCE_KM;

/**
 * Whether coordinates may be said to lie in subdivision `code`: inside its polygon, or no farther
 * from it than SUBDIVISION_BORDER_TOLERANCE_KM beyond the subdivision the point resolves to (a point
 * off a simplified coastline is `resolved.distanceKm` from land already). `resolved` is
 * locateSubdivision's answer for the point.
 */
export function withinSubdivision(latitude: number, longitude: number, code: string, resolved: SubdivisionLocation): boolean {
  if (resolved.code === code) return true;
  const maxKm = resolved.distanceKm + SUBDIVISION_BORDER_TOLERANCE_KM;
  const nearest = nearestSubdivision(boundaryIndex(), latitude, longitude, maxKm, (p) => p.code === code);
  return nearest !== null;
}
