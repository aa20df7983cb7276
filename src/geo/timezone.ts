import { find as findTimezones, setCache as setTimezoneCache } from 'geo-tz';

/**
 * geo-tz reads time zone boundaries (timezone-boundary-builder, OpenStreetMap-derived) tile by
 * tile from its data file and by default keeps every tile it ever decoded. Decoded tiles cost
 * about 170 bytes of heap per boundary vertex, and lookups spread over all of North America
 * touch ~250 MB of them, so the cache here is bounded by vertices and drops the least recently
 * used tiles. The tiles under every US ZIP and Canadian FSA centre hold ~210,000 vertices and fit.
 */
export const TIMEZONE_CACHE_MAX_VERTICES = 250_000;

interface DecodedTile {
  features?: Array<{ geometry?: { type?: string; coordinates?: unknown } }>;
}

function countVertices(value: unknown): number {
  if (!Array.isArray(value)) return 0;
  if (typeof value[0] === 'number') return 1;
  let total = 0;
  for (const item of value) total += countVertices(item);
  return total;
}

function tileVertices(tile: unknown): number {
  let total = 0;
  for (const feature of (tile as DecodedTile).features ?? []) total += countVertices(feature.geometry?.coordinates);
  return Math.max(total, 1);
}

/** Map-like store for geo-tz: least recently used tiles go once the vertex budget is spent. */
export class BoundedTileCache {
  private readonly tiles = new Map<string, { tile: unknown; vertices: number }>();
  private vertices = 0;

  constructor(private readonly maxVertices: number) {}

  get(key: string): unknown {
    const entry = this.tiles.get(key);
    if (!entry) return undefined;
    // Re-insert so Map iteration order is least recently used first.
    this.tiles.delete(key);
    this.tiles.set(key, entry);
    return entry.tile;
  }

  set(key: string, tile: unknown): void {
    const previous = this.tiles.get(key);
    if (previous) {
      this.vertices -= previous.vertices;
      this.tiles.delete(key);
    }
    const entry = { tile, vertices: tileVertices(tile) };
    this.tiles.set(key, entry);
    this.vertices += entry.vertices;
    for (const [oldestKey, oldest] of this.tiles) {
      if (this.vertices <= this.maxVertices || oldestKey === key) break;
      this.tiles.delete(oldestKey);
      this.vertices -= oldest.vertices;
    }
  }

  get size(): number {
    return this.tiles.size;
  }

  get vertexCount(): number {
    return this.vertices;
  }
}

let tileCache: BoundedTileCache | undefined;

function ensureCache(): BoundedTileCache {
  if (!tileCache) {
    tileCache = new BoundedTileCache(TIMEZONE_CACHE_MAX_VERTICES);
    setTimezoneCache({ store: tileCache });
  }
  return tileCache;
}

/**
 * IANA time zone name at a point, e.g. America/Chicago; zones that have kept the same clock since
 * 1970 share one name (geo-tz's default data set). Out at sea it is an Etc/GMT±N zone. Null for
 * invalid coordinates.
 */
export function timezoneAt(latitude: number, longitude: number): string | null {
  if (!Number.isFinite(latitude) || !Number.isFinite(longitude) || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null;
  ensureCache();
  return findTimezones(latitude, longitude)[0] ?? null;
}

/** Decodes the tiles under the given points (e.g. every ZIP centre) so that first lookups are fast. */
export function warmTimezones(points: Iterable<{ latitude: number; longitude: number }>): { tiles: number; vertices: number } {
  const cache = ensureCache();
  for (const point of points) timezoneAt(point.latitude, point.longitude);
  return { tiles: cache.size, vertices: cache.vertexCount };
}
