/**
 * A broker's daily push (the batch-path issue's scenario): POST /batch/loads with 100 NEW loads, 2 stops
 * each on 10 ZIP-code locations over 10 lanes, two thirds DELIVERED with a carrier (lane history,
 * analytics), one third open (ACTIVE, recommendations follow-up), events on. This tree against another
 * checkout, in one run:
 *
 *   npx tsx bench/batch-new-loads.bench.ts --base ../base [--db sqlite|postgres|both] [--batches 30] [--warmup 5]
 *     [--block 1] [--settle 1500] [--compiled] [--profile DIR] [--no-pin]
 *
 * For each engine, each tree gets a fresh database (a SQLite file; a PostgreSQL database beside
 * LANEBRIDGE_BENCH_PG_URL's), an organization and key made with its own CLI, its records (10 locations,
 * 3 customers, 12 carriers) and a server (this tree on core 0, the other on core 1, when taskset exists). Batches
 * then alternate between the two servers, one at a time, each with references never sent before; the
 * figure is the wall time of the request as the client sees it. Every item must succeed. Without
 * --base only this tree is measured.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PG_ADMIN_URL } from './scratch-databases.js';
import { spawn } from 'node:child_process';
import { internalEnv, median, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    db: { type: 'string', default: 'both' },
    batches: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    operation: { type: 'string', default: 'upsert' },
    // Writes a V8 CPU profile of each server into this folder when it stops (where the time goes).
    profile: { type: 'string' },
    // Each server free to use both cores (its SQLite checkpoint thread beside its event loop), not pinned.
    'no-pin': { type: 'boolean', default: false },
    // Batches sent to one tree in a row before the other tree's turn (1: the trees alternate batch by
    // batch, and one tree's follow-up runs beside the other's batches); with more, each block is followed
    // by --settle ms of quiet so its follow-up ends before the other tree's block.
    block: { type: 'string', default: '1' },
    settle: { type: 'string', default: '1500' },
    // Each tree's compiled build (`npm run build` in it first; bin/lanebridge-compiled), as production runs
    // it, instead of the TypeScript sources through tsx's loader: profiles then name every function.
    compiled: { type: 'boolean', default: false },
  },
});
const BATCHES = Number(args.batches);
const WARMUP = Number(args.warmup);
const BLOCK = Math.max(1, Number(args.block));
const SETTLE_MS = Number(args.settle);
// Each tree's server on a core of its own (taskset, when present): the recommendations follow-up a
// batch leaves behind (beside the requests, D11) then runs beside that server's own next batch, as in a
// deployment, not beside the other tree's batch. The load generator and PostgreSQL share the cores.
let hasTaskset = !args['no-pin'];
if (hasTaskset)
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
  } catch {
    hasTaskset = false;
  }
const BIN = args.compiled ? 'bin/lanebridge-compiled' : 'bin/lanebridge';
function startServer(cwd: string, bin: string, env: Record<string, string>, core: number): ChildProcess {
  // BENCH_SERVER_NODE_ARGS: node options for each server (a --require'd statement timer, say).
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const argv = [...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args.profile)}`] : []), ...nodeArgs, bin, 'serve'];
  const [cmd, cmdArgs] = hasTaskset ? ['taskset', ['-c', String(core), process.execPath, ...argv]] : [process.execPath, argv];
  // BENCH_SERVER_LOG=<file>: each server's log (its stdout, at BENCH_SERVER_LOG_LEVEL, default warn) is
  // appended there instead of dropped; at info it has each request's responseTime as the server saw it.
  const out = process.env.BENCH_SERVER_LOG ? openSync(process.env.BENCH_SERVER_LOG, 'a') : 'ignore';
  const level = process.env.BENCH_SERVER_LOG_LEVEL ?? 'warn';
  const child = spawn(cmd as string, cmdArgs as string[], { cwd, env: { ...process.env, LOG_LEVEL: level, ...env }, stdio: ['ignore', out, 'inherit'] });
  if (typeof out === 'number') closeSync(out);
  return child;
}

const CITIES = [
  ['DAL', '75201', 'TX'],
  ['HOU', '77002', 'TX'],
  ['CHI', '60601', 'IL'],
  ['ATL', '30303', 'GA'],
  ['LAX', '90012', 'CA'],
  ['MEM', '38103', 'TN'],
  ['IND', '46204', 'IN'],
  ['DEN', '80202', 'CO'],
  ['PHX', '85004', 'AZ'],
  ['NWK', '07102', 'NJ'],
] as const;
const CARRIERS = 12;

/** Batch `round` of 100 new loads: item i runs lane i % 10, two thirds delivered with a carrier. */
function newLoads(tag: string, round: number) {
  return {
    items: Array.from({ length: 100 }, (_, i) => {
      const lane = i % 10;
      const from = CITIES[lane]![0];
      const to = CITIES[(lane + 3) % 10]![0];
      const day = 1 + ((round + i) % 27);
      const d = (n: number) => String(n).padStart(2, '0');
      const delivered = i % 3 !== 2;
      const ref = `NEW-${tag}-${round}-${i}`;
      return {
        operation: args.operation,
        external_reference_id: ref,
        load: {
          external_reference_id: ref,
          status: delivered ? 'DELIVERED' : 'ACTIVE',
          equipment_type: 'DRY_VAN',
          transport_mode: 'FTL',
          customer_external_reference_id: `CUST-${i % 3}`,
          ...(delivered ? { carrier_external_reference_id: `CAR-${(i * 7 + round) % CARRIERS}` } : {}),
          stops: [
            {
              stop_type: 'PICKUP',
              location_external_reference_id: from,
              early_arrival: `2026-10-${d(day)}T08:00:00Z`,
              late_arrival: `2026-10-${d(day)}T10:00:00Z`,
            },
            {
              stop_type: 'DELIVERY',
              location_external_reference_id: to,
              early_arrival: `2026-10-${d(day + 1)}T08:00:00Z`,
              late_arrival: `2026-10-${d(day + 1)}T12:00:00Z`,
            },
          ],
          financial_rates: delivered
            ? [
                { rate_entity: 'CUSTOMER', amount: 2400 + i, currency: 'USD', rate_type: 'LINEHAUL' },
                { rate_entity: 'CARRIER', amount: 1900 + i, currency: 'USD', rate_type: 'LINEHAUL' },
              ]
            : [{ rate_entity: 'CUSTOMER', amount: 2400 + i, currency: 'USD', rate_type: 'LINEHAUL' }],
        },
      };
    }),
  };
}

interface Tree {
  name: string;
  dir: string;
}

interface Running {
  tree: Tree;
  port: number;
  key: string;
  child: ChildProcess;
  ms: number[];
  /** The CPU time of the server's event-loop thread (user + system) over the measured batches, in ms. */
  cpuMs: number;
}

/**
 * The CPU time of a process's main thread so far in ms (Linux /proc; 0 elsewhere): the event loop, which
 * every request and the follow-up share (V8's GC and compiler threads and the checkpoint worker run
 * beside it). Less sensitive to other work on the machine than wall time.
 */
function cpuTimeMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

function cli(tree: Tree, databaseUrl: string, argv: string[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, [join(tree.dir, 'bin/lanebridge'), ...argv], {
    cwd: tree.dir,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  return JSON.parse(out) as Record<string, unknown>;
}

async function send(
  port: number,
  key: string,
  path: string,
  body: unknown,
): Promise<{ ms: number; json: { success_count?: number; error_count?: number; results?: unknown[] } }> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { success_count?: number; error_count?: number };
  const ms = performance.now() - started;
  if (res.status !== 200 || json.error_count !== 0) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 600)}`);
  return { ms, json };
}

async function start(running: Running[], tree: Tree, databaseUrl: string, port: number): Promise<void> {
  const org = cli(tree, databaseUrl, ['org', 'create', '--name', `bench ${tree.name}`]);
  const key = cli(tree, databaseUrl, ['key', 'create', '--org', String(org.id), '--name', 'bench', '--system', 'bench', '--scopes', 'all']);
  const child = startServer(
    tree.dir,
    join(tree.dir, BIN),
    { DATABASE_URL: databaseUrl, PORT: String(port), ...internalEnv({ rateLimits: false }) },
    running.length % 2,
  );
  const k = String(key.key);
  running.push({ tree, port, key: k, child, ms: [], cpuMs: 0 });
  await waitFor(`http://127.0.0.1:${port}/readyz`);
  await send(port, k, '/v2/tms-api/batch/locations', {
    items: CITIES.map(([ref, zip, state]) => ({
      operation: 'upsert',
      external_reference_id: ref,
      location: { external_reference_id: ref, name: `${ref} dock`, postal_code: zip, state, country: 'US' },
    })),
  });
  await send(port, k, '/v2/tms-api/batch/customers', {
    items: [0, 1, 2].map((i) => ({
      operation: 'upsert',
      external_reference_id: `CUST-${i}`,
      customer: { external_reference_id: `CUST-${i}`, name: `Customer ${i}` },
    })),
  });
  await send(port, k, '/v2/tms-api/batch/carriers', {
    items: Array.from({ length: CARRIERS }, (_, i) => ({
      operation: 'upsert',
      external_reference_id: `CAR-${i}`,
      carrier: { external_reference_id: `CAR-${i}`, name: `Carrier ${i}`, dot_number: String(1000000 + i) },
    })),
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

async function databases(engine: 'sqlite' | 'postgres', count: number): Promise<{ urls: string[]; drop: () => Promise<void> }> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'lanebridge-batch-bench-'));
    return { urls: Array.from({ length: count }, (_, i) => join(dir, `tree${i}.db`)), drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const names = Array.from({ length: count }, (_, i) => `lanebridge_batch_bench_${process.pid}_${i}`);
  for (const n of names) {
    await admin.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${n}`);
  }
  const urls = names.map((n) => {
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${n}`;
    return u.toString();
  });
  return {
    urls,
    drop: async () => {
      for (const n of names) await admin.query(`DROP DATABASE IF EXISTS ${n} WITH (FORCE)`);
      await admin.end();
    },
  };
}

const trees: Tree[] = [{ name: 'this tree', dir: root }, ...(args.base ? [{ name: `base (${args.base})`, dir: resolve(args.base) }] : [])];
if (args.compiled) for (const tree of trees) execFileSync('npm', ['run', 'build'], { cwd: tree.dir, stdio: ['ignore', 'ignore', 'inherit'] });
const engines = (args.db === 'both' ? ['sqlite', 'postgres'] : [args.db]) as ('sqlite' | 'postgres')[];
const rows: string[] = [];
for (const engine of engines) {
  const dbs = await databases(engine, trees.length);
  const running: Running[] = [];
  try {
    for (const [i, tree] of trees.entries()) await start(running, tree, dbs.urls[i]!, 18_700 + i);
    for (let first = 0; first < WARMUP + BATCHES; first += BLOCK) {
      // Alternate which tree goes first, so neither always follows the other's work.
      const order = (first / BLOCK) % 2 === 0 ? running : [...running].reverse();
      for (const r of order) {
        for (let round = first; round < Math.min(first + BLOCK, WARMUP + BATCHES); round++) {
          if (round === WARMUP) r.cpuMs = -cpuTimeMs(r.child.pid);
          const { ms } = await send(r.port, r.key, '/v2/tms-api/batch/loads', newLoads(r.tree.name.slice(0, 4), round));
          if (round >= WARMUP) r.ms.push(ms);
        }
        // A block's follow-up finishes before the other tree's block starts (it runs beside its own tree's
        // next batches, as in a deployment, not beside the other tree's).
        if (BLOCK > 1 && running.length > 1) await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      }
    }
    // What the measured batches left behind (the follow-up) counts too: a moment for it to finish.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const r of running) r.cpuMs += cpuTimeMs(r.child.pid);
  } finally {
    await Promise.all(running.map((r) => stop(r.child)));
    await dbs.drop();
  }
  const [mine, base] = running;
  const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * q) / 100))]!;
  const cpu = (r: Running) => r.cpuMs / r.ms.length;
  for (const r of running)
    rows.push(
      `| ${engine} | ${r.tree.name} | ${median(r.ms).toFixed(1)} | ${p(r.ms, 90).toFixed(1)} | ${Math.min(...r.ms).toFixed(1)} | ${cpu(r).toFixed(1)} | ${r.ms.length} |`,
    );
  if (mine && base) rows.push(`| ${engine} | this ÷ base | ${(median(mine.ms) / median(base.ms)).toFixed(2)} | | | ${(cpu(mine) / cpu(base)).toFixed(2)} | |`);
}
process.stdout.write(
  `\n| engine | tree | median ms | p90 ms | min ms | event-loop CPU ms a batch | batches |\n|---|---|---:|---:|---:|---:|---:|\n${rows.join('\n')}\n`,
);
