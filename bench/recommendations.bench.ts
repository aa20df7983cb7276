/**
 * load.recommendations_changed at scale:  npx tsx bench/recommendations.bench.ts [sqlite|postgres] [--loads 1000000] [--batches 5]
 *
 * On the database `npm run bench` seeded (bench/results/seed-<engine>-<loads>.json; its open loads are
 * watched by migration 0010), sends batches of 100 new DELIVERED loads on busy lanes (the stops and
 * carriers of seeded history loads) and measures, per batch: the batch's own answer, the follow-up
 * that runs after it (from the answer to the last event written), how many open loads it ranked again
 * and how many changed lists it announced. The app runs in this process, as `serve` runs it.
 * Writes new loads into the benchmark database (references BENCH-REC-<run>-*).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { loads: { type: 'string', default: '1000000' }, batches: { type: 'string', default: '5' } },
});
const engine = positionals[0] ?? 'postgres';
const seed = JSON.parse(readFileSync(join(here, 'results', `seed-${engine}-${args.loads}.json`), 'utf8')) as {
  databaseUrl: string;
  key: string;
  sampleHistoryLoads: string[];
};
const store = openDataStore(seed.databaseUrl, { poolSize: 10 });
const t0 = performance.now();
await store.migrate();
const migrateMs = performance.now() - t0;
const config = { ...loadConfig({}), databaseUrl: seed.databaseUrl, rateLimits: false };
const built = await buildApp({ logger: false, config, store });
const headers = { 'x-api-key': seed.key };
const watched = await store.db
  .selectFrom('recommendation_watch')
  .select((eb) => eb.fn.countAll().as('n'))
  .executeTakeFirst();

// Busy lanes: the stops and carriers of seeded history loads.
const templates: { stops: unknown[]; carrier: string; equipment: string; customer: string }[] = [];
for (const ref of seed.sampleHistoryLoads.slice(0, 100 * Number(args.batches))) {
  const res = await built.app.inject({ method: 'GET', url: `/v2/tms-api/loads/${ref}`, headers });
  const l = JSON.parse(res.body);
  templates.push({
    stops: l.stops.map((s: any) => ({
      stop_type: s.stop_type,
      location_external_reference_id: s.location_external_reference_id,
      early_arrival: s.early_arrival,
      late_arrival: s.late_arrival,
    })),
    carrier: l.carrier_external_reference_id,
    equipment: l.equipment_type,
    customer: l.customer_external_reference_id,
  });
}
const run = Date.now().toString(36);
const rows: string[] = [];
for (let b = 0; b < Number(args.batches); b++) {
  const items = templates.slice(b * 100, b * 100 + 100).map((tp, i) => ({
    operation: 'create',
    load: {
      external_reference_id: `BENCH-REC-${run}-${b}-${i}`,
      equipment_type: tp.equipment,
      transport_mode: 'FTL',
      customer_external_reference_id: tp.customer,
      carrier_external_reference_id: tp.carrier,
      status: 'DELIVERED',
      stops: tp.stops,
    },
  }));
  const before = { ...built.recommendations.stats };
  const start = performance.now();
  const res = await built.app.inject({
    method: 'POST',
    url: '/v2/tms-api/batch/loads',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { items },
  });
  const answered = performance.now();
  if (res.statusCode !== 200 || JSON.parse(res.body).error_count !== 0) throw new Error(res.body.slice(0, 500));
  await built.recommendations.idle();
  const followed = performance.now();
  const s = built.recommendations.stats;
  rows.push(
    `| ${b + 1} | ${(answered - start).toFixed(1)} | ${(followed - answered).toFixed(1)} | ${s.ranked - before.ranked} | ${s.announced - before.announced} | ${s.passes - before.passes} |`,
  );
  process.stderr.write(
    `[rec] ${engine} batch ${b + 1}: answered ${(answered - start).toFixed(1)} ms, follow-up ${(followed - answered).toFixed(1)} ms, ranked ${s.ranked - before.ranked}, announced ${s.announced - before.announced}\n`,
  );
}
process.stdout.write(
  `${engine}, ${args.loads} loads, ${Number(watched?.n ?? 0)} open loads watched (migration 0010 took ${(migrateMs / 1000).toFixed(1)} s here if it ran)\n`,
);
process.stdout.write(
  '| batch | batch answered (ms) | follow-up after the answer (ms) | open loads ranked again | lists announced | passes |\n|---:|---:|---:|---:|---:|---:|\n',
);
process.stdout.write(`${rows.join('\n')}\n`);
await built.app.close();
await store.close();
