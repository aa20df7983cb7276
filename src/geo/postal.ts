import { lazy, readTsvRows } from './data-files.js';
import { parseCountry, subdivisionName, US_TERRITORY_COUNTRIES } from './iso3166.js';

/**
 * USPS military ZIP prefixes (APO/FPO/DPO, "states" AA, AE and AP): mail routing codes for units
 * abroad or at sea, not places a truck can go.
 */
export const MILITARY_ZIP_PREFIXES: readonly string[] = [
  '090',
  '091',
  '092',
  '093',
  '094',
  '095',
  '096',
  '097',
  '098',
  '099',
  '340',
  '962',
  '963',
  '964',
  '965',
  '966',
];

export interface PostalGeocode {
  /** What was looked up: the five-digit ZIP (75201) or the Canadian FSA (M5V). */
  postalCode: string;
  /** zip: centre of a US ZIP code area; fsa: centre of a Canadian forward sortation area. */
  precision: 'zip' | 'fsa';
  latitude: number;
  longitude: number;
  /** ISO 3166-2, e.g. US-TX, US-PR, CA-ON. */
  state: string;
  /** US (territories included) or CA. */
  country: 'US' | 'CA';
  /** Place name of a US ZIP code. */
  city?: string;
  /** Description of a Canadian FSA (e.g. "Downtown Toronto (...)"), which is no city name. */
  area?: string;
}

export type PostalFailureReason =
  'invalid_country' | 'invalid_format' | 'unknown_postal_code' | 'military_postal_code' | 'not_available_offline' | 'state_mismatch';

export type PostalGeocodeResult =
  | { ok: true; geocode: PostalGeocode }
  | {
      ok: false;
      reason: PostalFailureReason;
      /** Says why and what to send instead; meant for the API caller. */
      message: string;
    };

interface PostalArea {
  latitude: number;
  longitude: number;
  /** ISO 3166-2 suffix, e.g. TX. */
  state: string;
  place: string;
}

function loadAreas(file: string): Map<string, PostalArea> {
  const areas = new Map<string, PostalArea>();
  for (const [code, latitude, longitude, state, place] of readTsvRows(file)) {
    if (!code || !latitude || !longitude || !state) throw new Error(`malformed row for ${code ?? '?'} in ${file}`);
    areas.set(code, { latitude: Number(latitude), longitude: Number(longitude), state, place: place ?? '' });
  }
  return areas;
}

const usZipCodes = lazy(() => loadAreas('us-zip.tsv'));
const canadianFsas = lazy(() => loadAreas('ca-fsa.tsv'));

export function loadPostalData(): { usZipCodes: number; canadianFsas: number } {
  return { usZipCodes: usZipCodes().size, canadianFsas: canadianFsas().size };
}

/** Every US ZIP code with its centre, state and place name (accuracy checks, the places index of places.ts). */
export function* allUsZipCodes(): Generator<{ zip: string; latitude: number; longitude: number; state: string; place: string }> {
  for (const [zip, area] of usZipCodes()) yield { zip, latitude: area.latitude, longitude: area.longitude, state: `US-${area.state}`, place: area.place };
}

/** Every Canadian FSA with its centre and province. */
export function* allCanadianFsas(): Generator<{ fsa: string; latitude: number; longitude: number; state: string }> {
  for (const [fsa, area] of canadianFsas()) yield { fsa, latitude: area.latitude, longitude: area.longitude, state: `CA-${area.state}` };
}

const US_ZIP = /^(\d{5})(?:[-\s]?\d{4})?$/;
const CANADIAN_POSTAL_CODE = /^([A-Z]\d[A-Z])(?:\d[A-Z]\d)?$/;

function failure(reason: PostalFailureReason, message: string): PostalGeocodeResult {
  return { ok: false, reason, message };
}

function geocodeUsZip(input: string): PostalGeocodeResult {
  const match = US_ZIP.exec(input);
  if (!match?.[1]) {
    const compact = input.replace(/[\s-]/g, '').toUpperCase();
    if (CANADIAN_POSTAL_CODE.test(compact)) {
      return failure('invalid_format', `postal code '${input}' looks Canadian, not like a US ZIP code: send country CA`);
    }
    const leadingZeroHint = /^\d{3,4}$/.test(input) ? ' (a leading zero may have been dropped)' : '';
    return failure('invalid_format', `postal code '${input}' is not a US ZIP code: expected five digits, or ZIP+4 such as 75201-1234${leadingZeroHint}`);
  }
  const zip = match[1];
  if (MILITARY_ZIP_PREFIXES.includes(zip.slice(0, 3))) {
    return failure('military_postal_code', `postal code ${zip} is a military APO/FPO ZIP code with no place on the map: send latitude and longitude`);
  }
  const area = usZipCodes().get(zip);
  if (!area) return failure('unknown_postal_code', `postal code ${zip} is not a known US ZIP code: check it, or send latitude and longitude`);
  return {
    ok: true,
    geocode: {
      postalCode: zip,
      precision: 'zip',
      latitude: area.latitude,
      longitude: area.longitude,
      state: `US-${area.state}`,
      country: 'US',
      city: area.place,
    },
  };
}

function geocodeCanadianPostalCode(input: string): PostalGeocodeResult {
  const compact = input.replace(/[\s-]/g, '').toUpperCase();
  const match = CANADIAN_POSTAL_CODE.exec(compact);
  if (!match?.[1]) {
    if (US_ZIP.test(input)) return failure('invalid_format', `postal code '${input}' looks like a US ZIP code, not a Canadian postal code: send country US`);
    return failure('invalid_format', `postal code '${input}' is not a Canadian postal code: expected A1A 1A1 (or its first three characters)`);
  }
  const fsa = match[1];
  const area = canadianFsas().get(fsa);
  if (!area)
    return failure(
      'unknown_postal_code',
      `postal code '${input}' is in area ${fsa}, which is not a known Canadian forward sortation area: check it, or send latitude and longitude`,
    );
  return {
    ok: true,
    geocode: {
      postalCode: fsa,
      precision: 'fsa',
      latitude: area.latitude,
      longitude: area.longitude,
      state: `CA-${area.state}`,
      country: 'CA',
      area: area.place,
    },
  };
}

/**
 * Centre and subdivision of a postal code, offline. US ZIP codes (ZIP+4 accepted, Puerto Rico and
 * the territories included) and Canadian postal codes by their first three characters (FSA).
 * Mexican and other countries' postal codes are not available: the failure says to send
 * coordinates. Country defaults to US; a US territory given as country (PR) reads US ZIP codes.
 */
export function geocodePostal(postalCode: string, country?: string | null): PostalGeocodeResult {
  const countryResult = parseCountry(country);
  if (!countryResult.ok) return countryResult;
  const input = postalCode.trim();
  if (input === '') return failure('invalid_format', 'postal code is empty');
  const code = countryResult.country;
  if (code === 'US' || US_TERRITORY_COUNTRIES.has(code)) return geocodeUsZip(input);
  if (code === 'CA') return geocodeCanadianPostalCode(input);
  if (code === 'MX') return failure('not_available_offline', 'Mexican postal codes are not available offline: send latitude and longitude');
  return failure(
    'not_available_offline',
    `postal codes of ${code} (${countryResult.name}) are not available offline, only US and CA: send latitude and longitude`,
  );
}

/**
 * The message to report when a postal code lies in another subdivision than the caller's state
 * (an ISO 3166-2 code such as US-TX), or null when they agree.
 */
export function postalStateMismatch(geocode: PostalGeocode, state: string): string | null {
  const expected = state.trim().toUpperCase();
  if (expected === geocode.state) return null;
  const name = subdivisionName(geocode.state);
  const kind = geocode.precision === 'zip' ? 'ZIP code' : 'postal code area';
  return `${kind} ${geocode.postalCode} is in ${geocode.state}${name ? ` (${name})` : ''}, not in ${expected}: correct the state or the postal code`;
}

/**
 * geocodePostal, then the check that the postal code lies in `state` (ISO 3166-2, as returned by
 * normalizeSubdivision): the postal-code route of spec 2.3 in one call.
 */
export function geocodePostalInState(postalCode: string, state: string, country?: string | null): PostalGeocodeResult {
  const result = geocodePostal(postalCode, country);
  if (!result.ok) return result;
  const mismatch = postalStateMismatch(result.geocode, state);
  return mismatch ? failure('state_mismatch', mismatch) : result;
}
