/**
 * Webhook delivery (D12, issue 16: goal p95 ≤ 250 ms from a write's response to the receiver):
 *
 *   npx tsx bench/webhooks.bench.ts [--writes 1000] [--rate 100] [--backlog 2000] [--db sqlite|postgres|both]
 *
 * A real `bin/lanebridge serve` process (rate limits off, WEBHOOK_ALLOW_INSECURE=on) on a fresh SQLite
 * file and a fresh PostgreSQL database (LANEBRIDGE_BENCH_PG_URL, default the local `test`; a database
 * of its own is made beside it and dropped afterwards); the receiver (answers 200 at once) and the
 * load generator run in this process, over real sockets on 127.0.0.1.
 *
 * - end to end: `POST /v2/tms-api/customers` at `--rate` writes a second (open loop, one new customer
 *   each), one endpoint subscribed to every type; the delay of each write is the receiver's arrival time
 *   of its customer.created minus the time its 201 was read (negative when the delivery arrived first:
 *   the worker is woken at commit, before the answer is written). p50, p95, p99, max.
 * - throughput: `--backlog` events already in the outbox, queued at once by a replay (`after_sequence`
 *   0); deliveries a second until the receiver has them all (one endpoint: sent in sequence order).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { agent, freePort, request } from './http-client.js';
import pg from 'pg';
import { openDataStore } from '../src/lib/db/index.js';
import { accountsService } from '../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';
import { internalEnv } from './servers.js';

const { values: args } = parseArgs({
  options: {
    writes: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '100' },
    backlog: { type: 'string', default: '2000' },
    db: { type: 'string', default: 'both' },
  },
});
const WRITES = Number(args.writes);
const RATE = Number(args.rate);
const BACKLOG = Number(args.backlog);
const PG_ADMIN_URL = process.env.LANEBRIDGE_BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const BIN = join(process.cwd(), 'bin/lanebridge');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

interface Receiver {
  url: string;
  arrivals: Map<string, number>;
  count: () => number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const arrivals = new Map<string, number>();
  let count = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      count++;
      const ref = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { external_reference_id?: string } }).data?.external_reference_id;
      if (ref && !arrivals.has(ref)) arrivals.set(ref, at);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const a = server.address();
  const port = typeof a === 'object' && a ? a.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    arrivals,
    count: () => count,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

async function startServer(databaseUrl: string): Promise<{ port: number; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(BIN, ['serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...internalEnv({ rateLimits: false }),
      WEBHOOK_ALLOW_INSECURE: 'on',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise<boolean>((r) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/readyz' }, (res) => (res.resume(), r(res.statusCode === 200)));
      req.on('error', () => r(false));
    });
    if (ok) return { port, proc };
    await sleep(100);
  }
  throw new Error('server did not become ready');
}

async function run(engine: 'sqlite' | 'postgres') {
  let databaseUrl: string;
  let cleanup: () => Promise<void>;
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'lanebridge-webhooks-bench-'));
    databaseUrl = join(dir, 'bench.db');
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const name = `lanebridge_webhooks_bench_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    cleanup = async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
  }
  const store = openDataStore(databaseUrl, { poolSize: 2 });
  await store.migrate();
  const accounts = accountsService(store);
  const org = await accounts.createOrganization('Webhook bench');
  const { key } = await accounts.createKey(org.id, {
    name: 'bench',
    externalSystem: 'bench',
    scopes: [...SCOPES],
    perMinute: 1_000_000_000,
    perDay: 2_000_000_000,
  });
  await store.close();

  const rx = await startReceiver();
  const server = await startServer(databaseUrl);
  try {
    const created = await request(server.port, 'POST', '/v2/tms-api/webhook-endpoints', key, { url: rx.url });
    if (created.status !== 201) throw new Error(created.text);
    const endpointId = (JSON.parse(created.text) as { id: string }).id;
    // Warm-up: connections, statements, JIT.
    for (let i = 0; i < 50; i++) await request(server.port, 'POST', '/v2/tms-api/customers', key, { external_reference_id: `WARM-${i}`, name: `Warm ${i}` });
    while (rx.count() < 50) await sleep(20);

    // End to end at RATE writes a second (open loop).
    const answered = new Map<string, number>();
    const started = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < WRITES; i++) {
      const due = started + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const ref = `E2E-${i}`;
      inflight.push(
        request(server.port, 'POST', '/v2/tms-api/customers', key, { external_reference_id: ref, name: `Customer ${i}` }).then((r) => {
          if (r.status !== 201) throw new Error(r.text);
          answered.set(ref, performance.now());
        }),
      );
    }
    await Promise.all(inflight);
    const writeSeconds = (performance.now() - started) / 1000;
    const deadline = performance.now() + 30_000;
    while ([...answered.keys()].some((r) => !rx.arrivals.has(r)) && performance.now() < deadline) await sleep(20);
    const delays = [...answered].filter(([r]) => rx.arrivals.has(r)).map(([r, at]) => rx.arrivals.get(r)! - at);
    const e2e = {
      writes: WRITES,
      achieved_rate: Math.round(WRITES / writeSeconds),
      delivered: delays.length,
      p50_ms: +pct(delays, 50).toFixed(1),
      p95_ms: +pct(delays, 95).toFixed(1),
      p99_ms: +pct(delays, 99).toFixed(1),
      max_ms: +Math.max(...delays).toFixed(1),
      before_response: delays.filter((d) => d < 0).length,
    };

    // Throughput: a backlog of BACKLOG events (batches of 100, made while the endpoint is subscribed to
    // nothing they match), then queued at once by a replay.
    const put = await request(server.port, 'PUT', `/v2/tms-api/webhook-endpoints/${endpointId}`, key, { event_types: ['market_rate.created'] });
    if (put.status !== 200) throw new Error(put.text);
    for (let b = 0; b < BACKLOG / 100; b++) {
      const items = Array.from({ length: 100 }, (_, i) => ({
        operation: 'create',
        customer: { external_reference_id: `BL-${b}-${i}`, name: `Backlog ${b}-${i}` },
      }));
      const r = await request(server.port, 'POST', '/v2/tms-api/batch/customers', key, { items });
      if (r.status !== 200) throw new Error(r.text);
    }
    await sleep(1500); // the worker's cursor moves past the backlog (nothing matches)
    const put2 = await request(server.port, 'PUT', `/v2/tms-api/webhook-endpoints/${endpointId}`, key, { event_types: ['customer.created'] });
    if (put2.status !== 200) throw new Error(put2.text);
    const before = rx.count();
    const t0 = performance.now();
    const replay = await request(server.port, 'POST', `/v2/tms-api/webhook-endpoints/${endpointId}/replay`, key, { after_sequence: 0 });
    const queued = (JSON.parse(replay.text) as { queued: number }).queued;
    const until = performance.now() + 120_000;
    while (rx.count() - before < queued && performance.now() < until) await sleep(10);
    const seconds = (performance.now() - t0) / 1000;
    const throughput = { queued, delivered: rx.count() - before, seconds: +seconds.toFixed(2), per_second: Math.round((rx.count() - before) / seconds) };
    return { engine, e2e, throughput };
  } finally {
    server.proc.kill('SIGTERM');
    await new Promise((r) => server.proc.once('exit', r));
    await rx.close();
    await cleanup();
  }
}

const engines = args.db === 'both' ? (['sqlite', 'postgres'] as const) : ([args.db as 'sqlite' | 'postgres'] as const);
const results = [];
for (const engine of engines) {
  const r = await run(engine);
  results.push(r);
  process.stderr.write(
    `${engine}: end to end at ${r.e2e.achieved_rate} writes/s: p50 ${r.e2e.p50_ms} ms, p95 ${r.e2e.p95_ms} ms, p99 ${r.e2e.p99_ms} ms, max ${r.e2e.max_ms} ms ` +
      `(${r.e2e.delivered}/${r.e2e.writes} delivered, ${r.e2e.before_response} before the response); throughput ${r.throughput.per_second} deliveries/s (${r.throughput.delivered} in ${r.throughput.seconds} s)\n`,
  );
}
process.stdout.write(`${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
agent.destroy();
