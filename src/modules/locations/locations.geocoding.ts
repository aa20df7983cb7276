import {
  geocodePostalInState,
  locateSubdivision,
  normalizeSubdivision,
  parseCountry,
  SUBDIVISION_BORDER_TOLERANCE_KM,
  subdivisionName,
  timezoneAt,
  withinSubdivision,
} from '../../geo/index.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';

/** What the geocoding rules (docs/api.md, "Locations") need to look at. */
export interface GeoInput {
  latitude?: number | null;
  longitude?: number | null;
  state?: string | null;
  postal_code?: string | null;
  country?: string | null;
}

export interface GeocodedLocation {
  latitude: number;
  longitude: number;
  state: string | null;
  postal_code: string | null;
  country: string;
  timezone: string | null;
  geocode_source: 'coordinates' | 'postal_code';
}

const NOT_GEOCODABLE =
  'Value error, a location must be geocodable: send latitude and longitude (with country, default US), or postal_code and state (with country)';

function fail(field: string, msg: string, type = 'value_error'): never {
  throw new ValidationError([{ type, loc: ['body', field], msg }]);
}

/**
 * Geocodes a location from its fields (spec 2.3):
 * (a) latitude + longitude + country: state is taken as sent (normalised), else inferred from the
 *     subdivision polygons; coordinates that resolve to no subdivision keep state null;
 * (b) postal_code + state + country: coordinates from the postal code, which must lie in `state`.
 * Coordinates win when both routes are possible. Country defaults to US.
 */
export function geocodeLocation(input: GeoInput): GeocodedLocation {
  const country = parseCountry(input.country);
  if (!country.ok) fail('country', `Value error, ${country.message}`);
  const countryCode = country.country;

  const hasLat = input.latitude !== undefined && input.latitude !== null;
  const hasLon = input.longitude !== undefined && input.longitude !== null;
  if (hasLat !== hasLon) {
    const missing = hasLat ? 'longitude' : 'latitude';
    fail(missing, `Value error, latitude and longitude go together: send ${missing} too`);
  }

  let state: string | null = null;
  if (input.state !== undefined && input.state !== null && input.state.trim() !== '') {
    const sub = normalizeSubdivision(input.state, countryCode);
    if (!sub.ok) fail(sub.reason === 'invalid_country' ? 'country' : 'state', `Value error, ${sub.message}`);
    state = sub.code;
  }
  const postalCode = input.postal_code?.trim() ? input.postal_code.trim() : null;

  if (hasLat && hasLon) {
    const latitude = input.latitude as number;
    const longitude = input.longitude as number;
    const resolved = locateSubdivision(latitude, longitude, { country: countryCode });
    // A state sent with coordinates must be theirs (within the border tolerance); coordinates
    // that resolve to no subdivision keep the state as sent.
    if (state && resolved && !withinSubdivision(latitude, longitude, state, resolved)) {
      fail(
        'state',
        `Value error, state ${state} contradicts the coordinates (${latitude}, ${longitude}), which lie in ${resolved.code} (${subdivisionName(resolved.code) ?? resolved.code}), more than ${SUBDIVISION_BORDER_TOLERANCE_KM} km from ${state}: send the state of the coordinates, or omit state to have it resolved`,
      );
    }
    return {
      latitude,
      longitude,
      state: state ?? resolved?.code ?? null,
      postal_code: postalCode,
      country: countryCode,
      timezone: timezoneAt(latitude, longitude),
      geocode_source: 'coordinates',
    };
  }

  if (postalCode) {
    if (!state) {
      fail('state', 'Field required: state is required when the location is geocoded by postal_code (or send latitude and longitude)', 'missing');
    }
    const found = geocodePostalInState(postalCode, state, countryCode);
    if (!found.ok) fail('postal_code', `Value error, ${found.message}`);
    const { latitude, longitude } = found.geocode;
    return {
      latitude,
      longitude,
      state,
      postal_code: postalCode,
      country: countryCode,
      timezone: timezoneAt(latitude, longitude),
      geocode_source: 'postal_code',
    };
  }

  const issues: ValidationIssue[] = [{ type: 'value_error', loc: ['body', 'latitude'], msg: NOT_GEOCODABLE }];
  throw new ValidationError(issues);
}

export const GEO_FIELDS = ['latitude', 'longitude', 'state', 'postal_code', 'country'] as const;

/**
 * The combination an update re-geocodes from (docs/api.md, "Locations"): the stored values with the sent
 * ones on top. Coordinates sent without a country mean US (spec 2.3 rule 4); coordinates sent without
 * a state drop the stored state so it is inferred again from the new point.
 */
export function updatedGeoInput(stored: GeocodedLocation, sent: GeoInput): GeoInput {
  const sentCoordinates = sent.latitude !== undefined || sent.longitude !== undefined;
  if (sentCoordinates) {
    return {
      latitude: sent.latitude !== undefined ? sent.latitude : stored.latitude,
      longitude: sent.longitude !== undefined ? sent.longitude : stored.longitude,
      state: sent.state !== undefined ? sent.state : null,
      postal_code: sent.postal_code !== undefined ? sent.postal_code : stored.postal_code,
      country: sent.country !== undefined ? sent.country : null,
    };
  }
  const merged: GeoInput = {
    state: sent.state !== undefined ? sent.state : stored.state,
    postal_code: sent.postal_code !== undefined ? sent.postal_code : stored.postal_code,
    country: sent.country !== undefined ? sent.country : stored.country,
  };
  // With a postal code and a state the postal route applies; otherwise the stored point stays and is
  // resolved again (e.g. a new country or state on a location placed by coordinates).
  if (!(merged.postal_code && merged.state)) {
    merged.latitude = stored.latitude;
    merged.longitude = stored.longitude;
  }
  return merged;
}
