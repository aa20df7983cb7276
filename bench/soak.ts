// Soak (issue 9, point 7; a benchmark, not part of CI): mixed reads and writes at a steady rate against a
// real `bin/lanebridge serve` on 127.0.0.1, for a bounded time and request count. Reports errors, the
// p99 of every 10-second window, and the server's resident memory after warm-up.
//
//   npx tsx bench/soak.ts                                   # 5 minutes at 200 req/s on a fresh SQLite file
//   npx tsx bench/soak.ts --duration 60 --rate 100          # shorter
//   npx tsx bench/soak.ts --db postgres://postgres@127.0.0.1:5432/lanebridge_soak   # an existing PostgreSQL database
//
// Options: --duration S (≤ 3600), --rate R (≤ 2000 req/s), --warmup S, --db URL, --out FILE.
// The figures go to stdout and to bench/results/soak-<engine>-<time>.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { agent, freePort, request } from './http-client.js';
import { openDataStore } from '../src/lib/db/index.js';
import { accountsService } from '../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';
import { internalEnv } from './servers.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    rate: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '60' },
    db: { type: 'string' },
    out: { type: 'string' },
  },
});
const DURATION_S = Math.min(3600, Math.max(10, Number(values.duration)));
const RATE = Math.min(2000, Math.max(1, Number(values.rate)));
const WARMUP_S = Math.min(DURATION_S / 2, Math.max(0, Number(values.warmup)));
const MAX_REQUESTS = Math.ceil(DURATION_S * RATE * 1.05);
const WINDOW_MS = 10_000;

const ZIPS: [string, string][] = [
  ['75201', 'TX'],
  ['77002', 'TX'],
  ['60601', 'IL'],
  ['30303', 'GA'],
  ['90012', 'CA'],
  ['80202', 'CO'],
  ['98101', 'WA'],
  ['10001', 'NY'],
  ['33101', 'FL'],
  ['85003', 'AZ'],
  ['37203', 'TN'],
  ['64105', 'MO'],
  ['55401', 'MN'],
  ['19103', 'PA'],
  ['28202', 'NC'],
  ['46204', 'IN'],
];

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** CPU seconds the process has used (user + system), from /proc. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const loadBody = (ref: string, i: number, extra: Record<string, unknown> = {}) => {
  const a = ZIPS[i % ZIPS.length]!;
  const b = ZIPS[(i * 7 + 3) % ZIPS.length]!;
  return {
    external_reference_id: ref,
    equipment_type: i % 3 === 0 ? 'REEFER' : 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: `C-${i % 20}`,
    carrier_external_reference_id: `K-${i % 20}`,
    status: i % 4 === 0 ? 'ACTIVE' : 'DELIVERED',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: `LOC-${a[0]}`, early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: `LOC-${b[0]}`, early_arrival: '2026-03-03T08:00:00Z', late_arrival: '2026-03-03T12:00:00Z' },
    ],
    financial_rates: [
      { rate_entity: 'CARRIER', amount: 1000 + i },
      { rate_entity: 'CUSTOMER', amount: 1300 + i },
    ],
    ...extra,
  };
};

async function main() {
  let dir: string | null = null;
  let databaseUrl = values.db;
  if (!databaseUrl) {
    dir = mkdtempSync(join(tmpdir(), 'lanebridge-soak-'));
    databaseUrl = join(dir, 'soak.db');
  }
  const engine = /^postgres/i.test(databaseUrl) ? 'postgres' : 'sqlite';
  const store = openDataStore(databaseUrl, { poolSize: 2 });
  await store.migrate();
  const accounts = accountsService(store);
  const org = await accounts.createOrganization(`Soak ${new Date().toISOString()}`);
  const { key } = await accounts.createKey(org.id, {
    name: 'soak',
    externalSystem: 'bench',
    scopes: [...SCOPES],
    perMinute: 1_000_000_000,
    perDay: 2_000_000_000,
  });
  await store.close();

  const port = await freePort();
  const server = spawn(join(process.cwd(), 'bin/lanebridge'), ['serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...internalEnv({ rateLimits: false }) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let exitedEarly: string | null = null;
  server.on('exit', (code, signal) => {
    exitedEarly = `server exited (code ${code}, signal ${signal})`;
  });
  const stop = () => {
    if (server.exitCode === null) server.kill('SIGTERM');
  };
  process.on('SIGINT', () => {
    stop();
    process.exit(130);
  });
  try {
    for (let i = 0; i < 300; i++) {
      const ok = await request(port, 'GET', '/readyz', key).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Seed: customers, carriers, locations, 400 loads.
    const seed = async (path: string, items: unknown[]) => {
      const r = await request(port, 'POST', path, key, { items });
      if (r.status !== 200 || JSON.parse(r.text).error_count > 0) throw new Error(`seed ${path}: ${r.status} ${r.text.slice(0, 300)}`);
    };
    await seed(
      '/v2/tms-api/batch/customers',
      Array.from({ length: 20 }, (_, i) => ({ operation: 'upsert', external_reference_id: `C-${i}`, customer: { name: `Customer ${i}` } })),
    );
    await seed(
      '/v2/tms-api/batch/carriers',
      Array.from({ length: 20 }, (_, i) => ({
        operation: 'upsert',
        external_reference_id: `K-${i}`,
        carrier: { name: `Carrier ${i}`, dot_number: `DOT${i}` },
      })),
    );
    await seed(
      '/v2/tms-api/batch/locations',
      ZIPS.map(([zip, state]) => ({ operation: 'upsert', external_reference_id: `LOC-${zip}`, location: { name: `DC ${zip}`, postal_code: zip, state } })),
    );
    for (let b = 0; b < 4; b++) {
      await seed(
        '/v2/tms-api/batch/loads',
        Array.from({ length: 100 }, (_, j) => ({ operation: 'upsert', load: loadBody(`SEED-${b * 100 + j}`, b * 100 + j) })),
      );
    }

    // The mix: 70% reads, 30% writes.
    let n = 0;
    const ops: { weight: number; name: string; run: () => Promise<{ status: number; text: string }> }[] = [
      { weight: 25, name: 'get load', run: () => request(port, 'GET', `/v2/tms-api/loads/SEED-${n % 400}`, key) },
      {
        weight: 15,
        name: 'list loads',
        run: () => request(port, 'GET', `/v2/tms-api/loads?status=DELIVERED,ACTIVE&sort=-created_at&page=${1 + (n % 5)}&page_size=50`, key),
      },
      { weight: 10, name: 'recommendations', run: () => request(port, 'GET', `/v2/tms-api/loads/SEED-${(n % 100) * 4}/carrier-recommendations`, key) },
      { weight: 10, name: 'get customer', run: () => request(port, 'GET', `/v2/tms-api/customers/C-${n % 20}`, key) },
      { weight: 10, name: 'list locations', run: () => request(port, 'GET', '/v2/tms-api/locations?state=TX&page_size=20', key) },
      { weight: 10, name: 'create load', run: () => request(port, 'POST', '/v2/tms-api/loads', key, loadBody(`SOAK-${process.pid}-${n}`, n)) },
      {
        weight: 8,
        name: 'update load',
        run: () => request(port, 'PUT', `/v2/tms-api/loads/SEED-${n % 400}`, key, { status: n % 2 ? 'DELIVERED' : 'ACTIVE', description: `tick ${n}` }),
      },
      {
        weight: 6,
        name: 'upsert customer',
        run: () =>
          request(port, 'POST', '/v2/tms-api/batch/customers', key, {
            items: Array.from({ length: 10 }, (_, i) => ({
              operation: 'upsert',
              external_reference_id: `SC-${(n + i) % 500}`,
              customer: { name: `Soak ${n}` },
            })),
          }),
      },
      {
        weight: 6,
        name: 'market rate',
        run: () =>
          request(port, 'POST', '/v2/tms-api/market-rates', key, {
            origin: { location_external_reference_id: 'LOC-75201' },
            destination: { location_external_reference_id: 'LOC-77002' },
            equipment_type: 'DRY_VAN',
            rate_per_mile: 2 + (n % 10) / 10,
          }),
      },
    ];
    const wheel = ops.flatMap((o) => Array.from({ length: o.weight }, () => o));

    // Server CPU and the machine's load per window tell a slow server from a starved one (shared machine).
    interface Window {
      start: number;
      latencies: number[];
      errors: number;
      rss: number[];
      cpuAtStart: number;
      load: number[];
    }
    const windows: Window[] = [];
    const errorsByKind: Record<string, number> = {};
    const byOp: Record<string, number[]> = {};
    const started = Date.now();
    const end = started + DURATION_S * 1000;
    const cpuNow = () => {
      try {
        return cpuOf(server.pid!);
      } catch {
        return 0;
      }
    };
    const newWindow = (at: number) => windows.push({ start: at, latencies: [], errors: 0, rss: [], cpuAtStart: cpuNow(), load: [] });
    newWindow(started);
    const rssTimer = setInterval(() => {
      try {
        windows[windows.length - 1]!.rss.push(rssOf(server.pid!));
        windows[windows.length - 1]!.load.push(loadAverage());
      } catch {
        // process gone
      }
    }, 1000);
    const inFlight = new Set<Promise<void>>();
    const interval = 1000 / RATE;
    let sent = 0;
    // Open loop: request i is due at started + i × interval; latency is counted from when it was due.
    while (sent < MAX_REQUESTS) {
      const due = started + sent * interval;
      if (due >= end) break;
      const now = Date.now();
      if (due > now) await new Promise((r) => setTimeout(r, due - now));
      if (Date.now() - windows[windows.length - 1]!.start >= WINDOW_MS) newWindow(Date.now());
      const w = windows[windows.length - 1]!;
      const op = wheel[n % wheel.length]!;
      const sentAt = Date.now();
      n++;
      sent++;
      const p = op
        .run()
        .then(
          (r) => {
            w.latencies.push(Date.now() - due);
            (byOp[op.name] ??= []).push(Date.now() - sentAt);
            if (r.status >= 400) {
              w.errors++;
              errorsByKind[`${op.name} ${r.status}`] = (errorsByKind[`${op.name} ${r.status}`] ?? 0) + 1;
            }
          },
          (err: Error) => {
            w.errors++;
            errorsByKind[`${op.name} ${err.message}`] = (errorsByKind[`${op.name} ${err.message}`] ?? 0) + 1;
          },
        )
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size > 2000) throw new Error('more than 2,000 requests outstanding: the server is not keeping up with this rate');
    }
    await Promise.all(inFlight);
    clearInterval(rssTimer);
    if (exitedEarly) console.error(`${exitedEarly} during the run`);

    const cpuAtEnd = cpuNow();
    const rows = windows.map((w, i) => {
      const sorted = [...w.latencies].map(Math.round).sort((a, b) => a - b);
      const nextCpu = windows[i + 1]?.cpuAtStart ?? cpuAtEnd;
      const seconds = ((windows[i + 1]?.start ?? Date.now()) - w.start) / 1000;
      return {
        t: Math.round((w.start - started) / 1000),
        requests: w.latencies.length,
        errors: w.errors,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        max: sorted[sorted.length - 1] ?? 0,
        rssMB: w.rss.length ? Math.round(Math.max(...w.rss) / 1048576) : null,
        serverCpuPct: seconds > 0 ? Math.round(((nextCpu - w.cpuAtStart) / seconds) * 100) : null,
        loadAvg: w.load.length ? Math.round(Math.max(...w.load) * 10) / 10 : null,
      };
    });
    const steady = rows.filter((r) => r.t >= WARMUP_S && r.requests > 0);
    const rssAfterWarmup = steady.map((r) => r.rssMB).filter((x): x is number => x !== null);
    const p99s = steady.map((r) => r.p99);
    const summary = {
      engine,
      durationS: DURATION_S,
      rate: RATE,
      warmupS: WARMUP_S,
      requests: rows.reduce((s, r) => s + r.requests, 0),
      errors: rows.reduce((s, r) => s + r.errors, 0),
      errorsByKind,
      achievedRate: Math.round(rows.reduce((s, r) => s + r.requests, 0) / DURATION_S),
      p99AfterWarmup: {
        min: Math.min(...p99s),
        median: percentile(
          [...p99s].sort((a, b) => a - b),
          50,
        ),
        max: Math.max(...p99s),
      },
      rssMB: { atWarmupEnd: rssAfterWarmup[0] ?? null, atEnd: rssAfterWarmup[rssAfterWarmup.length - 1] ?? null, max: Math.max(...rssAfterWarmup) },
      rssGrowthAfterWarmupPct:
        rssAfterWarmup.length >= 2 ? Math.round(((rssAfterWarmup[rssAfterWarmup.length - 1]! - rssAfterWarmup[0]!) / rssAfterWarmup[0]!) * 1000) / 10 : null,
      // Per operation, from when it was sent (not when it was due): where the time goes.
      byOperation: Object.fromEntries(
        Object.entries(byOp).map(([name, xs]) => {
          const sorted = [...xs].sort((a, b) => a - b);
          return [name, { n: xs.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }];
        }),
      ),
      windows: rows,
    };
    const out = values.out ?? join('bench', 'results', `soak-${engine}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, JSON.stringify(summary, null, 2));
    console.table(rows);
    const { windows: _w, ...headline } = summary;
    console.log(JSON.stringify(headline, null, 2));
    console.log(`written to ${out}`);
  } finally {
    stop();
    await new Promise((r) => (server.exitCode !== null ? r(null) : server.once('exit', r)));
    agent.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
