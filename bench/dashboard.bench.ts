/**
 * Dashboard pages (issue 19) on the seeded benchmark database:
 *
 *   DATABASE_URL=/tmp/lb.db npm run bench:seed -- --loads 100000
 *   npx tsx bench/dashboard.bench.ts [--runs 7]
 *
 * Builds the app in process on the database of bench/results/seed.json, signs a user of the seeded
 * organization in, and times each page with app.inject (server time: routing, SQL, rendering; no
 * network): one warm-up, then the median and the worst of `--runs`. Also the usage hook's own cost per
 * request (src/modules/ops/usage.ts: count + failure capture, in memory) against a GET /loads/{ref},
 * the request the issue asks the counters to stay within 3% of. Prints one JSON object.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';
import { usageRecorder } from '../src/modules/ops/usage.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '7' } } });
const RUNS = Number(args.runs);
const seedFile = join(here, 'results', 'seed.json');
if (!existsSync(seedFile)) throw new Error('no bench/results/seed.json: run npm run bench:seed first');
const seed = JSON.parse(readFileSync(seedFile, 'utf8')) as { databaseUrl: string; orgId: string; key: string; sampleHistoryLoads: string[] };

const store = openDataStore(seed.databaseUrl, { poolSize: 5 });
await store.migrate();
const config = { ...loadConfig({}), databaseUrl: seed.databaseUrl, rateLimits: false };
const built = await buildApp({ config, store, logger: false, recommendationFollowUp: 'manual' });
const { app, services } = built;

const email = `bench-${Date.now()}@example.com`;
const password = 'dashboard bench password';
await services.accounts.createUser(seed.orgId, { email, name: 'Bench User', password });
const form = await app.inject({ method: 'GET', url: '/signin' });
const formCookie = form.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
const signIn = await app.inject({
  method: 'POST',
  url: '/signin',
  headers: { cookie: formCookie, 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
});
const cookie = signIn.cookies.map((c) => `${c.name}=${c.value}`).join('; ');

// Sample records: an open load, a busy location, carrier and customer, the busiest lane.
const db = store.db;
const openLoad = await db.selectFrom('loads').select('external_reference_id').where('org_id', '=', seed.orgId).where('status', '=', 'ACTIVE').limit(1).executeTakeFirstOrThrow();
const busyLocation = await db.selectFrom('locations').select(['id', 'external_reference_id']).where('org_id', '=', seed.orgId).limit(1).executeTakeFirstOrThrow();
const history = await db.selectFrom('lane_history').select(['carrier_id', 'origin_location_id', 'destination_location_id', 'equipment_type']).where('org_id', '=', seed.orgId).limit(1).executeTakeFirstOrThrow();
const carrier = await db.selectFrom('carriers').select('external_reference_id').where('id', '=', history.carrier_id).executeTakeFirstOrThrow();
const customer = await db.selectFrom('customers').select('external_reference_id').where('org_id', '=', seed.orgId).limit(1).executeTakeFirstOrThrow();
const refOf = async (id: string) => (await db.selectFrom('locations').select('external_reference_id').where('id', '=', id).executeTakeFirstOrThrow()).external_reference_id;
const lane = `/lanes/${encodeURIComponent(await refOf(history.origin_location_id))}/${encodeURIComponent(await refOf(history.destination_location_id))}/${history.equipment_type}`;

const pages = [
  '/',
  '/loads',
  '/loads?equipment=REEFER&origin=US-TX',
  '/loads?sort=pickup_at&from=2026-01-01&to=2026-12-31',
  '/loads?page=3999',
  `/loads/${encodeURIComponent(openLoad.external_reference_id)}`,
  '/locations',
  `/locations/${encodeURIComponent(busyLocation.external_reference_id)}`,
  '/carriers',
  `/carriers/${encodeURIComponent(carrier.external_reference_id)}`,
  `/customers/${encodeURIComponent(customer.external_reference_id)}`,
  '/lanes',
  lane,
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: Record<string, { status: number; median_ms: number; max_ms: number; bytes: number }> = {};
for (const url of pages) {
  const warm = await app.inject({ method: 'GET', url, headers: { cookie } });
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await app.inject({ method: 'GET', url, headers: { cookie } });
    times.push(performance.now() - t0);
  }
  results[url] = { status: warm.statusCode, median_ms: Math.round(median(times) * 10) / 10, max_ms: Math.round(Math.max(...times) * 10) / 10, bytes: warm.body.length };
}

// The usage hook's cost per request, measured on its own (in memory, no I/O) against GET /loads/{ref}.
const getLoad = `/v2/tms-api/loads/${encodeURIComponent(seed.sampleHistoryLoads[0]!)}`;
for (let i = 0; i < 200; i++) await app.inject({ method: 'GET', url: getLoad, headers: { 'x-api-key': seed.key } });
const N = 2000;
let t0 = performance.now();
for (let i = 0; i < N; i++) await app.inject({ method: 'GET', url: getLoad, headers: { 'x-api-key': seed.key } });
const getLoadUs = ((performance.now() - t0) / N) * 1000;
const usage = usageRecorder({ db: store.db, clock: { now: () => new Date() }, flushMs: 0 });
const principal = { orgId: seed.orgId, keyId: 'key_bench' };
const req = { principal, method: 'GET', url: getLoad, routeOptions: { url: getLoad }, params: {}, body: undefined, id: 'r' } as never;
const reply = { statusCode: 200, getHeader: () => undefined } as never;
t0 = performance.now();
for (let i = 0; i < 200_000; i++) {
  usage.captureFailures(req, reply, '{}');
  usage.count(principal, 200);
}
const hookUs = ((performance.now() - t0) / 200_000) * 1000;
await usage.flush();

process.stdout.write(
  `${JSON.stringify(
    {
      loads: seed,
      pages: results,
      usage_hook: { get_load_us_in_process: Math.round(getLoadUs), hook_us: Math.round(hookUs * 100) / 100, share: `${((hookUs / getLoadUs) * 100).toFixed(2)}%` },
    },
    (k, v) => (k === 'loads' ? undefined : v),
    2,
  )}\n`,
);
await app.close();
await store.close();
