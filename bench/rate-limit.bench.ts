/**
 * What the per-key rate limiter costs:  npx tsx bench/rate-limit.bench.ts [--duration 2] [--rounds 21]
 *   [--warmup 3] [--restart-every 7] [--connections 50] [--db sqlite|postgres://…]
 *
 * `GET /v2/tms-api/customers/{external_reference_id}` against a real `bin/lanebridge serve` process
 * (pinned to core 0 when `taskset` exists) in three modes: limits off (config.rateLimits, internalEnv), embedded
 * limiter (counters in the process), Redis limiter (REDIS_URL; a throwaway redis-server started here,
 * on core 1 with the load generator, so the server's core only runs Node). autocannon drives from this
 * process, pinned to core 1. One server process per mode, all three on core 0 (an idle server costs
 * nothing): each round sends a short burst to each in turn (rotating the order), so the three modes
 * see the same machine within seconds of each other; the processes are replaced by fresh ones (and
 * warmed up) every --restart-every rounds. Figures are medians over rounds; ratios are taken within a
 * round, then their median. Prints a table and writes bench/results/rate-limit-<time>.json.
 *
 * Two measures: requests per second (what the issue's target is about, but it swings when other work
 * shares the machine), and the server process's CPU time per request (user + system of all its threads,
 * from /proc, over the measured run). The server is CPU-bound on its one core, so its throughput at
 * saturation is 1 / (CPU per request): the CPU ratio estimates the throughput ratio and stays steady on
 * a busy machine. Redis's own CPU per request (a separate process, on another host in production) is
 * reported beside it.
 *
 * Then, in this process, the limiter alone: CPU time per consume() call, in process and through Redis
 * (50 callers at once, like 50 connections), which is what it adds to each request.
 *
 * The key has limits far above what the run can reach, so every response is a 200 and the limiter does
 * its full work on each request (count, headers) without ever refusing.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { openDataStore } from '../src/lib/db/index.js';
import { createRateLimiter, type RateLimiterOptions } from '../src/lib/http/rate-limit.js';
import { accountsService } from '../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';
import { internalEnv } from './servers.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '21' },
    'restart-every': { type: 'string', default: '7' },
    connections: { type: 'string', default: '50' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const ROUNDS = Number(args.rounds);
const RESTART_EVERY = Number(args['restart-every']);
const CONNECTIONS = Number(args.connections);
const MODES = ['off', 'embedded', 'redis'] as const;
type Mode = (typeof MODES)[number];

const log = (m: string) => process.stderr.write(`[rate-limit bench] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return cpus().length > 1;
  } catch {
    return false;
  }
})();
if (hasTaskset) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const onCore = (core: number, cmd: string, argv: string[]): [string, string[]] => (hasTaskset ? ['taskset', ['-c', String(core), cmd, ...argv]] : [cmd, argv]);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** User + system CPU seconds of a process (all its threads), from /proc; 0 where /proc is missing. */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

/** Machine-wide CPU ticks (all, idle, steal) from /proc/stat: how busy the machine was meanwhile. */
function machineTicks(): { total: number; idle: number; steal: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), idle: (f[3] ?? 0) + (f[4] ?? 0), steal: f[7] ?? 0 };
  } catch {
    return { total: 0, idle: 0, steal: 0 };
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

// ---- measurements, and what to undo whatever happens ---------------------------------------------
const results: Record<Mode, number[]> = { off: [], embedded: [], redis: [] };
const p99: Record<Mode, number[]> = { off: [], embedded: [], redis: [] };
const cpuUs: Record<Mode, number[]> = { off: [], embedded: [], redis: [] };
const redisCpuUs: number[] = [];
const ratios: Record<'embedded' | 'redis', number[]> = { embedded: [], redis: [] };
const cpuRatios: Record<'embedded' | 'redis', number[]> = { embedded: [], redis: [] };
const micro: { embedded?: number; redis?: number } = {};
let machineBefore = machineTicks();
const cleanups: (() => unknown)[] = [];
const PATH = '/v2/tms-api/customers/BENCH-0042';

/** Everything that starts something: each resource registers its own cleanup as soon as it exists. */
async function measure() {
  // ---- database, key and data -------------------------------------------------------------------
  const dir = mkdtempSync(join(tmpdir(), 'lanebridge-rl-bench-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  let databaseUrl = join(dir, 'bench.db');
  if (args.db !== 'sqlite') {
    const name = `lanebridge_rlbench_${process.pid}`;
    cleanups.push(async () => {
      const admin = new pg.Client({ connectionString: args.db });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    });
    const c = new pg.Client({ connectionString: args.db });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const u = new URL(args.db!);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
  }
  const store = openDataStore(databaseUrl);
  await store.migrate();
  const accounts = accountsService(store);
  const org = await accounts.createOrganization('Rate limit benchmark');
  const { key } = await accounts.createKey(org.id, {
    name: 'bench',
    externalSystem: 'bench',
    scopes: [...SCOPES],
    perMinute: 1_000_000_000,
    perDay: 1_000_000_000,
  });
  await store.close();

  // ---- Redis ------------------------------------------------------------------------------------
  const redisPort = await freePort();
  const redisPid = join(dir, 'redis.pid');
  {
    const [cmd, argv] = onCore(1, 'redis-server', [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      redisPid,
      '--dir',
      dir,
    ]);
    await run(cmd, argv);
    cleanups.push(async () => {
      try {
        await run('redis-cli', ['-p', String(redisPort), 'shutdown', 'nosave']);
      } catch {
        try {
          process.kill(Number(readFileSync(redisPid, 'utf8').trim()), 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    });
    for (let i = 0; i < 50; i++) {
      try {
        if ((await run('redis-cli', ['-p', String(redisPort), 'ping'])).stdout.trim() === 'PONG') break;
      } catch {
        /* starting */
      }
      await sleep(100);
    }
  }

  // ---- server processes -------------------------------------------------------------------------
  interface Server {
    proc: ChildProcess;
    base: string;
  }

  async function startServer(mode: Mode): Promise<Server> {
    const port = await freePort();
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...internalEnv({ rateLimits: mode !== 'off', rateLimitKeyPrefix: `lanebridge-bench:${process.pid}:` }),
    };
    delete env.REDIS_URL;
    if (mode === 'redis') env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
    const [cmd, argv] = onCore(0, process.execPath, [join(root, 'bin/lanebridge'), 'serve']);
    const proc = spawn(cmd, argv, { env, stdio: ['ignore', 'ignore', 'inherit'], cwd: root });
    const base = `http://127.0.0.1:${port}`;
    const expected = { off: 'off', embedded: 'in_process', redis: 'redis' }[mode];
    for (let i = 0; i < 300; i++) {
      try {
        const res = await fetch(`${base}/readyz`);
        if (res.ok && ((await res.json()) as { checks: { rate_limits: string } }).checks.rate_limits === expected) return { proc, base };
      } catch {
        /* not up yet */
      }
      await sleep(100);
    }
    throw new Error(`server (${mode}) did not come up`);
  }

  async function stopServer(s: Server) {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
    const exited = new Promise((r) => s.proc.once('exit', r));
    s.proc.kill('SIGTERM');
    const timer = setTimeout(() => s.proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  const headers = { 'x-api-key': key };

  function load(url: string, seconds: number): Promise<autocannon.Result> {
    return new Promise((resolve, reject) => {
      autocannon({ url, connections: CONNECTIONS, duration: seconds, requests: [{ method: 'GET', path: PATH, headers }], timeout: 30 }, (err, res) =>
        err ? reject(err) : resolve(res),
      );
    });
  }

  // Seed through the API once: 100 customers, the benchmark reads one of them.
  {
    const s = await startServer('off');
    cleanups.push(() => stopServer(s));
    const items = Array.from({ length: 100 }, (_, i) => ({
      operation: 'create',
      external_reference_id: `BENCH-${String(i).padStart(4, '0')}`,
      customer: { name: `Benchmark customer ${i}`, phone: '+1-555-0100', customer_type: 'SHIPPER' },
    }));
    const res = await fetch(`${s.base}/v2/tms-api/batch/customers`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    if (!res.ok) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
    await stopServer(s);
  }

  // ---- runs -------------------------------------------------------------------------------------
  const redisServerPid = () => Number(readFileSync(redisPid, 'utf8').trim());

  /** Microseconds of this process's CPU per consume() call, 50 callers at once, after a warm-up. */
  async function consumeCost(opts: Partial<RateLimiterOptions>, calls = 200_000): Promise<number> {
    const limiter = createRateLimiter({
      enabled: true,
      clock: { now: () => new Date() },
      log: { warn: () => {}, info: () => {} },
      keyPrefix: `lanebridge-bench-micro:${process.pid}:`,
      ...opts,
    });
    await limiter.ready(2000);
    const pass = async (n: number) => {
      let i = 0;
      const caller = async () => {
        while (i < n) {
          const r = limiter.consume(`key_${i++ % 100}`, 1e9, 1e9);
          if (r instanceof Promise) await r;
        }
      };
      await Promise.all(Array.from({ length: 50 }, caller));
    };
    await pass(calls / 4);
    const before = process.cpuUsage();
    await pass(calls);
    const used = process.cpuUsage(before);
    const { fallbacks } = limiter.status();
    await limiter.close();
    if (fallbacks > 0) throw new Error('micro benchmark: calls fell back');
    return (used.user + used.system) / calls;
  }
  let servers: Record<Mode, Server> | null = null;
  const startAll = async () => {
    const started = await Promise.all(MODES.map((m) => startServer(m)));
    servers = { off: started[0]!, embedded: started[1]!, redis: started[2]! };
    for (const m of MODES) await load(`${servers[m].base}${PATH}`, WARMUP);
  };
  const stopAll = async () => {
    if (servers) await Promise.all(MODES.map((m) => stopServer(servers![m])));
    servers = null;
  };
  cleanups.push(stopAll);
  machineBefore = machineTicks();
  for (let round = 0; round < ROUNDS; round++) {
    // Fresh processes every few rounds: a long-lived process drifts (notes/performance.md).
    if (round % RESTART_EVERY === 0) {
      await stopAll();
      await startAll();
    }
    const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]!);
    const perRound: Partial<Record<Mode, number>> = {};
    const perRoundCpu: Partial<Record<Mode, number>> = {};
    for (const mode of order) {
      const s = servers![mode];
      const cpu0 = cpuSeconds(s.proc.pid);
      const redisCpu0 = cpuSeconds(redisServerPid());
      const r = await load(`${s.base}${PATH}`, DURATION);
      const cpu = cpuSeconds(s.proc.pid) - cpu0;
      const redisCpu = cpuSeconds(redisServerPid()) - redisCpu0;
      if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
        throw new Error(`${mode}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
      }
      // The limiter did count every request, in the store it was meant to use.
      const check = await fetch(`${s.base}${PATH}`, { headers });
      const metrics = await (await fetch(`${s.base}/metrics`)).text();
      if (mode !== 'off' && !check.headers.get('x-ratelimit-remaining')) throw new Error(`${mode}: no limit headers`);
      if (mode === 'redis' && !/^lanebridge_rate_limit_fallbacks_total 0$/m.test(metrics)) throw new Error('redis: requests fell back');
      const rps = r.requests.total / DURATION;
      results[mode].push(rps);
      p99[mode].push((r as unknown as { latency: { p99: number } }).latency.p99);
      perRound[mode] = rps;
      const usPerRequest = (cpu / r.requests.total) * 1e6;
      cpuUs[mode].push(usPerRequest);
      perRoundCpu[mode] = usPerRequest;
      if (mode === 'redis') redisCpuUs.push((redisCpu / r.requests.total) * 1e6);
      log(`round ${round + 1}/${ROUNDS} ${mode.padEnd(8)} ${rps.toFixed(0)} req/s, server CPU ${usPerRequest.toFixed(1)} µs/request`);
    }
    ratios.embedded.push(perRound.embedded! / perRound.off!);
    ratios.redis.push(perRound.redis! / perRound.off!);
    cpuRatios.embedded.push(perRoundCpu.off! / perRoundCpu.embedded!);
    cpuRatios.redis.push(perRoundCpu.off! / perRoundCpu.redis!);
  }
  await stopAll();
  micro.embedded = await consumeCost({});
  micro.redis = await consumeCost({ redisUrl: `redis://127.0.0.1:${redisPort}` });
}

try {
  await measure();
} finally {
  for (const undo of cleanups.reverse()) {
    try {
      await undo();
    } catch (err) {
      log(`cleanup: ${(err as Error).message}`);
    }
  }
}

const machineAfter = machineTicks();
const machineTotal = machineAfter.total - machineBefore.total || 1;
const machine = {
  busy_pct: Math.round((1 - (machineAfter.idle - machineBefore.idle) / machineTotal) * 1000) / 10,
  steal_pct: Math.round(((machineAfter.steal - machineBefore.steal) / machineTotal) * 1000) / 10,
};
const off = median(results.off);
const summary = MODES.map((mode) => {
  const rps = median(results[mode]);
  const ratio = mode === 'off' ? 1 : median(ratios[mode]);
  const cpuRatio = mode === 'off' ? 1 : median(cpuRatios[mode]);
  return {
    mode,
    median_req_per_s: Math.round(rps),
    median_p99_ms: median(p99[mode]),
    ratio_of_medians: Math.round((rps / off) * 1000) / 1000,
    median_of_round_ratios: Math.round(ratio * 1000) / 1000,
    overhead_pct: Math.round((1 - ratio) * 1000) / 10,
    median_server_cpu_us_per_request: Math.round(median(cpuUs[mode]) * 10) / 10,
    capacity_ratio_by_cpu: Math.round(cpuRatio * 1000) / 1000,
    overhead_by_cpu_pct: Math.round((1 - cpuRatio) * 1000) / 10,
    ...(mode === 'redis' ? { median_redis_cpu_us_per_request: Math.round(median(redisCpuUs) * 10) / 10 } : {}),
    runs: results[mode].map((x) => Math.round(x)),
    cpu_runs_us: cpuUs[mode].map((x) => Math.round(x * 10) / 10),
  };
});
console.log(
  `\nGET ${PATH}, ${CONNECTIONS} connections, ${DURATION} s bursts, ${ROUNDS} rounds (fresh processes warmed ${WARMUP} s every ${RESTART_EVERY}), ${args.db === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, taskset: ${hasTaskset ? 'server core 0, load generator and Redis core 1' : 'no'}`,
);
console.log(
  `machine during the runs: ${machine.busy_pct}% busy, ${machine.steal_pct}% stolen by the hypervisor; load average at the end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
console.log('mode      req/s (median)  p99 ms  throughput ratio  overhead | server CPU µs/req  capacity ratio  overhead');
for (const s of summary) {
  const other = s.mode === 'off';
  console.log(
    `${s.mode.padEnd(9)} ${String(s.median_req_per_s).padStart(14)}  ${String(s.median_p99_ms).padStart(6)}  ${s.median_of_round_ratios.toFixed(3).padStart(16)}  ${(other ? '' : `${s.overhead_pct}%`).padStart(8)} | ${s.median_server_cpu_us_per_request.toFixed(1).padStart(17)}  ${s.capacity_ratio_by_cpu.toFixed(3).padStart(14)}  ${other ? '' : `${s.overhead_by_cpu_pct}%`}`,
  );
}
const redisCpu = summary.find((s) => s.mode === 'redis')?.median_redis_cpu_us_per_request;
console.log(`Redis server CPU: ${redisCpu} µs per request (its own process)`);
console.log(`limiter alone, CPU per call: embedded ${micro.embedded?.toFixed(2)} µs, Redis ${micro.redis?.toFixed(1)} µs (client side)`);
mkdirSync(join(root, 'bench/results'), { recursive: true });
const file = join(root, 'bench/results', `rate-limit-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  file,
  JSON.stringify(
    {
      endpoint: PATH,
      connections: CONNECTIONS,
      duration_s: DURATION,
      warmup_s: WARMUP,
      rounds: ROUNDS,
      restart_every: RESTART_EVERY,
      database: args.db === 'sqlite' ? 'sqlite' : 'postgres',
      taskset: hasTaskset,
      node: process.version,
      machine,
      summary,
      limiter_cpu_us_per_call: micro,
    },
    null,
    2,
  ),
);
console.log(`\nwritten to ${file}`);
