/**
 * What the events outbox (D11, issue 15: at most 15 % on a changed-load batch) costs a write, measured
 * in one process:
 *
 *   npx tsx bench/outbox.bench.ts [--rounds 60] [--db sqlite|postgres|both] [--loads 2000] [--url DATABASE_URL]
 *
 * Through app.inject (the server's own work: no sockets, no load generator), on a fresh SQLite file and a
 * fresh PostgreSQL database (LANEBRIDGE_BENCH_PG_URL, default the local `test`; a database of its own is
 * created beside it and dropped afterwards), with `--loads` delivered history loads on the lanes first.
 * Scenarios: the bench's "batch of 100 upserts, each load changed" (open loads, a delivery window and a
 * customer rate alternate) and a single load update (PUT, one field). Each round runs the write with the
 * outbox as built and with the outbox's draft replaced by "no events" (the same pipeline otherwise:
 * counters and org_versions are written either way), alternating which goes first; figures are medians
 * over rounds and the ratio is the median of per-round ratios. With the outbox on, the time inside the
 * outbox's draft (building each event's data) and write (storing the events) is reported too.
 *
 * --url: an existing database instead (e.g. the benchmark's seeded 1,000,000 loads, so the tables and
 * indexes are of that size); an organization of its own is added to it, with the same small set of
 * records and `--loads` history loads.
 */
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { onScratchDatabases } from './scratch-databases.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '60' },
    db: { type: 'string', default: 'both' },
    loads: { type: 'string', default: '2000' },
    url: { type: 'string' },
  },
});
const ROUNDS = Number(args.rounds);
const HISTORY = Number(args.loads);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const CITIES = [
  ['DAL', '75201', 'TX'],
  ['HOU', '77002', 'TX'],
  ['CHI', '60601', 'IL'],
  ['ATL', '30303', 'GA'],
  ['LAX', '90012', 'CA'],
  ['MEM', '38103', 'TN'],
  ['IND', '46204', 'IN'],
  ['DEN', '80202', 'CO'],
  ['PHX', '85004', 'AZ'],
  ['NWK', '07102', 'NJ'],
] as const;

function stops(i: number, k = 0) {
  const a = CITIES[i % CITIES.length]![0];
  const b = CITIES[(i * 7 + 3) % CITIES.length]![0];
  const day = 1 + (i % 27);
  return [
    {
      stop_type: 'Pickup',
      location_external_reference_id: a,
      early_arrival: `2026-12-${String(day).padStart(2, '0')}T08:00:00Z`,
      late_arrival: `2026-12-${String(day).padStart(2, '0')}T10:00:00Z`,
    },
    {
      stop_type: 'Delivery',
      location_external_reference_id: b === a ? 'NWK' : b,
      early_arrival: `2026-12-${String(day + 1).padStart(2, '0')}T08:00:00Z`,
      late_arrival: `2026-12-${String(day + 1).padStart(2, '0')}T${k ? 13 : 12}:00:00Z`,
    },
  ];
}

interface Result {
  engine: string;
  scenario: string;
  offMs: number;
  onMs: number;
  ratio: number;
  offCpuMs: number;
  onCpuMs: number;
  cpuRatio: number;
  draftMs: number;
  writeMs: number;
}

async function measure(engine: 'sqlite' | 'postgres', databaseUrl: string): Promise<Result[]> {
  const config = { ...loadConfig({}), databaseUrl, rateLimits: false, logLevel: 'silent' };
  const store = openDataStore(databaseUrl, { poolSize: 10 });
  await store.migrate();
  const { app, services, events } = await buildApp({ config, store, logger: false, recommendationFollowUp: 'manual', webhookDelivery: 'manual' });
  try {
    const org = await services.accounts.createOrganization('outbox bench');
    const key = await services.accounts.createKey(org.id, { name: 'bench', externalSystem: 'bench', scopes: [...SCOPES] });
    const headers = { 'x-api-key': key.key, 'content-type': 'application/json' };
    let lastCpuMs = 0;
    const send = async (method: 'POST' | 'PUT', url: string, body: string): Promise<number> => {
      const cpu = process.cpuUsage();
      const started = process.hrtime.bigint();
      const res = await app.inject({ method, url, headers, payload: body });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const used = process.cpuUsage(cpu);
      lastCpuMs = (used.user + used.system) / 1000;
      if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      if (url.includes('/batch/') && res.body.includes('"failed"') && !res.body.includes('"failed":0'))
        throw new Error(`batch item failed: ${res.body.slice(0, 300)}`);
      return ms;
    };
    await send('POST', '/v2/tms-api/customers', JSON.stringify({ external_reference_id: 'CUST-1', name: 'Acme Foods' }));
    for (let c = 1; c <= 20; c++) await send('POST', '/v2/tms-api/carriers', JSON.stringify({ external_reference_id: `CAR-${c}`, name: `Carrier ${c}` }));
    await send(
      'POST',
      '/v2/tms-api/batch/locations',
      JSON.stringify({
        items: CITIES.map(([ref, zip, state]) => ({ operation: 'upsert', external_reference_id: ref, location: { name: ref, postal_code: zip, state } })),
      }),
    );
    // Delivered history on the same lanes, so the open loads have carriers to rank.
    for (let start = 0; start < HISTORY; start += 100) {
      const items = Array.from({ length: Math.min(100, HISTORY - start) }, (_, j) => {
        const i = start + j;
        return {
          operation: 'upsert',
          external_reference_id: `H-${i}`,
          load: {
            equipment_type: 'DRY_VAN',
            transport_mode: 'FTL',
            customer_external_reference_id: 'CUST-1',
            carrier_external_reference_id: `CAR-${1 + (i % 20)}`,
            status: 'DELIVERED',
            stops: stops(i).map((s) => ({
              ...s,
              early_arrival: s.early_arrival.replace('2026-12', '2026-10'),
              late_arrival: s.late_arrival.replace('2026-12', '2026-10'),
            })),
            financial_rates: [{ rate_entity: 'CARRIER', amount: 1500 + (i % 300) }],
          },
        };
      });
      await send('POST', '/v2/tms-api/batch/loads', JSON.stringify({ items }));
    }
    const changing = [0, 1].map((k) =>
      JSON.stringify({
        items: Array.from({ length: 100 }, (_, i) => ({
          operation: 'upsert',
          external_reference_id: `CHANGE-${i}`,
          load: {
            equipment_type: 'DRY_VAN',
            transport_mode: 'FTL',
            customer_external_reference_id: 'CUST-1',
            status: 'ACTIVE',
            stops: stops(i, k),
            financial_rates: [{ rate_entity: 'CUSTOMER', amount: 2000 + i + k }],
          },
        })),
      }),
    );
    await send('POST', '/v2/tms-api/batch/loads', changing[0]!);
    let singleCounter = 0;

    const outbox = events.outbox;
    const draft = outbox.draft.bind(outbox);
    const write = outbox.write.bind(outbox);
    let draftMs = 0;
    let writeMs = 0;
    outbox.draft = async (...a) => {
      const t = process.hrtime.bigint();
      try {
        return await draft(...a);
      } finally {
        draftMs += Number(process.hrtime.bigint() - t) / 1e6;
      }
    };
    outbox.write = async (...a) => {
      const t = process.hrtime.bigint();
      try {
        return await write(...a);
      } finally {
        writeMs += Number(process.hrtime.bigint() - t) / 1e6;
      }
    };
    const timedDraft = outbox.draft;
    const setOutbox = (on: boolean) => {
      outbox.draft = on ? timedDraft : async () => [];
    };

    const run = async (scenario: string, once: () => Promise<number>): Promise<Result> => {
      for (let i = 0; i < 6; i++) {
        setOutbox(i % 2 === 0);
        await once();
      }
      const off: number[] = [];
      const on: number[] = [];
      const ratios: number[] = [];
      const offCpu: number[] = [];
      const onCpu: number[] = [];
      const cpuRatios: number[] = [];
      const draftPer: number[] = [];
      const writePer: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const order = i % 2 === 0 ? [false, true] : [true, false];
        const got: Record<string, number> = {};
        const cpuGot: Record<string, number> = {};
        for (const o of order) {
          setOutbox(o);
          draftMs = 0;
          writeMs = 0;
          got[String(o)] = await once();
          cpuGot[String(o)] = lastCpuMs;
          if (o) {
            draftPer.push(draftMs);
            writePer.push(writeMs);
          }
        }
        off.push(got.false!);
        on.push(got.true!);
        ratios.push(got.true! / got.false!);
        offCpu.push(cpuGot.false!);
        onCpu.push(cpuGot.true!);
        cpuRatios.push(cpuGot.true! / cpuGot.false!);
      }
      setOutbox(true);
      return {
        engine,
        scenario,
        offMs: median(off),
        onMs: median(on),
        ratio: median(ratios),
        offCpuMs: median(offCpu),
        onCpuMs: median(onCpu),
        cpuRatio: median(cpuRatios),
        draftMs: median(draftPer),
        writeMs: median(writePer),
      };
    };
    let round = 1;
    const batch = () => send('POST', '/v2/tms-api/batch/loads', changing[round++ % 2]!);
    const single = () => send('PUT', `/v2/tms-api/loads/CHANGE-${singleCounter % 100}`, JSON.stringify({ assigned_dispatcher: `single-${++singleCounter}` }));
    return [await run('batch of 100 changed load upserts', batch), await run('single load update (PUT, one field)', single)];
  } finally {
    await app.close();
    await store.close();
  }
}

const results: Result[] = args.url
  ? await measure(args.url.startsWith('postgres') ? 'postgres' : 'sqlite', args.url)
  : await onScratchDatabases(args.db!, 'outbox', measure);

process.stdout.write(
  `| engine | scenario | rounds | no events: ms | with events: ms | ratio | no events: CPU ms | with events: CPU ms | CPU ratio | in draft: ms | in write: ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n`,
);
for (const r of results) {
  process.stdout.write(
    `| ${r.engine} | ${r.scenario} | ${ROUNDS} | ${r.offMs.toFixed(2)} | ${r.onMs.toFixed(2)} | ${r.ratio.toFixed(3)} | ${r.offCpuMs.toFixed(2)} | ${r.onCpuMs.toFixed(2)} | ${r.cpuRatio.toFixed(3)} | ${r.draftMs.toFixed(2)} | ${r.writeMs.toFixed(2)} |\n`,
  );
}
process.stdout.write(
  "ms: wall time of the request (medians); CPU ms: this process's CPU time during it (steadier on a busy machine; PostgreSQL's own work not included); ratio: median of per-round ratios (with events / without); draft: building the events' data; write: storing them.\n",
);
