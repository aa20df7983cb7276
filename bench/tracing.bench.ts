/**
 * What OpenTelemetry tracing (issue 29: at most 1 % on the get-load benchmark when off) costs a read:
 *
 *   npx tsx bench/tracing.bench.ts --seed bench/results/seed-sqlite-100000.json [--rounds 8] [--duration 8]
 *       [--before DIR]   tracing off against DIR (another checkout, e.g. the commit before tracing): the cost when off;
 *                        the seed made by DIR's bench/seed.ts (each tree runs on its own copy, this one migrated forward)
 *       [--control]      both servers this tree with tracing off: the method's own spread
 *   (neither: this tree with OTEL_EXPORTER_OTLP_ENDPOINT set, spans sent to a sink in this process, against it unset)
 *
 * As bench/usage.bench.ts: each round starts a fresh pair of servers on the seeded database, warms both,
 * drives each in turn with "get load by id" (10 connections, the seed's history loads in turn), alternating
 * which goes first. Ratio = median of per-round ratios (B ÷ A: above 1 is what A costs). Also the server's CPU
 * time per request (utime + stime from /proc over the run ÷ requests), which other work on the machine
 * moves far less than throughput (A ÷ B: above 1 is what A costs).
 */
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuMs, getLoadBench, internalEnv, median, pinLoadGenerator, startServer, stopServer, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    rounds: { type: 'string', default: '8' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '4' },
    control: { type: 'boolean', default: false },
    before: { type: 'string' },
  },
});
if (!args.seed) throw new Error('--seed bench/results/seed-<engine>-<loads>.json is required');
const seed = JSON.parse(readFileSync(args.seed, 'utf8')) as { databaseUrl: string; key: string; sampleHistoryLoads: string[] };
const ROUNDS = Number(args.rounds);
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);

const hasTaskset = pinLoadGenerator();

// An OTLP/HTTP sink: reads and discards what the traced server exports, counting the spans' bytes.
let exportedBytes = 0;
let exports = 0;
const sink = http.createServer((req, res) => {
  req.on('data', (c: Buffer) => (exportedBytes += c.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
const sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;

interface Variant {
  label: string;
  dir: string;
  env: Record<string, string>;
}
// With --before, each tree gets its own copy of the (SQLite) seed: an older tree cannot open a database
// this tree's migrations have moved on, so seed with the older tree's bench/seed.ts and this tree migrates
// its copy forward at its first start.
const copyOf = (label: string): Record<string, string> => {
  if (!args.before) return {};
  const file = `${seed.databaseUrl}.${label}.db`;
  copyFileSync(seed.databaseUrl, file);
  return { DATABASE_URL: file };
};
const off: Variant = { label: 'tracing off', dir: root, env: copyOf('this') };
const [a, b]: [Variant, Variant] = args.control
  ? [{ ...off, label: 'control: tracing off' }, off]
  : args.before
    ? [off, { label: `before (${args.before})`, dir: args.before, env: copyOf('before') }]
    : [{ label: 'tracing on', dir: root, env: { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl } }, off];

const serve = (v: Variant, port: number): ChildProcess =>
  startServer(
    v.dir,
    join(v.dir, 'bin/lanebridge'),
    { DATABASE_URL: seed.databaseUrl, PORT: String(port), DB_POOL_SIZE: '10', ...internalEnv({ rateLimits: false }), ...v.env },
    hasTaskset,
  );

const getLoads = getLoadBench(seed);
const stop = stopServer;

const rps = { a: [] as number[], b: [] as number[] };
const ratios: number[] = [];
const cpuUs = { a: [] as number[], b: [] as number[] };
const cpuRatios: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const servers = { a: { port: 18_611, child: serve(a, 18_611) }, b: { port: 18_612, child: serve(b, 18_612) } };
  try {
    for (const s of Object.values(servers)) await waitFor(`http://127.0.0.1:${s.port}/readyz`);
    for (const s of Object.values(servers)) await getLoads(s.port, WARMUP);
    const got: Record<string, number> = {};
    for (const which of i % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
      const pid = servers[which].child.pid!;
      const before = cpuMs(pid);
      got[which] = await getLoads(servers[which].port, DURATION);
      rps[which].push(got[which]!);
      // CPU time per request moves far less than throughput when other work shares the cores.
      cpuUs[which].push(((cpuMs(pid) - before) * 1000) / (got[which]! * DURATION));
    }
    ratios.push(got.b! / got.a!);
    cpuRatios.push(cpuUs.a.at(-1)! / cpuUs.b.at(-1)!);
  } finally {
    await Promise.all(Object.values(servers).map((s) => stop(s.child)));
  }
}
sink.close();
process.stderr.write(`per-round ${b.label} ÷ ${a.label}: ${ratios.map((r) => r.toFixed(3)).join(', ')}\n`);
process.stderr.write(`sink: ${exports} exports, ${(exportedBytes / 1e6).toFixed(1)} MB\n`);
process.stderr.write(`per-round CPU per request, ${a.label} ÷ ${b.label}: ${cpuRatios.map((r) => r.toFixed(3)).join(', ')}\n`);
process.stdout.write(
  `| get load by id, 10 connections (median of ${ROUNDS} rounds of ${DURATION} s, a fresh pair each) | ${a.label} | ${b.label} | ratio |\n|---|---:|---:|---:|\n` +
    `| req/s | ${median(rps.a).toFixed(0)} | ${median(rps.b).toFixed(0)} | ${median(ratios).toFixed(3)} (B ÷ A) |\n` +
    `| server CPU µs per request | ${median(cpuUs.a).toFixed(1)} | ${median(cpuUs.b).toFixed(1)} | ${median(cpuRatios).toFixed(3)} (A ÷ B) |\n`,
);
