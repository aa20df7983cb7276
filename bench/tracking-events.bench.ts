/**
 * The tracking-events endpoint's throughput (D14; the recommendation-evidence issue):
 *
 *   npx tsx bench/tracking-events.bench.ts [--db sqlite|postgres|both] [--loads 100000] [--duration 10] [--loader]
 *
 * For each engine: a fresh database seeded by bench/seed.ts with N loads (about one in six on its way:
 * COVERED … AT_RECEIVER, with 2–4 stops), the server's compiled build (`npm run build` first; `--loader`:
 * the TypeScript sources through tsx) pinned to core 0, autocannon on core 1 (taskset, when present).
 * Three runs of `--duration` seconds each, every answer checked (any non-201 fails the benchmark):
 *   - "new event, 10 connections": each request an ELD `ARRIVED` at the last stop of another load on its
 *     way (a new event_id, a stop that had no actual): the stop written, the load's history row when it
 *     has one, `load.updated` and `load.stop_arrived` written, as a carrier's tracking feed sends them;
 *   - "new event, one at a time": the same, one connection (the latency of one event);
 *   - "replayed event_id, 10 connections": events already applied sent again (the answer stored by the
 *     first, nothing written), as a feed that retries sends them.
 * Figures: requests per second, p50 / p95 / p99 latency, and the server's CPU per request (utime + stime
 * of its process over the run ÷ requests answered). BENCH_SERVER_NODE_ARGS: node options for the server.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { onScratchDatabases } from './scratch-databases.js';
import { cpuMs, internalEnv, pinLoadGenerator, startServer, stopServer, waitFor } from './servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    loads: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    loader: { type: 'boolean', default: false },
  },
});
const DURATION = Number(args.duration);
const PORT = 18_520;
const log = (msg: string) => process.stderr.write(`[tracking-bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

const pinned = pinLoadGenerator();
const serverBin = args.loader ? 'bin/lanebridge' : 'bin/lanebridge-compiled';
if (!args.loader) {
  log(`building ${root} (npm run build)`);
  if (!process.env.NO_BUILD) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** A load on its way and the number of its last stop. */
interface Target {
  ref: string;
  last: number;
}

const pathAndBody = ({ ref, body }: { ref: string; body: string }) => ({ path: `/v2/tms-api/loads/${encodeURIComponent(ref)}/tracking-events`, body });

const UNDERWAY = ['COVERED', 'DISPATCHED', 'AT_SHIPPER', 'EN_ROUTE', 'AT_RECEIVER'];

/** The seeded loads on their way whose last stop has no actual yet. */
async function targetsOf(engine: 'sqlite' | 'postgres', url: string, orgId: string): Promise<Target[]> {
  const query = `select l.external_reference_id as ref, max(s.stop_number) as last from loads l join load_stops s on s.load_id = l.id
    where l.org_id = $1 and l.status in (${UNDERWAY.map((_, i) => `$${i + 2}`).join(', ')})
    group by l.external_reference_id having max(case when s.actual_arrival is null then 0 else s.stop_number end) < max(s.stop_number) order by 1`;
  if (engine === 'sqlite') {
    const db = new Database(url, { readonly: true });
    try {
      return db.prepare(query.replace(/\$\d+/g, '?')).all(orgId, ...UNDERWAY) as Target[];
    } finally {
      db.close();
    }
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<Target>(query, [orgId, ...UNDERWAY])).rows.map((r) => ({ ref: r.ref, last: Number(r.last) }));
  } finally {
    await c.end();
  }
}

interface Row {
  engine: string;
  scenario: string;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  cpuUs: number;
}

async function measure(engine: 'sqlite' | 'postgres', url: string): Promise<Row[]> {
  const seedOut = join(mkdtempSync(join(tmpdir(), 'lanebridge-tracking-seed-')), 'seed.json');
  log(`seeding ${args.loads} loads into ${engine}`);
  const seeding = Date.now();
  execFileSync(process.execPath, ['--import', 'tsx', join(root, 'bench/seed.ts'), '--loads', String(args.loads), '--reset', '--out', seedOut], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: url },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const seed = JSON.parse(readFileSync(seedOut, 'utf8')) as { orgId: string; key: string };
  rmSync(dirname(seedOut), { recursive: true, force: true });
  log(`seeded in ${((Date.now() - seeding) / 1000).toFixed(0)} s`);
  const targets = await targetsOf(engine, url, seed.orgId);
  log(`${targets.length} loads on their way with a last stop not yet reported`);
  // BENCH_SERVER_NODE_ARGS: node options for the server (`--cpu-prof --cpu-prof-dir=…`, a preloaded statement timer).
  const child = startServer(
    root,
    join(root, serverBin),
    { DATABASE_URL: url, PORT: String(PORT), ...internalEnv({ rateLimits: false }) },
    pinned,
    process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
  );
  const rows: Row[] = [];
  try {
    await waitFor(`http://127.0.0.1:${PORT}/readyz`);
    const run = Date.now().toString(36);
    let next = 0;
    const sent: { ref: string; body: string }[] = [];
    const newEvent = () => {
      const i = next++;
      if (i >= targets.length) throw new Error(`every one of the ${targets.length} loads has had its event: use more loads or a shorter --duration`);
      const t = targets[i]!;
      const body = JSON.stringify({ event_id: `bench-${run}-${i}`, type: 'ARRIVED', stop_number: t.last, occurred_at: '2026-11-20T14:05:00Z', source: 'ELD' });
      sent.push({ ref: t.ref, body });
      return { ref: t.ref, body };
    };
    let replayed = 0;
    const replay = () => sent[replayed++ % sent.length]!;
    const scenario = async (name: string, connections: number, pick: () => { ref: string; body: string }) => {
      const cpuBefore = cpuMs(child.pid!);
      const latencies: number[] = [];
      const res = await new Promise<autocannon.Result>((resolve, reject) => {
        const instance = autocannon(
          {
            url: `http://127.0.0.1:${PORT}`,
            connections,
            duration: DURATION,
            requests: [
              {
                method: 'POST',
                headers: { 'x-api-key': seed.key, 'content-type': 'application/json' },
                setupRequest: (r: autocannon.Request) => ({ ...r, ...pathAndBody(pick()) }),
              },
            ],
          },
          (err, r) => (err ? reject(err) : resolve(r)),
        );
        instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
      });
      const cpu = cpuMs(child.pid!) - cpuBefore;
      const answered = latencies.length;
      if (res.non2xx > 0 || res.errors > 0 || res.timeouts > 0)
        throw new Error(`${name}: ${res.non2xx} non-2xx answers, ${res.errors} errors, ${res.timeouts} timeouts`);
      latencies.sort((a, b) => a - b);
      const at = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]! * 10) / 10;
      const row = {
        engine,
        scenario: name,
        requests: answered,
        rps: answered / DURATION,
        p50: at(50),
        p95: at(95),
        p99: at(99),
        cpuUs: (cpu * 1000) / Math.max(1, answered),
      };
      log(`${engine} ${name}: ${row.rps.toFixed(0)} req/s, p50 ${row.p50} / p95 ${row.p95} / p99 ${row.p99} ms, ${row.cpuUs.toFixed(0)} µs CPU a request`);
      rows.push(row);
    };
    // A short warm-up (compiles, caches), not counted: the first 200 loads' events.
    const warmUp = { method: 'POST', headers: { 'x-api-key': seed.key, 'content-type': 'application/json' } };
    await new Promise<void>((resolve, reject) =>
      autocannon(
        {
          url: `http://127.0.0.1:${PORT}`,
          connections: 2,
          amount: 200,
          requests: [{ ...warmUp, setupRequest: (r: autocannon.Request) => ({ ...r, ...pathAndBody(newEvent()) }) }],
        },
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    await scenario('new event, 10 connections', 10, newEvent);
    await scenario('new event, one at a time', 1, newEvent);
    await scenario('replayed event_id, 10 connections', 10, replay);
    // What one new event did: the stop has its actual, the load its events.
    const last = sent[sent.length - 1]!;
    const load = (await (
      await fetch(`http://127.0.0.1:${PORT}/v2/tms-api/loads/${encodeURIComponent(last.ref)}`, { headers: { 'x-api-key': seed.key } })
    ).json()) as { stops: { stop_number: number; actual_arrival: string | null }[] };
    const stop = load.stops.find((s) => s.stop_number === (JSON.parse(last.body) as { stop_number: number }).stop_number);
    if (stop?.actual_arrival !== '2026-11-20T14:05:00.000Z') throw new Error(`${last.ref}: the event's stop shows ${JSON.stringify(stop)}`);
  } finally {
    await stopServer(child);
  }
  return rows;
}

const rows = await onScratchDatabases(args.db!, 'tracking', (engine, url) => measure(engine, url));
process.stdout.write(
  `\n| engine | scenario | requests | req/s | p50 / p95 / p99 ms | server CPU µs a request |\n|---|---|---:|---:|---:|---:|\n${rows
    .map(
      (r) =>
        `| ${r.engine} | ${r.scenario} | ${r.requests.toLocaleString('en-US')} | ${r.rps.toFixed(0)} | ${r.p50} / ${r.p95} / ${r.p99} | ${r.cpuUs.toFixed(0)} |`,
    )
    .join('\n')}\n`,
);
