/**
 * A broker's years of history as one import (the imports issue's scenario): one NDJSON file of N loads
 * (default 1,000,000; 2 stops each on 50 ZIP-code locations, two thirds DELIVERED with one of 200
 * carriers, rates on every load, pickups over two years), uploaded in parts of 64 MiB, completed, and run
 * by the import runner inside `serve` (as a single-process deployment runs it):
 *
 *   npx tsx bench/imports.bench.ts [--db sqlite|postgres|both] [--loads 1000000] [--probe-ms 100] [--profile DIR] [--tree DIR] [--no-pin]
 *
 * The server runs the compiled build, as production does (docs/deployment.md; built here first with
 * `npm run build`); `--loader` runs the TypeScript sources through tsx instead (about 30 MB more
 * resident memory). `--tree DIR`: the server and the CLI run from that checkout (an earlier commit, for
 * a before/after in one session; default this one), built there too. BENCH_SERVER_NODE_ARGS: node options for the server; BENCH_SERVER_LOG:
 * a file for its log.
 *
 * For each engine: a fresh database, an organization and key made with the CLI, the server pinned to core
 * 0 (taskset, when present; PostgreSQL and this process on core 1). Figures:
 *   - rows per second: rows_total ÷ (finished_at − started_at) of the import, as GET /imports/{id} tells;
 *   - the server's resident memory (VmRSS), sampled every 200 ms from its start to the import's end: the
 *     file is streamed, never held;
 *   - single-load PUTs (one field changed on a load made before), one at a time at random gaps of 0.5–1.5 ×
 *     --probe-ms (apart from the status reads): their p50/p95 when the server is idle (200 before
 *     completing the import) and while the import runs (none while it runs with --probe-ms 0: the
 *     import's speed with nothing else writing).
 * The generated file is written to a temporary folder and removed afterwards.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { onScratchDatabases } from './scratch-databases.js';
import { internalEnv, pinLoadGenerator, rssMb, startServer, stopServer, waitFor } from './servers.js';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    loads: { type: 'string', default: '1000000' },
    'probe-ms': { type: 'string', default: '100' },
    // Writes a V8 CPU profile of each server into this folder when it stops (where the time goes).
    profile: { type: 'string' },
    tree: { type: 'string' },
    loader: { type: 'boolean', default: false },
    // The server free to use both cores (SQLite's checkpoint thread beside its event loop, as in an
    // embedded deployment; PostgreSQL's backends beside it), not pinned to core 0.
    'no-pin': { type: 'boolean', default: false },
  },
});
const LOADS = Number(args.loads);
const PROBE_MS = Number(args['probe-ms']);
const PART_BYTES = 64 * 1024 * 1024;
const LOCATIONS = 50;
const CARRIERS = 200;
const CUSTOMERS = 20;
const PORT = 18_700;
// The checkout whose server and CLI are measured.
const root = args.tree ? resolve(args.tree) : join(dirname(fileURLToPath(import.meta.url)), '..');
const pinned = args['no-pin'] ? false : pinLoadGenerator();

const log = (msg: string) => process.stderr.write(`[imports-bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Location i: a ZIP code of a real US place (the service resolves coordinates from it). */
const ZIPS = [
  ['75201', 'TX'],
  ['77002', 'TX'],
  ['60601', 'IL'],
  ['30303', 'GA'],
  ['90012', 'CA'],
  ['38103', 'TN'],
  ['46204', 'IN'],
  ['80202', 'CO'],
  ['85004', 'AZ'],
  ['07102', 'NJ'],
  ['98101', 'WA'],
  ['97204', 'OR'],
  ['94103', 'CA'],
  ['89101', 'NV'],
  ['84101', 'UT'],
  ['87102', 'NM'],
  ['73102', 'OK'],
  ['64106', 'MO'],
  ['68102', 'NE'],
  ['55401', 'MN'],
  ['53202', 'WI'],
  ['48226', 'MI'],
  ['43215', 'OH'],
  ['15222', 'PA'],
  ['19103', 'PA'],
  ['10001', 'NY'],
  ['02108', 'MA'],
  ['21201', 'MD'],
  ['23219', 'VA'],
  ['27601', 'NC'],
  ['29201', 'SC'],
  ['32202', 'FL'],
  ['33130', 'FL'],
  ['35203', 'AL'],
  ['39201', 'MS'],
  ['70112', 'LA'],
  ['72201', 'AR'],
  ['40202', 'KY'],
  ['37203', 'TN'],
  ['50309', 'IA'],
  ['66603', 'KS'],
  ['57104', 'SD'],
  ['58102', 'ND'],
  ['59101', 'MT'],
  ['83702', 'ID'],
  ['82001', 'WY'],
  ['04101', 'ME'],
  ['05401', 'VT'],
  ['03101', 'NH'],
  ['06103', 'CT'],
] as const;

/** Load i of the history file (one NDJSON line). */
function historyLoad(i: number): string {
  const from = i % LOCATIONS;
  const to = (from + 1 + ((i >> 3) % (LOCATIONS - 1))) % LOCATIONS;
  const pickup = new Date(Date.UTC(2024, 10, 1) + (i % 730) * 86_400_000 + (i % 9) * 3_600_000);
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z';
  const p = pickup.getTime();
  const delivered = i % 3 !== 2;
  const miles = 200 + ((from * 37 + to * 11) % 1600);
  return JSON.stringify({
    external_reference_id: `IMP-${i}`,
    status: delivered ? 'DELIVERED' : 'ACTIVE',
    equipment_type: i % 5 === 0 ? 'REEFER' : 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: `CUST-${i % CUSTOMERS}`,
    ...(delivered ? { carrier_external_reference_id: `CAR-${(i * 7) % CARRIERS}` } : {}),
    stops: [
      { stop_type: 'PICKUP', location_external_reference_id: `LOC-${from}`, early_arrival: iso(p), late_arrival: iso(p + 2 * 3_600_000) },
      { stop_type: 'DELIVERY', location_external_reference_id: `LOC-${to}`, early_arrival: iso(p + 30 * 3_600_000), late_arrival: iso(p + 34 * 3_600_000) },
    ],
    financial_rates: [
      { rate_entity: 'CUSTOMER', amount: Math.round(miles * 2.6) + (i % 97), currency: 'USD', rate_type: 'LINEHAUL' },
      ...(delivered ? [{ rate_entity: 'CARRIER', amount: Math.round(miles * 2.1) + (i % 89), currency: 'USD', rate_type: 'LINEHAUL' }] : []),
    ],
  });
}

/** Writes the file (streamed, as a TMS export would be); its size in bytes. */
async function writeFile(path: string): Promise<number> {
  const out = createWriteStream(path);
  let buffer = '';
  for (let i = 0; i < LOADS; i++) {
    buffer += historyLoad(i) + '\n';
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await once(out, 'drain');
      buffer = '';
    }
  }
  out.end(buffer);
  await once(out, 'finish');
  return statSync(path).size;
}

function cli(databaseUrl: string, argv: string[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, [join(root, 'bin/lanebridge'), ...argv], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  return JSON.parse(out) as Record<string, unknown>;
}

/** One request; its status, parsed body and wall time. `body` a string, or a stream of a file's byte range. */
function request(
  key: string,
  method: string,
  path: string,
  body?: string | { file: string; start: number; end: number },
  contentType = 'application/json',
): Promise<{ status: number; json: any; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      { host: '127.0.0.1', port: PORT, method, path, headers: { 'x-api-key': key, ...(body !== undefined ? { 'content-type': contentType } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null, ms: performance.now() - started });
        });
      },
    );
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (typeof body === 'string') req.end(body);
    else createReadStream(body.file, { start: body.start, end: body.end }).pipe(req);
  });
}

async function ok(key: string, method: string, path: string, body?: unknown) {
  const r = await request(key, method, path, body === undefined ? undefined : JSON.stringify(body));
  if (r.status >= 300 || (r.json && r.json.error_count > 0)) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json).slice(0, 500)}`);
  return r;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

interface Result {
  engine: string;
  rows: number;
  succeeded: number;
  seconds: number;
  rowsPerSecond: number;
  peakRssMb: number;
  idle: number[];
  during: number[];
  refused: number[];
}

const serverBin = args.loader ? 'bin/lanebridge' : 'bin/lanebridge-compiled';
if (!args.loader) {
  log(`building ${root} (npm run build)`);
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}

const dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-bench-'));
const file = join(dir, 'history.ndjson');
log(`writing ${LOADS} loads to ${file}`);
const bytes = await writeFile(file);
log(`${(bytes / 1e6).toFixed(0)} MB`);

try {
  const results = await onScratchDatabases(args.db!, 'imports', async (engine, databaseUrl): Promise<Result[]> => {
    const org = cli(databaseUrl, ['org', 'create', '--name', `imports bench ${engine}`]);
    const key = String(cli(databaseUrl, ['key', 'create', '--org', String(org.id), '--name', 'bench', '--system', 'bench', '--scopes', 'all']).key);
    const importsDir = join(dir, `parts-${engine}`);
    const child = startServer(
      root,
      join(root, serverBin),
      {
        DATABASE_URL: databaseUrl,
        PORT: String(PORT),
        ...internalEnv({ rateLimits: false }),
        IMPORTS_DIR: importsDir,
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      },
      pinned,
      [
        ...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args.profile)}`] : []),
        ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ],
    );
    const pid = child.pid!;
    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 200);
    try {
      await waitFor(`http://127.0.0.1:${PORT}/readyz`);
      await ok(key, 'POST', '/v2/tms-api/batch/locations', {
        items: ZIPS.map(([zip, state], i) => ({
          operation: 'upsert',
          external_reference_id: `LOC-${i}`,
          location: { external_reference_id: `LOC-${i}`, name: `Dock ${i}`, postal_code: zip, state, country: 'US' },
        })),
      });
      await ok(key, 'POST', '/v2/tms-api/batch/customers', {
        items: Array.from({ length: CUSTOMERS }, (_, i) => ({
          operation: 'upsert',
          external_reference_id: `CUST-${i}`,
          customer: { external_reference_id: `CUST-${i}`, name: `Customer ${i}` },
        })),
      });
      for (let b = 0; b < CARRIERS; b += 100)
        await ok(key, 'POST', '/v2/tms-api/batch/carriers', {
          items: Array.from({ length: 100 }, (_, i) => ({
            operation: 'upsert',
            external_reference_id: `CAR-${b + i}`,
            carrier: { external_reference_id: `CAR-${b + i}`, name: `Carrier ${b + i}`, dot_number: String(2000000 + b + i) },
          })),
        });
      // The loads the PUT probes change (made before the import, through the API).
      const probeRefs = Array.from({ length: 20 }, (_, i) => `PROBE-${i}`);
      for (const ref of probeRefs)
        await ok(key, 'POST', '/v2/tms-api/loads', { ...JSON.parse(historyLoad(3 * Number(ref.slice(6)) + 2)), external_reference_id: ref });
      let probes = 0;
      const refused: number[] = [];
      // A probe answered other than 200 is counted (with its status), not fatal: what the import does to writes beside it is the point.
      const probe = async () => {
        const r = await request(key, 'PUT', `/v2/tms-api/loads/${probeRefs[probes % probeRefs.length]}`, JSON.stringify({ description: `probe ${probes++}` }));
        if (r.status !== 200) {
          // The first refusal's answer is shown: what the integrator's client would read.
          if (refused.length === 0) log(`probe answered ${r.status} after ${r.ms.toFixed(0)} ms: ${JSON.stringify(r.json).slice(0, 300)}`);
          refused.push(r.status);
        }
        return r.ms;
      };

      const created = await ok(key, 'POST', '/v2/tms-api/imports', { resource: 'loads' });
      const id = created.json.id as string;
      log(`${engine}: uploading ${Math.ceil(bytes / PART_BYTES)} parts`);
      for (let n = 1, start = 0; start < bytes; n++, start += PART_BYTES) {
        const put = await request(
          key,
          'PUT',
          `/v2/tms-api/imports/${id}/parts/${n}`,
          { file, start, end: Math.min(bytes, start + PART_BYTES) - 1 },
          'application/x-ndjson',
        );
        if (put.status !== 200) throw new Error(`part ${n}: ${put.status} ${JSON.stringify(put.json)}`);
      }
      const idle: number[] = [];
      for (let i = 0; i < 200; i++) {
        idle.push(await probe());
        await new Promise((r) => setTimeout(r, 20 * Math.random()));
      }
      await ok(key, 'POST', `/v2/tms-api/imports/${id}/complete`);
      log(`${engine}: running`);
      const during: number[] = [];
      let status: any;
      let lastLog = 0;
      // The probes run on their own, at random gaps (uniform, 0.5–1.5 × --probe-ms) and apart from the
      // status reads: a probe sent at a fixed period, or right after a status read was answered, falls in
      // step with the runner's own cycle (a chunk of about IMPORT_CHUNK_MS, then a pause) and lands in the
      // same phase of it every time, which measured a PUT beside a SQLite import at 6 ms or 90 ms at p95
      // depending on that phase alone. Counted while the import is running.
      let running = false;
      let ended = false;
      // --probe-ms 0: no probes while the import runs (its speed with nothing else writing).
      const probing = (async () => {
        while (!ended && PROBE_MS > 0) {
          await new Promise((r) => setTimeout(r, PROBE_MS * (0.5 + Math.random())));
          if (ended) break;
          const wasRunning = running;
          const ms = await probe();
          if (wasRunning && running) during.push(ms);
        }
      })();
      // A failed probe ends the run through the status loop below (not as an unhandled rejection).
      let probeFailure: unknown = null;
      probing.catch((err: unknown) => {
        probeFailure = err;
        ended = true;
      });
      try {
        for (;;) {
          if (probeFailure) throw probeFailure;
          const r = await request(key, 'GET', `/v2/tms-api/imports/${id}`);
          status = r.json;
          if (!['queued', 'running'].includes(status.status)) break;
          running = status.status === 'running';
          if (Date.now() - lastLog > 15_000) {
            lastLog = Date.now();
            log(
              `${engine}: ${status.rows_processed} / ${status.rows_total ?? '?'} rows, ${status.rows_per_second ?? '?'} rows/s, RSS peak ${peakRss.toFixed(0)} MB`,
            );
          }
          await new Promise((r) => setTimeout(r, 500));
        }
      } finally {
        running = false;
        ended = true;
        await probing.catch(() => undefined);
      }
      if (status.status !== 'completed') throw new Error(`import ended ${status.status}: ${JSON.stringify(status)}`);
      const seconds = (Date.parse(status.finished_at) - Date.parse(status.started_at)) / 1000;
      return [
        {
          engine,
          rows: status.rows_total,
          succeeded: status.rows_succeeded,
          seconds,
          rowsPerSecond: status.rows_total / seconds,
          peakRssMb: peakRss,
          idle,
          during,
          refused,
        },
      ];
    } finally {
      clearInterval(sampler);
      await stopServer(child);
    }
  });
  process.stdout.write(
    `| engine | rows | seconds | rows/s | server RSS peak MB | PUT idle p50 / p95 ms | PUT during import p50 / p95 ms (n) | p95 during ÷ idle | probes not 200 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n` +
      results
        .map(
          (r) =>
            `| ${r.engine} | ${r.succeeded.toLocaleString('en-US')} of ${r.rows.toLocaleString('en-US')} | ${r.seconds.toFixed(1)} | ${Math.round(r.rowsPerSecond).toLocaleString('en-US')} | ${r.peakRssMb.toFixed(0)} | ${quantile(r.idle, 0.5).toFixed(1)} / ${quantile(r.idle, 0.95).toFixed(1)} | ${quantile(r.during, 0.5).toFixed(1)} / ${quantile(r.during, 0.95).toFixed(1)} (${r.during.length}) | ${r.during.length ? (quantile(r.during, 0.95) / quantile(r.idle, 0.95)).toFixed(2) : '–'} | ${r.refused.length ? `${r.refused.length} (${[...new Set(r.refused)].join(', ')})` : 0} |`,
        )
        .join('\n') +
      '\n',
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
