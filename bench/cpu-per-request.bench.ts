/**
 * CPU per request, the server's and PostgreSQL's, for read scenarios, this tree against another checkout:
 *
 *   npx tsx bench/cpu-per-request.bench.ts --seed bench/results/seed-postgres-1000000.json \
 *     [--compare ../before] [--rounds 3] [--duration 8] [--connections 1]
 *
 * Throughput and latency at a few connections on two shared cores move by several percent from run to
 * run; CPU time spent per request does not, and it says where a change saved work (Node or the database).
 * For each scenario and round, each server in turn (this tree's `bin/lanebridge-compiled`, then the
 * compared tree's, alternating which goes first) is driven by autocannon for `--duration` seconds while
 * the server process's CPU time and the sum over every `postgres` process's CPU time are read from
 * /proc before and after; divided by the requests answered. Reads only, so both servers use the seeded
 * database itself. Server pinned to core 0, autocannon to core 1 (taskset), PostgreSQL on both.
 * Both trees must be built (`npm run build`).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuMs, internalEnv, median, pinLoadGenerator, startServer, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    compare: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '1' },
  },
});
if (!args.seed) throw new Error('--seed bench/results/seed-postgres-<loads>.json is required');
const seed = JSON.parse(readFileSync(args.seed, 'utf8')) as { databaseUrl: string; key: string; sampleHistoryLoads: string[]; sampleOpenLoads: string[] };
const ROUNDS = Number(args.rounds);
const DURATION = Number(args.duration);
const CONNECTIONS = Number(args.connections);

const hasTaskset = pinLoadGenerator();

/** CPU time of every postgres process now alive, by pid. */
function postgresCpu(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    out.set(Number(entry), cpuMs(Number(entry)));
  }
  return out;
}

const serve = (dir: string, port: number): ChildProcess =>
  startServer(
    dir,
    join(dir, 'bin/lanebridge-compiled'),
    {
      DATABASE_URL: seed.databaseUrl,
      PORT: String(port),
      ...internalEnv({ rateLimits: false, usageRecording: false }),
      WEBHOOK_WORKER: 'off',
      WORKER_PORT: '0',
    },
    hasTaskset,
  );

/** The server's own pid: the child of taskset is node itself (taskset execs it). */
const serverPid = (child: ChildProcess) => child.pid!;

let nextOpen = 0;
const scenarios: { name: string; path: () => string }[] = [
  { name: 'list page 1 (status, sort)', path: () => '/v2/tms-api/loads?status=DELIVERED,COMPLETED&sort=-created_at&page=1&page_size=50' },
  { name: 'list page 50 (status, sort)', path: () => '/v2/tms-api/loads?status=DELIVERED,COMPLETED&sort=-created_at&page=50&page_size=50' },
  { name: 'open load with recommendations', path: () => `/v2/tms-api/loads/${seed.sampleOpenLoads[nextOpen++ % seed.sampleOpenLoads.length]}` },
];

async function drive(port: number, path: () => string, seconds: number) {
  return new Promise<autocannon.Result>((res, rej) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [{ method: 'GET', headers: { 'x-api-key': seed.key }, setupRequest: (r: autocannon.Request) => ({ ...r, path: path() }) }],
      },
      (err, r) => (err ? rej(err) : res(r)),
    ),
  );
}

const trees = [{ label: 'this tree', dir: root, port: 18_711 }, ...(args.compare ? [{ label: 'compared', dir: resolve(args.compare), port: 18_712 }] : [])];
const children = trees.map((t) => serve(t.dir, t.port));
type Figures = { rps: number[]; p50: number[]; node: number[]; pg: number[] };
const figures = new Map<string, Figures>();
try {
  for (const t of trees) await waitFor(`http://127.0.0.1:${t.port}/readyz`);
  for (const s of scenarios) for (const t of trees) await drive(t.port, s.path, 2);
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of scenarios) {
      const order = round % 2 === 0 ? trees.map((_, i) => i) : trees.map((_, i) => i).reverse();
      for (const i of order) {
        const t = trees[i]!;
        const pid = serverPid(children[i]!);
        const node0 = cpuMs(pid);
        const pg0 = postgresCpu();
        const r = await drive(t.port, s.path, DURATION);
        const node1 = cpuMs(pid);
        const pg1 = postgresCpu();
        let pg = 0;
        for (const [p, after] of pg1) pg += after - (pg0.get(p) ?? 0);
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${s.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        const key = `${s.name}|${t.label}`;
        const f = figures.get(key) ?? { rps: [], p50: [], node: [], pg: [] };
        f.rps.push(r.requests.average);
        f.p50.push(r.latency.p50);
        f.node.push((node1 - node0) / r.requests.total);
        f.pg.push(pg / r.requests.total);
        figures.set(key, f);
        process.stderr.write(
          `round ${round + 1} ${s.name} [${t.label}]: ${r.requests.average} req/s, Node ${((node1 - node0) / r.requests.total).toFixed(2)} ms + PostgreSQL ${(pg / r.requests.total).toFixed(2)} ms per request\n`,
        );
      }
    }
  }
  process.stdout.write(
    `| scenario (${CONNECTIONS} connection${CONNECTIONS > 1 ? 's' : ''}) | tree | req/s | p50 ms | CPU per request: Node ms | PostgreSQL ms | total ms |\n|---|---|---:|---:|---:|---:|---:|\n`,
  );
  for (const s of scenarios) {
    for (const t of trees) {
      const f = figures.get(`${s.name}|${t.label}`)!;
      const node = median(f.node);
      const pg = median(f.pg);
      process.stdout.write(
        `| ${s.name} | ${t.label} | ${median(f.rps).toFixed(0)} | ${median(f.p50).toFixed(2)} | ${node.toFixed(2)} | ${pg.toFixed(2)} | ${(node + pg).toFixed(2)} |\n`,
      );
    }
  }
} finally {
  for (const c of children) c.kill('SIGTERM');
}
