/**
 * What the dashboard's usage recording (API usage per key and hour, the failed-writes log; issue 19:
 * at most 3 % on the get-load benchmark) costs a read:
 *
 *   npx tsx bench/usage.bench.ts --seed bench/results/seed-sqlite-100000.json [--rounds 10] [--duration 8] [--control]
 *
 * Each round starts two servers on the seeded database (bench/seed.ts, or `npm run bench` which seeds),
 * one with usage recording on (the default), one with it off (config.usageRecording, internalEnv), warms both, then drives each in turn with
 * the benchmark's "get load by id" (10 connections, the seed's history loads in turn) by autocannon from
 * this process, alternating which goes first, and stops them. Ratio = median of per-round throughput
 * ratios (off ÷ on, so above 1 is what recording costs). `--control` runs both servers with recording
 * off, to show the method's own spread. Servers on core 0 and load generator on core 1 when taskset exists.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { getLoadBench, internalEnv, median, pinLoadGenerator, startServer, stopServer, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    rounds: { type: 'string', default: '10' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '4' },
    control: { type: 'boolean', default: false },
  },
});
if (!args.seed) throw new Error('--seed bench/results/seed-<engine>-<loads>.json is required');
const seed = JSON.parse(readFileSync(args.seed, 'utf8')) as { databaseUrl: string; key: string; sampleHistoryLoads: string[] };
const ROUNDS = Number(args.rounds);
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);

const hasTaskset = pinLoadGenerator();

const serve = (port: number, usage: 'on' | 'off'): ChildProcess =>
  startServer(
    root,
    join(root, 'bin/lanebridge'),
    { DATABASE_URL: seed.databaseUrl, PORT: String(port), DB_POOL_SIZE: '10', ...internalEnv({ rateLimits: false, usageRecording: usage === 'on' }) },
    hasTaskset,
  );

const getLoads = async (port: number, seconds: number) => ({ rps: await getLoadRps(port, seconds) });
const getLoadRps = getLoadBench(seed);

async function metricsOf(port: number) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const n = (result: string) => Number(new RegExp(`lanebridge_cache_lookups_total\\{cache="read",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  return { hits: n('hit'), misses: n('miss') };
}

const stop = stopServer;

// Each round starts a fresh pair: one process can run several percent faster or slower than another
// of the same build for its whole life (JIT and heap layout), which a long-lived pair would mistake
// for the cost of recording. `--control` runs both with recording off: the noise floor of the method.
const mode = { on: args.control ? ('off' as const) : ('on' as const), off: 'off' as const };
const rps: Record<'on' | 'off', number[]> = { on: [], off: [] };
const ratios: number[] = [];
const misses: Record<'on' | 'off', number> = { on: 0, off: 0 };
for (let i = 0; i < ROUNDS; i++) {
  const servers = { on: { port: 18_601, child: serve(18_601, mode.on) }, off: { port: 18_602, child: serve(18_602, mode.off) } };
  try {
    for (const s of Object.values(servers)) await waitFor(`http://127.0.0.1:${s.port}/readyz`);
    for (const s of Object.values(servers)) await getLoads(s.port, WARMUP);
    const got: Record<string, number> = {};
    for (const which of i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      got[which] = (await getLoads(servers[which].port, DURATION)).rps;
      rps[which].push(got[which]!);
    }
    ratios.push(got.off! / got.on!);
    // The read cache (SQLite) is invalidated by any commit to the file, the usage flush's included.
    for (const which of ['on', 'off'] as const) misses[which] += (await metricsOf(servers[which].port)).misses;
  } finally {
    await Promise.all(Object.values(servers).map((s) => stop(s.child)));
  }
}
process.stderr.write(`per-round off ÷ on: ${ratios.map((r) => r.toFixed(3)).join(', ')}\n`);
process.stderr.write(`read-cache misses over all rounds: on ${misses.on}, off ${misses.off}\n`);
const label = args.control ? 'control: both off' : 'usage recording on';
process.stdout.write(
  `| get load by id, 10 connections | ${label} | off | off ÷ on |\n|---|---:|---:|---:|\n| req/s (median of ${ROUNDS} rounds of ${DURATION} s, a fresh pair each) | ${median(rps.on).toFixed(0)} | ${median(rps.off).toFixed(0)} | ${median(ratios).toFixed(3)} |\n`,
);
