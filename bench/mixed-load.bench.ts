/**
 * Writes of one load under contention (docs/reliability.md "One load"): a served app takes a mixed load
 * whose writes keep meeting on the same few loads, and every 5xx is counted.
 *
 *   npx tsx bench/mixed-load.bench.ts [--db postgres|sqlite|both] [--duration 60] [--workers 12] [--compare <checkout>]
 *
 * For each engine: a fresh database seeded by bench/seed.ts (1,000 loads: a tenant, its key, history to
 * read), the server from its TypeScript sources (bin/lanebridge), rate limits off. Then:
 *   - mixed: `--workers` clients, each sending one request after another for `--duration` seconds, the
 *     kind drawn by weight: 35% GET of a load (shared or seeded), 30% PUT of one of 10 shared loads (new
 *     stops, rates and description each time), 20% tracking event at stop 1 or 2 of a shared load (a new
 *     event_id, "correction": true), 15% batch upsert of 20 loads (the 10 shared, 10 of a pool of 40 that
 *     starts absent, in random order). Figures per kind: requests, 5xx, other non-2xx, p50 / p95 ms.
 *   - cost of the lock: one client, 200 PUTs of one load, then 20 batch upserts of 100 loads (p50 / p95).
 * `--compare <dir>`: a checkout of the code before (its node_modules linked), run the same way on the
 * same database after this tree (`--compare-first`: before it, which an older tree needs when this one
 * adds a migration), for the figures side by side.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, request } from './http-client.js';
import { onScratchDatabases } from './scratch-databases.js';
import { internalEnv, pinLoadGenerator, startServer, stopServer, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'postgres' },
    duration: { type: 'string', default: '60' },
    workers: { type: 'string', default: '12' },
    compare: { type: 'string' },
    'compare-first': { type: 'boolean', default: false },
  },
});
const DURATION_MS = Number(args.duration) * 1000;
const WORKERS = Number(args.workers);
const log = (msg: string) => process.stderr.write(`[mixed-bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const pinned = pinLoadGenerator();

type Kind = 'get' | 'put' | 'tracking' | 'batch';
const WEIGHTS: [Kind, number][] = [
  ['get', 35],
  ['put', 30],
  ['tracking', 20],
  ['batch', 15],
];
const SHARED = Array.from({ length: 10 }, (_, i) => `MIX-SHARED-${i}`);
const POOL = Array.from({ length: 40 }, (_, i) => `MIX-POOL-${i}`);

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const kindOf = (): Kind => {
  let r = Math.random() * 100;
  for (const [kind, w] of WEIGHTS) if ((r -= w) < 0) return kind;
  return 'get';
};

/** A load's changeable parts, different each call: 2–4 stops, two rates, a description naming the variant. */
function variant() {
  const v = Math.floor(Math.random() * 1_000_000);
  const count = 2 + (v % 3);
  const at = (day: number, hour: number) => new Date(Date.UTC(2026, 2, day, hour)).toISOString();
  const hour = v % 20;
  return {
    description: `variant ${v}`,
    stops: Array.from({ length: count }, (_, i) => ({
      stop_type: i === 0 ? 'Pickup' : i === count - 1 ? 'Delivery' : 'Both',
      location_external_reference_id: i % 2 === 0 ? 'MIX-DAL' : 'MIX-HOU',
      early_arrival: at(2 + i, hour),
      late_arrival: at(2 + i, hour + 2),
    })),
    financial_rates: [
      { rate_entity: 'CARRIER', amount: 1000 + (v % 500) },
      { rate_entity: 'CUSTOMER', amount: 2000 + (v % 500) },
    ],
  };
}
const newLoad = (ref: string) => ({
  external_reference_id: ref,
  equipment_type: 'DRY_VAN',
  transport_mode: 'FTL',
  customer_external_reference_id: 'MIX-CUST',
  ...variant(),
});
const upserts = (refs: string[]) => ({ items: refs.map((ref) => ({ operation: 'upsert', load: newLoad(ref) })) });
const shuffled = <T>(xs: T[]): T[] =>
  xs
    .map((x) => [Math.random(), x] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([, x]) => x);

interface Tally {
  latencies: number[];
  serverErrors: number;
  otherErrors: number;
  samples: string[];
}

type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; text: string }>;

async function fixtures(send: Send): Promise<void> {
  for (const [path, body] of [
    ['/v2/tms-api/customers', { external_reference_id: 'MIX-CUST', name: 'Mixed Foods' }],
    ['/v2/tms-api/locations', { external_reference_id: 'MIX-DAL', name: 'Dallas DC', postal_code: '75201', state: 'TX' }],
    ['/v2/tms-api/locations', { external_reference_id: 'MIX-HOU', name: 'Houston Port', postal_code: '77002', state: 'TX' }],
  ] as const) {
    const res = await send('POST', path, body);
    if (res.status !== 201 && res.status !== 409) throw new Error(`${path}: ${res.status} ${res.text}`);
  }
  const res = await send('POST', '/v2/tms-api/batch/loads', upserts(SHARED));
  if (res.status !== 200 || (JSON.parse(res.text) as { error_count: number }).error_count > 0) throw new Error(`shared loads: ${res.text}`);
}

/** One request of `kind`; a batch's failed items count as its answer's (a 5xx item is a 5xx). */
async function one(send: Send, kind: Kind, reads: string[], run: string, seq: number): Promise<{ status: number; text: string }> {
  if (kind === 'get') return send('GET', `/v2/tms-api/loads/${encodeURIComponent(pick(reads))}`);
  if (kind === 'put') return send('PUT', `/v2/tms-api/loads/${pick(SHARED)}`, variant());
  if (kind === 'tracking') {
    const body = {
      event_id: `mix-${run}-${seq}`,
      type: 'ARRIVED',
      stop_number: 1 + (seq % 2),
      occurred_at: new Date(Date.UTC(2026, 2, 2, seq % 24, seq % 60)).toISOString(),
      correction: true,
    };
    return send('POST', `/v2/tms-api/loads/${pick(SHARED)}/tracking-events`, body);
  }
  const res = await send('POST', '/v2/tms-api/batch/loads', upserts(shuffled([...SHARED, ...shuffled([...POOL]).slice(0, 10)])));
  if (res.status !== 200) return res;
  const worst = Math.max(0, ...(JSON.parse(res.text) as { results: { error?: { status: number } }[] }).results.map((r) => r.error?.status ?? 0));
  return worst > 0 ? { status: worst, text: res.text } : res;
}

async function mixed(send: Send, reads: string[]): Promise<Map<Kind, Tally>> {
  const tallies = new Map<Kind, Tally>(WEIGHTS.map(([k]) => [k, { latencies: [], serverErrors: 0, otherErrors: 0, samples: [] }]));
  const until = Date.now() + DURATION_MS;
  const run = Date.now().toString(36);
  let seq = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (Date.now() < until) {
        const kind = kindOf();
        const started = performance.now();
        const res = await one(send, kind, reads, run, seq++);
        const tally = tallies.get(kind)!;
        tally.latencies.push(performance.now() - started);
        if (res.status >= 500) {
          tally.serverErrors++;
          if (tally.samples.length < 3) tally.samples.push(res.text.slice(0, 300));
        } else if (res.status >= 300) {
          tally.otherErrors++;
          if (tally.samples.length < 3) tally.samples.push(`${res.status} ${res.text.slice(0, 300)}`);
        }
      }
    }),
  );
  return tallies;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 10) / 10;
};

/** One client: PUTs of one load, then batch upserts of 100 loads (what the lock costs a write alone). */
async function alone(send: Send): Promise<{ put: number[]; batch: number[] }> {
  const put: number[] = [];
  const batch: number[] = [];
  const hundred = Array.from({ length: 100 }, (_, i) => `MIX-HUNDRED-${i}`);
  await send('POST', '/v2/tms-api/batch/loads', upserts(hundred));
  for (let i = 0; i < 220; i++) {
    const started = performance.now();
    const res = await send('PUT', `/v2/tms-api/loads/${SHARED[0]}`, variant());
    if (res.status !== 200) throw new Error(`PUT alone: ${res.status} ${res.text}`);
    if (i >= 20) put.push(performance.now() - started);
  }
  for (let i = 0; i < 23; i++) {
    const started = performance.now();
    const res = await send('POST', '/v2/tms-api/batch/loads', upserts(hundred));
    if (res.status !== 200 || (JSON.parse(res.text) as { error_count: number }).error_count > 0) throw new Error(`batch alone: ${res.text.slice(0, 300)}`);
    if (i >= 3) batch.push(performance.now() - started);
  }
  return { put, batch };
}

interface Row {
  engine: string;
  tree: string;
  kind: string;
  requests: number;
  serverErrors: number;
  otherErrors: number;
  p50: number;
  p95: number;
}

async function measureTree(
  engine: 'sqlite' | 'postgres',
  url: string,
  tree: string,
  dir: string,
  seed: { key: string; sampleOpenLoads: string[] },
): Promise<Row[]> {
  const port = await freePort();
  const child = startServer(
    dir,
    join(dir, 'bin/lanebridge'),
    { DATABASE_URL: url, PORT: String(port), ...internalEnv({ rateLimits: false, usageRecording: false }), WEBHOOK_WORKER: 'off', WORKER_PORT: '0' },
    pinned,
  );
  const send: Send = (method, path, body) => request(port, method, path, seed.key, body);
  const rows: Row[] = [];
  const row = (kind: string, latencies: number[], serverErrors = 0, otherErrors = 0) => {
    const r = { engine, tree, kind, requests: latencies.length, serverErrors, otherErrors, p50: percentile(latencies, 50), p95: percentile(latencies, 95) };
    log(`${engine} ${tree} ${kind}: ${r.requests} requests, ${serverErrors} × 5xx, ${otherErrors} other non-2xx, p50 ${r.p50} / p95 ${r.p95} ms`);
    rows.push(r);
  };
  try {
    await waitFor(`http://127.0.0.1:${port}/readyz`);
    await fixtures(send);
    const cost = await alone(send);
    row('PUT of one load, alone', cost.put);
    row('batch upsert of 100 loads, alone', cost.batch);
    log(`${engine} ${tree}: mixed load, ${WORKERS} clients, ${DURATION_MS / 1000} s`);
    const tallies = await mixed(send, [...SHARED, ...seed.sampleOpenLoads.slice(0, 50)]);
    for (const [kind, t] of tallies) {
      row(`mixed: ${kind}`, t.latencies, t.serverErrors, t.otherErrors);
      for (const s of t.samples) log(`  ${kind} sample: ${s}`);
    }
  } finally {
    await stopServer(child);
  }
  return rows;
}

async function measure(engine: 'sqlite' | 'postgres', url: string): Promise<Row[]> {
  const trees: [string, string][] = [['this tree', root], ...(args.compare ? [['compared', resolve(args.compare)] as [string, string]] : [])];
  if (args['compare-first']) trees.reverse();
  // Seeded by the first tree to run, with its own migrations: the later tree migrates forward (an older
  // tree refuses a database that has migrations it does not know; --compare-first puts it first).
  const seedOut = join(mkdtempSync(join(tmpdir(), 'lanebridge-mixed-seed-')), 'seed.json');
  const seeder = trees[0]![1];
  execFileSync(process.execPath, ['--import', 'tsx', join(seeder, 'bench/seed.ts'), '--loads', '1000', '--reset', '--out', seedOut], {
    cwd: seeder,
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const seed = JSON.parse(readFileSync(seedOut, 'utf8')) as { key: string; sampleOpenLoads: string[] };
  rmSync(dirname(seedOut), { recursive: true, force: true });
  const rows: Row[] = [];
  for (const [tree, dir] of trees) rows.push(...(await measureTree(engine, url, tree, dir, seed)));
  return rows;
}

const rows = await onScratchDatabases(args.db!, 'mixed', measure);
process.stdout.write(
  `\n| engine | tree | kind | requests | 5xx | other non-2xx | p50 / p95 ms |\n|---|---|---|---:|---:|---:|---:|\n${rows
    .map((r) => `| ${r.engine} | ${r.tree} | ${r.kind} | ${r.requests.toLocaleString('en-US')} | ${r.serverErrors} | ${r.otherErrors} | ${r.p50} / ${r.p95} |`)
    .join('\n')}\n`,
);
if (rows.some((r) => r.tree === 'this tree' && r.serverErrors > 0)) process.exitCode = 1;
