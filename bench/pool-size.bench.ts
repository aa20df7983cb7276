/**
 * PostgreSQL connection pool size, measured:  npx tsx bench/pool-size.bench.ts [--loads 1000000] [--rounds 3] [--duration 5]
 *
 * Starts the compiled server (`npm run build` first) once per DB_POOL_SIZE on the benchmark database
 * that `npm run bench -- --db postgres` seeded (bench/results/seed-postgres-<loads>.json), pinned to
 * core 0, and drives each with autocannon from core 1: GET a load by reference and the list's page 1,
 * 10 connections, interleaved round by round. Prints medians per pool size (the figures behind the
 * default in docs/deployment.md).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { internalEnv } from './servers.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const { values: args } = parseArgs({
  options: { loads: { type: 'string', default: '1000000' }, rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '5' } },
});
const seed = JSON.parse(readFileSync(join(here, 'results', `seed-postgres-${args.loads}.json`), 'utf8')) as {
  databaseUrl: string;
  key: string;
  sampleHistoryLoads: string[];
};
const POOLS = [2, 5, 10, 20];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
} catch {
  /* no taskset */
}

async function up(port: number) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`server on ${port} did not start`);
}

const servers: { pool: number; port: number; child: ChildProcess }[] = [];
for (const [i, pool] of POOLS.entries()) {
  const port = 18_600 + i;
  const child = spawn('taskset', ['-c', '0', process.execPath, 'bin/lanebridge-compiled', 'serve'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: seed.databaseUrl,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...internalEnv({ rateLimits: false }),
      DB_POOL_SIZE: String(pool),
    },
    stdio: 'ignore',
  });
  servers.push({ pool, port, child });
  await up(port);
}

let n = 0;
const scenarios = {
  'get load by id': () => `/v2/tms-api/loads/${seed.sampleHistoryLoads[n++ % seed.sampleHistoryLoads.length]}`,
  'list page 1': () => '/v2/tms-api/loads?status=DELIVERED,COMPLETED&sort=-created_at&page=1&page_size=50',
};
const results = new Map<string, { rps: number[]; p95: number[] }>();
try {
  for (let round = 0; round < Number(args.rounds); round++) {
    for (const [name, path] of Object.entries(scenarios)) {
      for (const s of servers) {
        const latencies: number[] = [];
        const r = await new Promise<autocannon.Result>((resolve, reject) => {
          const instance = autocannon(
            {
              url: `http://127.0.0.1:${s.port}`,
              connections: 10,
              duration: Number(args.duration),
              requests: [{ method: 'GET', headers: { 'x-api-key': seed.key }, setupRequest: (req: autocannon.Request) => ({ ...req, path: path() }) }],
            },
            (err, res) => (err ? reject(err) : resolve(res)),
          );
          instance.on('response', (_c: unknown, _s: number, _b: number, ms: number) => latencies.push(ms));
        });
        latencies.sort((a, b) => a - b);
        const key = `${name}|${s.pool}`;
        const entry = results.get(key) ?? { rps: [], p95: [] };
        entry.rps.push(r.requests.average);
        entry.p95.push(Math.round((latencies[Math.floor(latencies.length * 0.95)] ?? 0) * 100) / 100);
        results.set(key, entry);
        process.stderr.write(`[pool] round ${round + 1} ${name} pool ${s.pool}: ${r.requests.average} req/s, non-2xx ${r.non2xx}\n`);
      }
    }
  }
} finally {
  for (const s of servers) s.child.kill('SIGTERM');
}
process.stdout.write('| scenario | DB_POOL_SIZE | req/s (median) | p95 ms (median) |\n|---|---:|---:|---:|\n');
for (const [key, v] of results) {
  const [name, pool] = key.split('|');
  process.stdout.write(`| ${name} | ${pool} | ${Math.round(median(v.rps))} | ${median(v.p95)} |\n`);
}
