import whichPolygon from 'which-polygon';

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
  /** Point-in-polygon index over the polygons cut into small pieces (see MAX_PIECE_VERTICES). */
  containing: whichPolygon.PolygonQuery<SubdivisionProperties>;
  codes: SubdivisionProperties[];
  /** Every boundary vertex as lon, lat pairs; rings stored one after another. */
  vertices: Float64Array;
  /** Code index of the segment starting at vertex i; -1 where i ends a ring (no segment). */
  segmentCode: Int16Array;
  /** Grid cell (GRID_CELLS_PER_DEGREE) → starting vertices of the segments that touch it. */
  segmentsByCell: Map<number, Int32Array>;
}

/**
 * Large subdivisions (Quebec, Nunavut, Alaska) have tens of thousands of boundary vertices, and a
 * point-in-polygon test walks every vertex of the polygon it tests. Each polygon is therefore cut
 * into boxes (a quadtree, split until a piece has at most this many vertices) before indexing, so
 * a lookup tests only a small piece; boxes wholly inside a subdivision become plain rectangles.
 */
const MAX_PIECE_VERTICES = 64;
const MAX_PIECE_DEPTH = 14;

const GRID_CELLS_PER_DEGREE = 4;
const KM_PER_DEGREE_LATITUDE = 110.574;
const KM_PER_DEGREE_LONGITUDE_AT_EQUATOR = 111.32;

function cellKey(latIndex: number, lonIndex: number): number {
  return latIndex * 2048 + lonIndex;
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

interface Box {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/**
 * Sutherland-Hodgman clip of a closed ring to a box. A concave ring that leaves and re-enters
 * the box comes out as one ring with zero-width runs along the box side; those runs cancel in
 * the even-odd ray test, so the clipped ring covers exactly the part of the polygon in the box.
 */
function clipRing(ring: Position[], box: Box): Position[] {
  let points = ring.slice(0, -1); // open ring: the closing vertex repeats the first
  const sides: Array<{ inside: (p: Position) => boolean; cut: (a: Position, b: Position) => Position }> = [
    { inside: (p) => p[0] >= box.minX, cut: (a, b) => [box.minX, a[1] + ((b[1] - a[1]) * (box.minX - a[0])) / (b[0] - a[0])] },
    { inside: (p) => p[0] <= box.maxX, cut: (a, b) => [box.maxX, a[1] + ((b[1] - a[1]) * (box.maxX - a[0])) / (b[0] - a[0])] },
    { inside: (p) => p[1] >= box.minY, cut: (a, b) => [a[0] + ((b[0] - a[0]) * (box.minY - a[1])) / (b[1] - a[1]), box.minY] },
    { inside: (p) => p[1] <= box.maxY, cut: (a, b) => [a[0] + ((b[0] - a[0]) * (box.maxY - a[1])) / (b[1] - a[1]), box.maxY] },
  ];
  for (const side of sides) {
    if (points.length === 0) break;
    const output: Position[] = [];
    let previous = points[points.length - 1] as Position;
    for (const current of points) {
      const currentInside = side.inside(current);
      const previousInside = side.inside(previous);
      if (currentInside) {
        if (!previousInside) output.push(side.cut(previous, current));
        output.push(current);
      } else if (previousInside) {
        output.push(side.cut(previous, current));
      }
      previous = current;
    }
    points = output;
  }
  if (points.length < 3) return [];
  const first = points[0] as Position;
  points.push([first[0], first[1]]);
  return points;
}

function ringBox(ring: Position[]): Box {
  const box = { minX: Infinity, minY: Infinity, maxX: -Infinity, maxY: -Infinity };
  for (const [x, y] of ring) {
    if (x < box.minX) box.minX = x;
    if (y < box.minY) box.minY = y;
    if (x > box.maxX) box.maxX = x;
    if (y > box.maxY) box.maxY = y;
  }
  return box;
}

/** Cuts a polygon (outer ring first, then holes) into pieces of at most MAX_PIECE_VERTICES. */
function cutPolygon(rings: Position[][], box: Box, depth: number, pieces: Position[][][]): void {
  const outer = rings[0];
  if (!outer || outer.length < 4) return;
  let vertices = 0;
  for (const ring of rings) vertices += ring.length;
  if (vertices <= MAX_PIECE_VERTICES || depth >= MAX_PIECE_DEPTH) {
    pieces.push(rings);
    return;
  }
  const midX = (box.minX + box.maxX) / 2;
  const midY = (box.minY + box.maxY) / 2;
  const quadrants: Box[] = [
    { minX: box.minX, minY: box.minY, maxX: midX, maxY: midY },
    { minX: midX, minY: box.minY, maxX: box.maxX, maxY: midY },
    { minX: box.minX, minY: midY, maxX: midX, maxY: box.maxY },
    { minX: midX, minY: midY, maxX: box.maxX, maxY: box.maxY },
  ];
  for (const quadrant of quadrants) {
    const clippedOuter = clipRing(outer, quadrant);
    if (clippedOuter.length === 0) continue; // the polygon does not reach into this quadrant
    const clipped = [clippedOuter];
    for (const hole of rings.slice(1)) {
      const clippedHole = clipRing(hole, quadrant);
      if (clippedHole.length > 0) clipped.push(clippedHole);
    }
    cutPolygon(clipped, quadrant, depth + 1, pieces);
  }
}

const boundaryIndex = lazy((): BoundaryIndex => {
  const collection = JSON.parse(readDataFile('admin1-us-ca-mx.geojson')) as SubdivisionFeatureCollection;
  const codes: SubdivisionProperties[] = [];
  let vertexCount = 0;
  for (const feature of collection.features) {
    for (const polygon of feature.geometry.coordinates) for (const ring of polygon) vertexCount += ring.length;
  }
  const vertices = new Float64Array(vertexCount * 2);
  const segmentCode = new Int16Array(vertexCount).fill(-1);
  const cellLists = new Map<number, number[]>();
  let v = 0;

  const pieces: whichPolygon.FeatureCollection<SubdivisionProperties>['features'] = [];
  for (const feature of collection.features) {
    const properties: SubdivisionProperties = { code: feature.properties.code, country: feature.properties.code.slice(0, 2) };
    const codeIndex = codes.push(properties) - 1;
    const cut: Position[][][] = [];
    for (const polygon of feature.geometry.coordinates) {
      const outer = polygon[0];
      if (outer) cutPolygon(polygon, ringBox(outer), 0, cut);
    }
    pieces.push({ type: 'Feature', properties, geometry: { type: 'MultiPolygon', coordinates: cut } });
    for (const polygon of feature.geometry.coordinates) {
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
          const lon1 = vertices[2 * i] ?? 0;
          const lat1 = vertices[2 * i + 1] ?? 0;
          const lon2 = vertices[2 * i + 2] ?? 0;
          const lat2 = vertices[2 * i + 3] ?? 0;
          const latLo = latIndexOf(Math.min(lat1, lat2));
          const latHi = latIndexOf(Math.max(lat1, lat2));
          const lonLo = lonIndexOf(Math.min(lon1, lon2));
          const lonHi = lonIndexOf(Math.max(lon1, lon2));
          for (let a = latLo; a <= latHi; a++) {
            for (let b = lonLo; b <= lonHi; b++) {
              const key = cellKey(a, b);
              const list = cellLists.get(key);
              if (list) list.push(i);
              else cellLists.set(key, [i]);
            }
          }
        }
      }
    }
  }

  const segmentsByCell = new Map<number, Int32Array>();
  for (const [key, list] of cellLists) segmentsByCell.set(key, Int32Array.from(list));
  const containing = whichPolygon<SubdivisionProperties>({ type: 'FeatureCollection', features: pieces });
  return { containing, codes, vertices, segmentCode, segmentsByCell };
});

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
  const inside = index.containing([longitude, latitude]);
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
 * How far past a subdivision's border a point may lie and still be said to be in it (D1a): the
 * positional accuracy of the 10m boundaries, as for borders between countries.
 */
export const SUBDIVISION_BORDER_TOLERANCE_KM = CROSS_BORDER_TOLERANCE_KM;

/**
 * Whether coordinates may be said to lie in subdivision `code` (D1a): inside its polygon, or no farther
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
