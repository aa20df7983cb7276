/**
 * Dashboard pages (issue 19) on the seeded benchmark database:
 *
 *   DATABASE_URL=/tmp/lb.db npm run bench:seed -- --loads 100000
 *   npx tsx bench/dashboard.bench.ts [--runs 7] [--seed bench/results/seed.json]
 *
 * Builds the app in process on the database of bench/results/seed.json, signs a user of the seeded
 * organization in, and times each page with app.inject (server time: routing, SQL, rendering; no
 * network): one warm-up, then the median and the worst of `--runs`. Prints one JSON object. What the
 * usage recording costs the API is bench/usage.bench.ts's (over HTTP, recording on against off).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '7' }, seed: { type: 'string' } } });
const RUNS = Number(args.runs);
const seedFile = args.seed ?? join(here, 'results', 'seed.json');
if (!existsSync(seedFile)) throw new Error(`no ${seedFile}: run npm run bench:seed first`);
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
const openLoad = await db
  .selectFrom('loads')
  .select('external_reference_id')
  .where('org_id', '=', seed.orgId)
  .where('status', '=', 'ACTIVE')
  .limit(1)
  .executeTakeFirstOrThrow();
const busyLocation = await db
  .selectFrom('locations')
  .select(['id', 'external_reference_id'])
  .where('org_id', '=', seed.orgId)
  .limit(1)
  .executeTakeFirstOrThrow();
const history = await db
  .selectFrom('lane_history')
  .select(['carrier_id', 'origin_location_id', 'destination_location_id', 'equipment_type'])
  .where('org_id', '=', seed.orgId)
  .limit(1)
  .executeTakeFirstOrThrow();
const carrier = await db.selectFrom('carriers').select('external_reference_id').where('id', '=', history.carrier_id).executeTakeFirstOrThrow();
const customer = await db.selectFrom('customers').select('external_reference_id').where('org_id', '=', seed.orgId).limit(1).executeTakeFirstOrThrow();
const refOf = async (id: string) =>
  (await db.selectFrom('locations').select('external_reference_id').where('id', '=', id).executeTakeFirstOrThrow()).external_reference_id;
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
  results[url] = {
    status: warm.statusCode,
    median_ms: Math.round(median(times) * 10) / 10,
    max_ms: Math.round(Math.max(...times) * 10) / 10,
    bytes: warm.body.length,
  };
}

process.stdout.write(
  `${JSON.stringify(
    {
      loads: seed,
      pages: results,
    },
    (k, v) => (k === 'loads' ? undefined : v),
    2,
  )}\n`,
);
await app.close();
await store.close();
