import { lazy, readDataFile } from './data-files.js';

/** Country assumed when a location omits it (spec 2.3 rule 2). */
export const DEFAULT_COUNTRY = 'US';

/**
 * US territories that ISO 3166-1 also lists as countries of their own. A US TMS usually sends
 * them as subdivisions of US (US-PR), some send country PR: both are understood.
 */
export const US_TERRITORY_COUNTRIES: ReadonlySet<string> = new Set(['PR', 'VI', 'GU', 'AS', 'MP', 'UM']);

/** Countries whose subdivisions a bare code (`ON`) is checked against when it is not in the caller's country. */
const NORTH_AMERICAN_COUNTRIES = ['US', 'CA', 'MX'] as const;

/** Codes withdrawn from ISO 3166-2 (or older postal abbreviations) still sent by older systems. */
const FORMER_SUBDIVISION_CODES: Readonly<Record<string, string>> = {
  'MX-DIF': 'MX-CMX', // Distrito Federal, Ciudad de Mexico since 2016
  'CA-PQ': 'CA-QC', // former postal abbreviation of Quebec
  'CA-NF': 'CA-NL', // Newfoundland, renamed Newfoundland and Labrador in 2001
  'CA-YU': 'CA-YT', // former postal abbreviation of Yukon
};

interface IsoData {
  /** alpha-2 → [alpha-3, name] */
  countries: Record<string, [string, string] | undefined>;
  /** alpha-2 → subdivision suffix → name */
  subdivisions: Record<string, Record<string, string | undefined> | undefined>;
}

interface IsoIndex {
  data: IsoData;
  alpha2ByAlpha3: Map<string, string>;
  countryByName: Map<string, string>;
}

const isoIndex = lazy((): IsoIndex => {
  const data = JSON.parse(readDataFile('iso3166.json')) as IsoData;
  const alpha2ByAlpha3 = new Map<string, string>();
  const countryByName = new Map<string, string>();
  for (const [alpha2, entry] of Object.entries(data.countries)) {
    if (!entry) continue;
    alpha2ByAlpha3.set(entry[0], alpha2);
    countryByName.set(foldName(entry[1]), alpha2);
  }
  // Everyday names that differ from the ISO short names.
  countryByName.set(foldName('United States'), 'US');
  countryByName.set(foldName('USA'), 'US');
  countryByName.set(foldName('America'), 'US');
  return { data, alpha2ByAlpha3, countryByName };
});

/** Lower case, no accents, letters and digits only: 'Québec' and 'quebec' compare equal. */
function foldName(name: string): string {
  return name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

export function loadIsoData(): void {
  isoIndex();
}

export type CountryResult =
  | { ok: true; country: string; name: string; /** true when the input was empty and US was assumed */ defaulted: boolean }
  | { ok: false; reason: 'invalid_country'; message: string };

export function countryName(country: string): string | undefined {
  return isoIndex().data.countries[country.toUpperCase()]?.[1];
}

export function isCountryCode(input: string): boolean {
  return /^[A-Za-z]{2}$/.test(input) && isoIndex().data.countries[input.toUpperCase()] !== undefined;
}

/**
 * ISO 3166-1 alpha-2 country, any letter case in, upper case out. Omitted (undefined, null or
 * blank) means US. A failure says what to send instead.
 */
export function parseCountry(input?: string | null): CountryResult {
  const trimmed = (input ?? '').trim();
  if (trimmed === '') return { ok: true, country: DEFAULT_COUNTRY, name: countryName(DEFAULT_COUNTRY) ?? DEFAULT_COUNTRY, defaulted: true };
  const upper = trimmed.toUpperCase();
  const { data, alpha2ByAlpha3, countryByName } = isoIndex();
  const entry = /^[A-Z]{2}$/.test(upper) ? data.countries[upper] : undefined;
  if (entry) return { ok: true, country: upper, name: entry[1], defaulted: false };

  const fromAlpha3 = /^[A-Z]{3}$/.test(upper) ? alpha2ByAlpha3.get(upper) : undefined;
  if (fromAlpha3) {
    return {
      ok: false,
      reason: 'invalid_country',
      message: `country '${trimmed}' is an ISO 3166-1 alpha-3 code: send the alpha-2 code ${fromAlpha3} (${countryName(fromAlpha3) ?? fromAlpha3})`,
    };
  }
  const fromName = countryByName.get(foldName(trimmed));
  if (fromName) {
    return {
      ok: false,
      reason: 'invalid_country',
      message: `country must be an ISO 3166-1 alpha-2 code: send ${fromName} for '${trimmed}'`,
    };
  }
  return {
    ok: false,
    reason: 'invalid_country',
    message: `country '${trimmed}' is not an ISO 3166-1 alpha-2 country code (two letters, e.g. US, CA, MX)`,
  };
}

/** The upper-case alpha-2 code, US when omitted, or null when the input is not a country code. */
export function normalizeCountry(input?: string | null): string | null {
  const result = parseCountry(input);
  return result.ok ? result.country : null;
}

export type SubdivisionFailureReason = 'invalid_country' | 'invalid_format' | 'unknown_subdivision' | 'other_country';

export type SubdivisionResult =
  | { ok: true; /** ISO 3166-2, e.g. US-TX */ code: string; country: string; name: string }
  | {
      ok: false;
      reason: SubdivisionFailureReason;
      /** Says what is wrong and what to send instead; meant for the API caller. */
      message: string;
      /** For other_country: the subdivision that was meant, and its country. */
      subdivision?: { code: string; country: string; name: string };
    };

export function subdivisionName(code: string): string | undefined {
  const [country, suffix] = code.toUpperCase().split('-');
  if (!country || !suffix) return undefined;
  return isoIndex().data.subdivisions[country]?.[suffix];
}

function lookupSubdivision(code: string): { code: string; country: string; name: string } | undefined {
  const canonical = FORMER_SUBDIVISION_CODES[code] ?? code;
  const name = subdivisionName(canonical);
  return name === undefined ? undefined : { code: canonical, country: canonical.slice(0, 2), name };
}

function findSubdivisionByName(name: string, countries: readonly string[]): { code: string; country: string; name: string } | undefined {
  const folded = foldName(name);
  if (folded === '') return undefined;
  const { data } = isoIndex();
  for (const country of countries) {
    for (const [suffix, subdivision] of Object.entries(data.subdivisions[country] ?? {})) {
      if (subdivision !== undefined && foldName(subdivision) === folded) return { code: `${country}-${suffix}`, country, name: subdivision };
    }
  }
  return undefined;
}

/**
 * ISO 3166-2 subdivision of `country`, from `US-TX` or `TX` in any letter case, returned as
 * `US-TX`. Tells an unknown code apart from a code of another country, so the caller can say
 * which field to fix.
 */
export function normalizeSubdivision(state: string, country?: string | null): SubdivisionResult {
  const countryResult = parseCountry(country);
  if (!countryResult.ok) return countryResult;
  const expectedCountry = countryResult.country;
  const input = state.trim();
  const upper = input.toUpperCase();
  // A US territory given as the country (PR) holds its own subdivision of US (US-PR).
  const territoryCode = US_TERRITORY_COUNTRIES.has(expectedCountry) ? `US-${expectedCountry}` : undefined;
  const belongs = (code: string): boolean => code.startsWith(`${expectedCountry}-`) || code === territoryCode;

  const qualified = /^([A-Z]{2})-([A-Z0-9]{1,3})$/.exec(upper);
  if (qualified) {
    const found = lookupSubdivision(upper);
    if (!found) {
      return {
        ok: false,
        reason: 'unknown_subdivision',
        message: `state '${input}' is not an ISO 3166-2 subdivision code${qualified[1] === expectedCountry ? ` of ${expectedCountry}` : ''}`,
      };
    }
    if (belongs(found.code)) return { ok: true, ...found };
    return otherCountry(input, found, expectedCountry);
  }

  if (/^[A-Z0-9]{1,3}$/.test(upper)) {
    const own = lookupSubdivision(`${expectedCountry}-${upper}`);
    if (own) return { ok: true, ...own };
    if (territoryCode && upper === expectedCountry)
      return { ok: true, ...(lookupSubdivision(territoryCode) ?? { code: territoryCode, country: 'US', name: territoryCode }) };
    for (const neighbour of NORTH_AMERICAN_COUNTRIES) {
      if (neighbour === expectedCountry) continue;
      const elsewhere = lookupSubdivision(`${neighbour}-${upper}`);
      if (elsewhere) return otherCountry(input, elsewhere, expectedCountry, ownCodeStartingWith(expectedCountry, upper));
    }
    return {
      ok: false,
      reason: 'unknown_subdivision',
      message: `state '${input}' is not an ISO 3166-2 subdivision of ${expectedCountry}${example(expectedCountry)}`,
    };
  }

  // Free text: most often a name ("Texas"). Not accepted, but the message names the code.
  const byName = findSubdivisionByName(input, [expectedCountry, ...NORTH_AMERICAN_COUNTRIES.filter((c) => c !== expectedCountry)]);
  if (byName) {
    const hint = belongs(byName.code) ? `send ${byName.code}` : `${byName.code} (${byName.name}) is in ${byName.country}, not ${expectedCountry}`;
    return {
      ok: false,
      reason: 'invalid_format',
      message: `state must be an ISO 3166-2 code such as ${expectedCountry}-XX or its suffix, not a name: for '${input}' ${hint}`,
      ...(belongs(byName.code) ? {} : { subdivision: byName }),
    };
  }
  return {
    ok: false,
    reason: 'invalid_format',
    message: `state '${input}' is not an ISO 3166-2 subdivision code (expected ${expectedCountry}-XX or XX${example(expectedCountry)})`,
  };
}

function example(country: string): string {
  const samples: Record<string, string> = { US: 'US-TX', CA: 'CA-ON', MX: 'MX-NLE' };
  const sample = samples[country];
  return sample ? `, e.g. ${sample}` : '';
}

/** A subdivision of `country` whose code starts with `prefix` (NL in MX → MX-NLE), as a hint. */
function ownCodeStartingWith(country: string, prefix: string): { code: string; name: string } | undefined {
  for (const [suffix, name] of Object.entries(isoIndex().data.subdivisions[country] ?? {})) {
    if (name !== undefined && suffix.startsWith(prefix)) return { code: `${country}-${suffix}`, name };
  }
  return undefined;
}

function otherCountry(
  input: string,
  found: { code: string; country: string; name: string },
  expectedCountry: string,
  ownCandidate?: { code: string; name: string },
): SubdivisionResult {
  const what = input.toUpperCase() === found.code ? `state ${found.code} (${found.name})` : `state '${input}' is ${found.code} (${found.name}), which`;
  const alternative = ownCandidate ? `, e.g. ${ownCandidate.code} (${ownCandidate.name})` : '';
  return {
    ok: false,
    reason: 'other_country',
    message:
      `${what} is a subdivision of ${found.country}, but country is ${expectedCountry}: ` +
      `send country ${found.country}, or a subdivision of ${expectedCountry}${alternative}`,
    subdivision: found,
  };
}
