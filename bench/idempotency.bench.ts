/**
 * What an Idempotency-Key costs a write (D13, issue 17: goal at most 10 % more):
 *
 *   npx tsx bench/idempotency.bench.ts [--rounds 300] [--batch-rounds 30] [--db sqlite|postgres|both]
 *
 * In this process, through app.inject (the server's own work: no sockets, no load generator), on a fresh
 * SQLite file and a fresh PostgreSQL database (LANEBRIDGE_BENCH_PG_URL, default the local `test`; a
 * database of its own is created beside it and dropped afterwards):
 *
 * - single: `POST /v2/tms-api/loads` (a new load, two stops) without a key, and with a new key each time
 *   (a claim insert before the handler, the answer stored after it: two statements more);
 * - batch: `POST /v2/tms-api/batch/loads` with 100 upserts of new loads, without and with a key.
 *
 * The two variants alternate within each round (which goes first alternates too), so both see the same
 * machine state within milliseconds; figures are medians over rounds, and the ratio is the median of
 * the per-round ratios (keyed / plain). Two measures: wall time (what a client waits; it swings when
 * other work shares the machine) and this process's CPU time during the request (steadier on a busy
 * machine; on PostgreSQL it leaves out the server's own work). Rate limits are off (the limiter's cost
 * is the same either way).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { onScratchDatabases } from './scratch-databases.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '300' },
    'batch-rounds': { type: 'string', default: '30' },
    db: { type: 'string', default: 'both' },
  },
});
const ROUNDS = Number(args.rounds);
const BATCH_ROUNDS = Number(args['batch-rounds']);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function load(ref: string) {
  return {
    external_reference_id: ref,
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'CUST-1',
    status: 'DELIVERED',
    carrier_external_reference_id: 'CAR-1',
    weight: 42000,
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00.000Z', late_arrival: '2026-03-02T10:00:00.000Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00.000Z', late_arrival: '2026-03-03T12:00:00.000Z' },
    ],
  };
}

interface Result {
  engine: string;
  scenario: string;
  rounds: number;
  plainMs: number;
  keyedMs: number;
  ratio: number;
  plainCpuMs: number;
  keyedCpuMs: number;
  cpuRatio: number;
}

interface Sample {
  ms: number;
  cpuMs: number;
}

async function measure(engine: 'sqlite' | 'postgres', databaseUrl: string): Promise<Result[]> {
  const config = { ...loadConfig({}), databaseUrl, rateLimits: false, logLevel: 'silent' };
  const store = openDataStore(databaseUrl, { poolSize: 10 });
  await store.migrate();
  const { app, services } = await buildApp({ config, store, logger: false });
  try {
    const org = await services.accounts.createOrganization('idempotency bench');
    const key = await services.accounts.createKey(org.id, { name: 'bench', externalSystem: 'bench', scopes: [...SCOPES] });
    const headers = { 'x-api-key': key.key };
    /** Wall time and this process's CPU time (all its threads) of one request, in ms. */
    const post = async (url: string, body: unknown, idempotencyKey?: string): Promise<Sample> => {
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      const res = await app.inject({
        method: 'POST',
        url,
        headers: idempotencyKey ? { ...headers, 'idempotency-key': idempotencyKey } : headers,
        payload: body as never,
      });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const used = process.cpuUsage(cpu);
      if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      if (res.headers['idempotent-replayed']) throw new Error('unexpected replay');
      return { ms, cpuMs: (used.user + used.system) / 1000 };
    };
    for (const [url, body] of [
      ['/v2/tms-api/customers', { external_reference_id: 'CUST-1', name: 'Acme Foods' }],
      ['/v2/tms-api/carriers', { external_reference_id: 'CAR-1', name: 'Swift Transport' }],
      ['/v2/tms-api/locations', { external_reference_id: 'DAL', name: 'Dallas DC', postal_code: '75201', state: 'TX' }],
      ['/v2/tms-api/locations', { external_reference_id: 'HOU', name: 'Houston Port', postal_code: '77002', state: 'TX' }],
    ] as const) {
      await post(url, body);
    }

    let n = 0;
    const single = (keyed: boolean) => post('/v2/tms-api/loads', load(`S-${++n}`), keyed ? randomUUID() : undefined);
    const batch = (keyed: boolean) =>
      post(
        '/v2/tms-api/batch/loads',
        { items: Array.from({ length: 100 }, () => ({ operation: 'upsert', load: load(`B-${++n}`) })) },
        keyed ? randomUUID() : undefined,
      );

    const run = async (scenario: string, rounds: number, warmup: number, once: (keyed: boolean) => Promise<Sample>): Promise<Result> => {
      for (let i = 0; i < warmup; i++) {
        await once(false);
        await once(true);
      }
      const plain: Sample[] = [];
      const keyed: Sample[] = [];
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      for (let i = 0; i < rounds; i++) {
        let p: Sample;
        let k: Sample;
        if (i % 2 === 0) {
          p = await once(false);
          k = await once(true);
        } else {
          k = await once(true);
          p = await once(false);
        }
        plain.push(p);
        keyed.push(k);
        ratios.push(k.ms / p.ms);
        cpuRatios.push(k.cpuMs / p.cpuMs);
      }
      return {
        engine,
        scenario,
        rounds,
        plainMs: median(plain.map((x) => x.ms)),
        keyedMs: median(keyed.map((x) => x.ms)),
        ratio: median(ratios),
        plainCpuMs: median(plain.map((x) => x.cpuMs)),
        keyedCpuMs: median(keyed.map((x) => x.cpuMs)),
        cpuRatio: median(cpuRatios),
      };
    };
    return [await run('single load create', ROUNDS, 30, single), await run('batch of 100 load upserts', BATCH_ROUNDS, 3, batch)];
  } finally {
    await app.close();
    await store.close();
  }
}

const results: Result[] = await onScratchDatabases(args.db!, 'idem', measure);

process.stdout.write(
  '| engine | scenario | rounds | no key: ms | with key: ms | ratio | no key: CPU ms | with key: CPU ms | CPU ratio |\n|---|---|---|---|---|---|---|---|---|\n',
);
for (const r of results) {
  process.stdout.write(
    `| ${r.engine} | ${r.scenario} | ${r.rounds} | ${r.plainMs.toFixed(2)} | ${r.keyedMs.toFixed(2)} | ${r.ratio.toFixed(3)} | ` +
      `${r.plainCpuMs.toFixed(2)} | ${r.keyedCpuMs.toFixed(2)} | ${r.cpuRatio.toFixed(3)} |\n`,
  );
}
process.stdout.write(
  "ms: wall time of the request; CPU ms: this process's CPU time during it (PostgreSQL's own work not included); ratios: median of the per-round ratios (with key / without).\n",
);
