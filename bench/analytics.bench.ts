/**
 * What the lane analytics run adds to a batch of 100 loads (issue 5: at most 50 ms).
 *
 *   npx tsx bench/analytics.bench.ts [sqlite|postgres]
 *
 * Uses the database `npm run bench` seeded with 1,000,000 loads (bench/results/seed-<engine>-1000000.json).
 * A batch of 100 delivered loads touches at most 100 lanes (a load that moves lanes touches two); the
 * run refreshes their stats in one transaction: one grouped read over their history, one delete, one
 * insert. Timed here directly on the lanes of 100 history loads of the seed, 7 times; prints the median.
 * The refresh rewrites lane_stats rows with what they already hold, so the database is left as it was.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDataStore } from '../src/lib/db/index.js';
import { refreshLaneStats } from '../src/modules/lanes/lanes.repo.js';
import type { LaneKey } from '../src/domain/lane.js';

const engine = process.argv[2] ?? 'sqlite';
const seedFile = join(dirname(fileURLToPath(import.meta.url)), 'results', `seed-${engine}-1000000.json`);
if (!existsSync(seedFile)) {
  process.stderr.write(`no ${seedFile}: run \`npm run bench -- --db ${engine}\` first (it seeds 1,000,000 loads)\n`);
  process.exit(1);
}
const seed = JSON.parse(readFileSync(seedFile, 'utf8')) as { databaseUrl: string; orgId: string; sampleHistoryLoads: string[] };
const store = openDataStore(seed.databaseUrl);
try {
  const rows = await store.db
    .selectFrom('lane_history as h')
    .innerJoin('loads as l', 'l.id', 'h.load_id')
    .select(['h.equipment_type', 'h.origin_cell', 'h.destination_cell'])
    .where('l.org_id', '=', seed.orgId)
    .where('l.external_reference_id', 'in', seed.sampleHistoryLoads.slice(0, 100))
    .execute();
  const lanes = [...new Map(rows.map((r) => [`${r.equipment_type}|${r.origin_cell}|${r.destination_cell}`, r as LaneKey])).values()];
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const started = performance.now();
    await store.db.transaction().execute((tx) => refreshLaneStats(tx, seed.orgId, lanes, new Date().toISOString()));
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const history = await store.db
    .selectFrom('lane_stats')
    .select((eb) => eb.fn.sum<number>('load_count').as('n'))
    .where('org_id', '=', seed.orgId)
    .executeTakeFirst();
  process.stdout.write(
    `${engine}: analytics run for the ${lanes.length} lanes of 100 history loads (${Number(history?.n ?? 0).toLocaleString('en-US')} history loads in all): ` +
      `median ${times[3]!.toFixed(1)} ms (runs: ${times.map((t) => t.toFixed(1)).join(', ')} ms)\n`,
  );
} finally {
  await store.close();
}
