/**
 * Geocoder benchmark, in process:  npx tsx bench/geo/geo.bench.ts [--runs 5]
 *
 * - RSS added by warmup() (fresh process, after GC), and once the time zone tiles under every US
 *   ZIP centre are decoded as well (the tile cache is then near its bound).
 * - subdivisionAt lookups/s over random points inside US/CA/MX (uniform by area), over US ZIP
 *   centres (weighted like freight: where people are), and over points just off the coast.
 * - geocodePostal lookups/s (ZIP, ZIP+4, Canadian postal codes), timezoneAt lookups/s (warm).
 * Each throughput figure is the median of --runs runs (default 5).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { allCanadianFsas, allUsZipCodes } from '../../src/geo/postal.js';
import { geocodePostal, locateSubdivision, subdivisionAt, timezoneAt, warmup } from '../../src/geo/index.js';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1] ?? 5) : 5;
const POINTS = 200_000;

// A full GC before each RSS reading, without needing `node --expose-gc`.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function rssMb(): number {
  gc();
  return process.memoryUsage().rss / 1e6;
}

/** Deterministic pseudo-random numbers (mulberry32), so runs compare. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Median lookups per second of `lookup` over `inputs`, and a checksum so work is not optimized away. */
function measure<T>(inputs: T[], lookup: (input: T) => unknown): { perSecond: number; runs: number[] } {
  const runs: number[] = [];
  let sink = 0;
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    for (const input of inputs) if (lookup(input) !== null) sink++;
    runs.push(inputs.length / ((performance.now() - started) / 1000));
  }
  if (sink < 0) console.log(sink);
  return { perSecond: median(runs), runs };
}

// Memory first, before the benchmark's own arrays exist.
const rssBefore = rssMb();
const summary = warmup();
const rssAfterWarmup = rssMb();
const zipPoints = [...allUsZipCodes()].map((z): [number, number] => [z.latitude, z.longitude]);
const tzStarted = performance.now();
for (const [lat, lon] of zipPoints) timezoneAt(lat, lon);
const tzColdMs = performance.now() - tzStarted;
const rssAfterTimezones = rssMb();

// Random points uniform in a box around North America, kept when inside a US/CA/MX polygon.
const next = random(20260301);
const landPoints: Array<[number, number]> = [];
const coastalPoints: Array<[number, number]> = [];
while (landPoints.length < POINTS) {
  const latitude = 14 + next() * (72 - 14);
  const longitude = -170 + next() * (-52 + 170);
  const hit = locateSubdivision(latitude, longitude);
  if (hit?.distanceKm === 0) landPoints.push([latitude, longitude]);
  else if (hit && coastalPoints.length < POINTS / 10) coastalPoints.push([latitude, longitude]);
}
const postalInputs: Array<[string, string]> = [];
for (const z of allUsZipCodes()) postalInputs.push([z.zip, 'US'], [`${z.zip}-1234`, 'US']);
for (const f of allCanadianFsas()) postalInputs.push([`${f.fsa} 1A1`, 'CA']);

const results: Array<[string, number, string]> = [];
const land = measure(landPoints, ([lat, lon]) => subdivisionAt(lat, lon));
results.push(['subdivisionAt, random points in US/CA/MX', land.perSecond, `${landPoints.length} points`]);
const zips = measure(zipPoints, ([lat, lon]) => subdivisionAt(lat, lon));
results.push(['subdivisionAt, US ZIP centres', zips.perSecond, `${zipPoints.length} points`]);
const coast = measure(coastalPoints, ([lat, lon]) => subdivisionAt(lat, lon));
results.push(['subdivisionAt, off the coast (nearest edge)', coast.perSecond, `${coastalPoints.length} points`]);
const postal = measure(postalInputs, ([code, country]) => (geocodePostal(code, country).ok ? 1 : null));
results.push(['geocodePostal (ZIP, ZIP+4, CA)', postal.perSecond, `${postalInputs.length} codes`]);

// Time zone tiles under the ZIP centres were decoded above: these lookups are warm.
const tz = measure(zipPoints, ([lat, lon]) => timezoneAt(lat, lon));
results.push(['timezoneAt, US ZIP centres (warm)', tz.perSecond, `${zipPoints.length} points; first pass ${tzColdMs.toFixed(0)} ms`]);

const pad = (s: string, n: number): string => s.padEnd(n);
console.log(`Node ${process.version}, ${RUNS} runs each, median; warmup ${summary.milliseconds} ms`);
console.log(`${pad('lookup', 46)}${'per second'.padStart(12)}  workload`);
for (const [name, perSecond, note] of results) console.log(`${pad(name, 46)}${Math.round(perSecond).toLocaleString('en-US').padStart(12)}  ${note}`);
console.log('');
console.log(`${pad('RSS added by warmup()', 46)}${`${(rssAfterWarmup - rssBefore).toFixed(1)} MB`.padStart(12)}`);
console.log(`${pad('RSS added, + time zone tiles under all US ZIPs', 46)}${`${(rssAfterTimezones - rssBefore).toFixed(1)} MB`.padStart(12)}`);
