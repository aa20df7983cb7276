import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';
import { foldCase } from '../../fold.js';

type Db = Kysely<unknown>;

/** The folded search columns (src/lib/fold.ts) and the text each is folded from. */
const FOLDED = [
  { table: 'customers', column: 'name_folded', from: 'name' },
  { table: 'carriers', column: 'name_folded', from: 'name' },
  { table: 'locations', column: 'name_folded', from: 'name' },
  { table: 'locations', column: 'city_folded', from: 'city' },
] as const;

const BACKFILL_CHUNK = 2000;

/** Fills a folded column for the rows that existed before it, a chunk of rows at a time (by id). */
async function backfill(db: Db, dialect: Dialect, table: string, column: string, from: string): Promise<void> {
  let after = '';
  for (;;) {
    const { rows } = await sql<{
      id: string;
      text: string | null;
    }>`select id, ${sql.ref(from)} as text from ${sql.table(table)} where id > ${after} order by id limit ${BACKFILL_CHUNK}`.execute(db);
    if (rows.length === 0) return;
    const changed = rows.filter((r) => r.text !== null);
    if (changed.length > 0) {
      if (dialect === 'postgres') {
        await sql`update ${sql.table(table)} as t set ${sql.ref(column)} = v.folded
          from (select unnest(${changed.map((r) => r.id)}::text[]) as id, unnest(${changed.map((r) => foldCase(r.text!))}::text[]) as folded) as v
          where t.id = v.id`.execute(db);
      } else {
        for (const r of changed) await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${foldCase(r.text!)} where id = ${r.id}`.execute(db);
      }
    }
    after = rows[rows.length - 1]!.id;
  }
}

/**
 * PostgreSQL: pg_trgm for "contains" on the folded names. Created when the role may (superuser, or a
 * trusted extension since PostgreSQL 13 with CREATE on the database); when it cannot be, the migration
 * still succeeds and the filters scan the organization's rows (docs/deployment.md says how to add the
 * indexes later). The DO block's exception handler keeps a refusal from aborting the migration's transaction.
 */
async function trigramsAvailable(db: Db): Promise<boolean> {
  await sql
    .raw(
      `do $$ begin
         create extension if not exists pg_trgm;
       exception when others then
         raise notice 'pg_trgm could not be created (%): name_contains runs without a trigram index', sqlerrm;
       end $$`,
    )
    .execute(db);
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname = 'pg_trgm'`.execute(db);
  return (rows[0]?.n ?? 0) > 0;
}

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0013(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // Every case-insensitive filter (docs/api.md, "Lists") compares text folded by the one function in
      // JavaScript, so both engines agree (SQL lower() folds only ASCII under PostgreSQL's "C" collation
      // and in SQLite).
      for (const f of FOLDED) {
        await sql.raw(`alter table ${f.table} add column ${f.column} text${dialect === 'postgres' ? ' collate "C"' : ''}`).execute(db);
        await backfill(db, dialect, f.table, f.column, f.from);
      }
      // city is an equality filter: a plain index serves it on both engines.
      await sql.raw('create index locations_city_folded_idx on locations (org_id, city_folded)').execute(db);
      if (dialect === 'postgres') {
        if (await trigramsAvailable(db)) {
          for (const table of ['customers', 'carriers', 'locations']) {
            await sql.raw(`create index ${table}_name_folded_trgm_idx on ${table} using gin (name_folded gin_trgm_ops)`).execute(db);
          }
        }
      } else {
        // SQLite has no index for "contains": the narrow (org_id, name_folded) index is read instead of
        // the table (a covering scan of the organization's names).
        for (const table of ['customers', 'carriers', 'locations']) {
          await sql.raw(`create index ${table}_name_folded_idx on ${table} (org_id, name_folded)`).execute(db);
        }
      }

      // average_carrier_rate is a mean in one currency
      // (docs/api.md, "Lane history and carrier recommendations"). Each history row keeps its load's
      // CARRIER rates in one currency: the one most of them use (ties: USD, then the first by code),
      // totalled in that currency; the recommendation then averages a carrier's rows of its most used
      // currency.
      await sql.raw('alter table lane_history add column carrier_rate_currency text').execute(db);
      await sql
        .raw(
          `update lane_history set carrier_rate_currency = (
             select r.currency from load_rates r
             where r.load_id = lane_history.load_id and r.rate_entity = 'CARRIER'
             group by r.currency
             order by count(*) desc, case when r.currency = 'USD' then 0 else 1 end, r.currency
             limit 1)
           where carrier_rate_total is not null`,
        )
        .execute(db);
      await sql
        .raw(
          `update lane_history set carrier_rate_total = (
             select sum(r.amount) from load_rates r
             where r.load_id = lane_history.load_id and r.rate_entity = 'CARRIER' and r.currency = lane_history.carrier_rate_currency)
           where carrier_rate_currency is not null`,
        )
        .execute(db);
      // The lane read takes every column it scores from the index (0008): the currency joins them.
      await sql.raw('drop index lane_history_lane_idx').execute(db);
      const key = 'org_id, equipment_type, origin_cell, destination_cell';
      const carried =
        'origin_latitude, origin_longitude, destination_latitude, destination_longitude, delivered_at, carrier_id, carrier_external_reference_id, carrier_rate_total, carrier_rate_currency';
      await sql
        .raw(
          dialect === 'postgres'
            ? `create index lane_history_lane_idx on lane_history (${key}) include (${carried})`
            : `create index lane_history_lane_idx on lane_history (${key}, ${carried})`,
        )
        .execute(db);
    },
  };
}
