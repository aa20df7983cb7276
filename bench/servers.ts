import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/**
 * What the A/B benchmarks that start their own servers share (usage, CPU per request): this process on
 * core 1 and each server on core 0 when `taskset` exists, a server started from a checkout, readiness,
 * medians.
 */

/** Pins this process (the load generator) to core 1; whether `taskset` exists (servers then go to core 0). */
export function pinLoadGenerator(): boolean {
  try {
    execFileSync('taskset', ['-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Internal fields a benchmark sets on a server it starts (src/config.ts: no operator's settings). */
export type BenchInternal = { rateLimits?: boolean; readCache?: boolean; usageRecording?: boolean; rateLimitKeyPrefix?: string };

/**
 * The environment that gives a started server these internal fields: LANEBRIDGE_INTERNAL, and the
 * variables that trees from before issue 46 read them from (RATE_LIMITS…), so one run can still compare
 * against such a tree (a current server logs that it ignores those).
 */
export function internalEnv(fields: BenchInternal): Record<string, string> {
  const onOff = (v: boolean | undefined) => (v === undefined ? undefined : v ? 'on' : 'off');
  const legacy: Record<string, string | undefined> = {
    RATE_LIMITS: onOff(fields.rateLimits),
    READ_CACHE: onOff(fields.readCache),
    USAGE_RECORDING: onOff(fields.usageRecording),
    RATE_LIMIT_KEY_PREFIX: fields.rateLimitKeyPrefix,
  };
  const set = Object.fromEntries(Object.entries(legacy).filter((e): e is [string, string] => e[1] !== undefined));
  return { LANEBRIDGE_INTERNAL: JSON.stringify(fields), ...set };
}

/**
 * `bin` (a path under `cwd`) `serve` with `env` over the environment, on core 0 when pinned; its pid is
 * node's (taskset execs it). `nodeArgs` go to node before the script (`--cpu-prof`…).
 */
export function startServer(cwd: string, bin: string, env: Record<string, string>, pinned: boolean, nodeArgs: string[] = []): ChildProcess {
  const argv = [...nodeArgs, bin, 'serve'];
  const [cmd, args] = pinned ? ['taskset', ['-c', '0', process.execPath, ...argv]] : [process.execPath, argv];
  // BENCH_SERVER_LOG=<file>: the server's log (its stdout) is appended there instead of dropped.
  const out = process.env.BENCH_SERVER_LOG ? openSync(process.env.BENCH_SERVER_LOG, 'a') : 'ignore';
  const child = spawn(cmd as string, args as string[], { cwd, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', out, 'inherit'] });
  // The child has its own copy of the log's descriptor.
  if (typeof out === 'number') closeSync(out);
  return child;
}

export async function waitFor(url: string, timeoutMs = 600_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Stops a server started by startServer (SIGTERM) and waits for it to exit. */
export function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * The get-load benchmark against one server: "get load by id" at 10 connections for `seconds`, the
 * seed's history loads in turn (one counter across calls); the mean req/s. Any non-2xx or error throws.
 */
export function getLoadBench(seed: { key: string; sampleHistoryLoads: string[] }) {
  let next = 0;
  return async (port: number, seconds: number): Promise<number> => {
    const res = await new Promise<autocannon.Result>((resolve, reject) =>
      autocannon(
        {
          url: `http://127.0.0.1:${port}`,
          connections: 10,
          duration: seconds,
          requests: [
            {
              method: 'GET',
              headers: { 'x-api-key': seed.key },
              setupRequest: (r: autocannon.Request) => ({
                ...r,
                path: `/v2/tms-api/loads/${seed.sampleHistoryLoads[next++ % seed.sampleHistoryLoads.length]}`,
              }),
            },
          ],
        },
        (err, r) => (err ? reject(err) : resolve(r)),
      ),
    );
    if (res.non2xx > 0 || res.errors > 0) throw new Error(`${res.non2xx} non-2xx answers, ${res.errors} errors`);
    return res.requests.average;
  };
}

const TICKS = 100; // USER_HZ on Linux

/** utime + stime of a process, in ms (0 when it is gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

/** A process's resident memory in MB (Linux /proc; 0 elsewhere or once it has exited). */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}
