/**
 * What the dashboard's usage recording (API usage per key and hour, the failed-writes log; issue 19:
 * at most 3 % on the get-load benchmark) costs a read:
 *
 *   npx tsx bench/usage.bench.ts --seed bench/results/seed-sqlite-100000.json [--rounds 5] [--duration 8]
 *
 * Two servers on the seeded database (bench/seed.ts, or `npm run bench` which seeds), one with
 * USAGE_RECORDING=on (the default), one with it off, each driven in turn with the benchmark's "get load
 * by id" (10 connections, the seed's history loads in turn) by autocannon from this process, alternating
 * which goes first; medians over rounds, ratio = median of per-round throughput ratios (off ÷ on, so
 * above 1 is what recording costs). Server on core 0 and load generator on core 1 when taskset exists.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({ options: { seed: { type: 'string' }, rounds: { type: 'string', default: '5' }, duration: { type: 'string', default: '8' } } });
if (!args.seed) throw new Error('--seed bench/results/seed-<engine>-<loads>.json is required');
const seed = JSON.parse(readFileSync(args.seed, 'utf8')) as { databaseUrl: string; key: string; sampleHistoryLoads: string[] };
const ROUNDS = Number(args.rounds);
const DURATION = Number(args.duration);

const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (hasTaskset) execFileSync('taskset', ['-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });

function serve(port: number, usage: 'on' | 'off'): ChildProcess {
  const argv = [join(root, 'bin/lanebridge'), 'serve'];
  const [cmd, a] = hasTaskset ? ['taskset', ['-c', '0', process.execPath, ...argv]] : [process.execPath, argv];
  return spawn(cmd as string, a as string[], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: seed.databaseUrl, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMITS: 'off', DB_POOL_SIZE: '10', USAGE_RECORDING: usage },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function waitFor(url: string) {
  for (let i = 0; i < 3000; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

let next = 0;
async function getLoads(port: number, seconds: number): Promise<{ rps: number }> {
  const res = await new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: 10,
        duration: seconds,
        requests: [{ method: 'GET', headers: { 'x-api-key': seed.key }, setupRequest: (r: autocannon.Request) => ({ ...r, path: `/v2/tms-api/loads/${seed.sampleHistoryLoads[next++ % seed.sampleHistoryLoads.length]}` }) }],
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
  if (res.non2xx > 0 || res.errors > 0) throw new Error(`${res.non2xx} non-2xx answers, ${res.errors} errors`);
  return { rps: res.requests.average };
}

const servers = { on: { port: 18_601, child: serve(18_601, 'on') }, off: { port: 18_602, child: serve(18_602, 'off') } };
try {
  for (const s of Object.values(servers)) await waitFor(`http://127.0.0.1:${s.port}/readyz`);
  for (const s of Object.values(servers)) await getLoads(s.port, 3);
  const rps: Record<'on' | 'off', number[]> = { on: [], off: [] };
  const ratios: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const got: Record<string, number> = {};
    for (const which of i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      got[which] = (await getLoads(servers[which].port, DURATION)).rps;
      rps[which].push(got[which]!);
    }
    ratios.push(got.off! / got.on!);
  }
  process.stdout.write(
    `| get load by id, 10 connections | usage recording on | off | off ÷ on |\n|---|---:|---:|---:|\n| req/s (median of ${ROUNDS} rounds of ${DURATION} s) | ${median(rps.on).toFixed(0)} | ${median(rps.off).toFixed(0)} | ${median(ratios).toFixed(3)} |\n`,
  );
} finally {
  for (const s of Object.values(servers)) s.child.kill('SIGTERM');
}
