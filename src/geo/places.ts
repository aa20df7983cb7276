import { lazy } from './data-files.js';
import { haversineMiles } from './distance.js';
import { US_TERRITORY_COUNTRIES } from './iso3166.js';
import { allUsZipCodes } from './postal.js';

/**
 * Places by name from the US ZIP table the postal route already ships (us-zip.tsv: a centre and a
 * place name per ZIP code): the nearest place to a point, and the main place of a box. No other
 * city table exists offline here; Canadian FSA descriptions are neighbourhoods and regions, not
 * cities, and there is no Mexican data, so both answer only for the US (territories included).
 */

export interface Place {
  /** The ZIP table's place name, e.g. `Dallas`. */
  city: string;
  /** ISO 3166-2, e.g. `US-TX`. */
  state: string;
  latitude: number;
  longitude: number;
}

export interface NearestPlace extends Place {
  /** Great-circle miles from the point to the place's nearest ZIP centre. */
  distanceMiles: number;
}

export interface MainPlace extends Place {
  /** ZIP centres of the place inside the box (its weight: a city has many, a hamlet one). */
  zipCodes: number;
}

/** How far `nearestPlace` looks by default: past this, "near" a place says little. */
export const NEAREST_PLACE_MAX_MILES = 50;
const MILES_PER_DEGREE_LAT = 69.05;

interface ZipCentre {
  latitude: number;
  longitude: number;
  state: string;
  place: string;
}

/** ZIP centres bucketed by whole degree (south-west corner), so a lookup reads a few buckets. */
const bucketKey = (latFloor: number, lonFloor: number) => (latFloor + 90) * 360 + (lonFloor + 180);
const buckets = lazy(() => {
  const index = new Map<number, ZipCentre[]>();
  for (const z of allUsZipCodes()) {
    if (!z.place) continue;
    const key = bucketKey(Math.floor(z.latitude), Math.floor(z.longitude));
    let bucket = index.get(key);
    if (!bucket) index.set(key, (bucket = []));
    bucket.push({ latitude: z.latitude, longitude: z.longitude, state: z.state, place: z.place });
  }
  return index;
});

/** Builds the index now (boot) rather than on the first lookup (~40,000 rows, a few tens of ms). */
export function loadPlaces(): number {
  return buckets().size;
}

function* centresIn(south: number, west: number, north: number, east: number): Generator<ZipCentre> {
  const index = buckets();
  for (let lat = Math.floor(south); lat <= Math.floor(north); lat++) {
    for (let lon = Math.floor(west); lon <= Math.floor(east); lon++) {
      const bucket = index.get(bucketKey(lat, lon));
      if (bucket) yield* bucket;
    }
  }
}

const hasPlaces = (country: string | null | undefined) => !country || country === 'US' || US_TERRITORY_COUNTRIES.has(country);

/**
 * The place of the nearest US ZIP centre within `maxMiles` (default 50), or null: none that close,
 * a country without place data (anything but the US and its territories), or invalid coordinates.
 */
export function nearestPlace(latitude: number, longitude: number, options: { country?: string | null; maxMiles?: number } = {}): NearestPlace | null {
  if (!Number.isFinite(latitude) || !Number.isFinite(longitude) || Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null;
  if (!hasPlaces(options.country)) return null;
  const maxMiles = options.maxMiles ?? NEAREST_PLACE_MAX_MILES;
  const dLat = maxMiles / MILES_PER_DEGREE_LAT;
  const widestCos = Math.max(Math.cos((Math.min(89.9, Math.abs(latitude) + dLat) * Math.PI) / 180), 0.01);
  const dLon = Math.min(180, maxMiles / (MILES_PER_DEGREE_LAT * widestCos));
  // Compared on a local flat projection (exact enough to rank points within 50 miles, and a few times
  // cheaper than haversine over the ~2,000 centres around New York); the winner's distance is haversine.
  const cosLat = Math.cos((latitude * Math.PI) / 180);
  let best: ZipCentre | null = null;
  let bestSquare = Infinity;
  for (const z of centresIn(latitude - dLat, longitude - dLon, latitude + dLat, longitude + dLon)) {
    const dy = z.latitude - latitude;
    const dx = (z.longitude - longitude) * cosLat;
    const square = dx * dx + dy * dy;
    // Ties (ZIPs sharing a centre) go to the first place by name, so the answer never depends on file order.
    if (square < bestSquare || (square === bestSquare && best !== null && z.place < best.place)) {
      best = z;
      bestSquare = square;
    }
  }
  if (!best) return null;
  const distanceMiles = haversineMiles({ latitude, longitude }, best);
  if (distanceMiles > maxMiles) return null;
  return { city: best.place, state: best.state, latitude: best.latitude, longitude: best.longitude, distanceMiles };
}

/**
 * The main place of a box (a lane's grid cell): the place with the most ZIP centres inside it (a
 * city's many ZIP codes outweigh a suburb's few), ties to the one nearest the box's centre, then by
 * name; its point is the mean of those ZIP centres. Null when no US ZIP centre is inside.
 */
export function mainPlaceIn(box: { south: number; west: number; north: number; east: number }): MainPlace | null {
  const places = new Map<string, { city: string; state: string; n: number; lat: number; lon: number }>();
  for (const z of centresIn(box.south, box.west, box.north, box.east)) {
    if (z.latitude < box.south || z.latitude >= box.north || z.longitude < box.west || z.longitude >= box.east) continue;
    const key = `${z.place}|${z.state}`;
    const p = places.get(key);
    if (p) {
      p.n++;
      p.lat += z.latitude;
      p.lon += z.longitude;
    } else places.set(key, { city: z.place, state: z.state, n: 1, lat: z.latitude, lon: z.longitude });
  }
  const centre = { latitude: (box.south + box.north) / 2, longitude: (box.west + box.east) / 2 };
  let best: MainPlace | null = null;
  let bestMiles = Infinity;
  for (const p of places.values()) {
    const place: MainPlace = { city: p.city, state: p.state, latitude: p.lat / p.n, longitude: p.lon / p.n, zipCodes: p.n };
    const miles = haversineMiles(centre, place);
    const better =
      !best ||
      place.zipCodes > best.zipCodes ||
      (place.zipCodes === best.zipCodes && (miles < bestMiles || (miles === bestMiles && `${place.city}|${place.state}` < `${best.city}|${best.state}`)));
    if (better) {
      best = place;
      bestMiles = miles;
    }
  }
  return best;
}
