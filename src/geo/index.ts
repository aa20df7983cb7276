/**
 * Offline geocoding for Lanebridge locations (spec 2.3; docs/api.md, "Locations"; docs/geo.md): ISO 3166
 * country and subdivision codes, postal code centres (US ZIP, Canadian FSA), subdivision and time zone
 * of a point, and great-circle distance. Pure library: no HTTP, no database, no network. Data is loaded
 * on first use and kept; warmup() loads it all at boot. See docs/geo.md.
 */
import { allCanadianFsas, allUsZipCodes, loadPostalData } from './postal.js';
import { loadIsoData } from './iso3166.js';
import { loadSubdivisionBoundaries } from './subdivisions.js';
import { warmTimezones } from './timezone.js';

export {
  DEFAULT_COUNTRY,
  US_TERRITORY_COUNTRIES,
  countryName,
  isCountryCode,
  normalizeCountry,
  normalizeSubdivision,
  parseCountry,
  subdivisionName,
} from './iso3166.js';
export type { CountryResult, SubdivisionFailureReason, SubdivisionResult } from './iso3166.js';

export { geocodePostal, geocodePostalInState, postalStateMismatch, MILITARY_ZIP_PREFIXES } from './postal.js';
export type { PostalFailureReason, PostalGeocode, PostalGeocodeResult } from './postal.js';

export {
  COASTAL_SEARCH_RADIUS_KM,
  COUNTRIES_WITH_POLYGONS,
  CROSS_BORDER_TOLERANCE_KM,
  locateSubdivision,
  subdivisionAt,
  SUBDIVISION_BORDER_TOLERANCE_KM,
  withinSubdivision,
} from './subdivisions.js';
export type { LocateSubdivisionOptions, SubdivisionLocation } from './subdivisions.js';

export { loadPlaces, mainPlaceIn, nearestPlace, NEAREST_PLACE_MAX_MILES } from './places.js';
export type { MainPlace, NearestPlace, Place } from './places.js';

export { timezoneAt, TIMEZONE_CACHE_MAX_VERTICES } from './timezone.js';
export { haversineMiles, EARTH_RADIUS_MILES } from './distance.js';
export type { Coordinates } from './distance.js';

export interface GeoWarmupOptions {
  /**
   * Also decode the time zone tiles under every US ZIP and Canadian FSA centre (~0.4 s, ~50 MB),
   * so that no lookup near a postal code reads from disk. Off by default: a cold tile costs
   * ~0.3 ms once.
   */
  timezoneTilesUnderPostalCodes?: boolean;
}

export interface GeoWarmupSummary {
  subdivisions: number;
  boundaryVertices: number;
  usZipCodes: number;
  canadianFsas: number;
  timezoneTiles: number;
  milliseconds: number;
}

/** Loads every data set now instead of on first use; the server calls it at boot. */
export function warmup(options: GeoWarmupOptions = {}): GeoWarmupSummary {
  const started = performance.now();
  loadIsoData();
  const boundaries = loadSubdivisionBoundaries();
  const postal = loadPostalData();
  // One lookup loads geo-tz's tile index; tiles themselves come on demand unless asked for.
  const timezones = warmTimezones(options.timezoneTilesUnderPostalCodes ? [...allUsZipCodes(), ...allCanadianFsas()] : [{ latitude: 39.1, longitude: -94.58 }]);
  return {
    subdivisions: boundaries.subdivisions,
    boundaryVertices: boundaries.vertices,
    usZipCodes: postal.usZipCodes,
    canadianFsas: postal.canadianFsas,
    timezoneTiles: timezones.tiles,
    milliseconds: Math.round(performance.now() - started),
  };
}
