import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

/** The statuses of a load on its way (a backhaul's candidates, src/domain/enums.ts at the time). */
const BACKHAUL_STATUSES_SQL = "('COVERED', 'DISPATCHED', 'AT_SHIPPER', 'EN_ROUTE', 'AT_RECEIVER')";

/** A load's delivery deadline from its stops, as the write path sets it: its last Delivery/Both stop's late_arrival. */
const DEADLINE_OF_STOPS = sql`(select s.late_arrival from load_stops s
  where s.load_id = loads.id and s.stop_type in ('Delivery', 'Both')
  order by s.stop_number desc limit 1)`;

/**
 * Fills loads.delivery_deadline where it is null (loads written before migration 0021, or by an instance
 * of an older version during a rolling deploy), `batch` loads at a time in order of id, each batch its own
 * statement (its own transaction): no lock on the table as a whole, and a PostgreSQL statement stays far
 * under the request timeout. Runs after the migrations at every start (src/lib/db/store-common.ts, runMigrations), through the
 * partial index of unfilled loads (nothing to read once all are filled); a load with no delivery stop
 * stays null and is passed over. Until its load is filled, the backhaul read finds it by
 * its stops (underwayStops).
 */
export async function fillDeliveryDeadlines(db: Db, batch = 10_000): Promise<number> {
  let after = '';
  let filled = 0;
  for (;;) {
    const { rows } = await sql<{ id: string }>`select id from loads where delivery_deadline is null and id > ${after} order by id limit ${batch}`.execute(db);
    if (rows.length === 0) return filled;
    const last = rows[rows.length - 1]!.id;
    await sql`update loads set delivery_deadline = ${DEADLINE_OF_STOPS} where delivery_deadline is null and id > ${after} and id <= ${last}`.execute(db);
    filled += rows.length;
    after = last;
  }
}

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0021(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  return {
    async up(db: Db) {
      // The backhaul (docs/api.md, "Stop actuals, tracking events and recommendation evidence"): a
      // load's delivery deadline, the late_arrival of its last Delivery/Both stop (its lane's
      // destination), kept on the row as pickup_at is, so a recommendation finds the ranked carriers'
      // loads on their way that deliver in the window before the pickup by an index range, not by
      // probing the stops of every load the carriers have on their way (about 700 at a million loads, 5
      // ms a request). The column comes empty (on PostgreSQL a change of the catalogue only): it is
      // filled after the migrations, in batches outside this transaction (fillDeliveryDeadlines). Filled
      // here, the table stayed locked for the whole rewrite (about 80 s at a million loads).
      await db.schema.alterTable('loads').addColumn('delivery_deadline', 'text', text).execute();
      // The loads still to fill, by id: what the fill after the migrations walks (without it, finding
      // that none is left meant reading every load: 5 s at a million loads on SQLite, at every start).
      // The write path always sets the column, so it holds only what an older version wrote.
      await sql.raw('create index loads_deadline_unfilled_idx on loads (id) where delivery_deadline is null').execute(db);
      await db.schema.dropIndex('loads_backhaul_idx').execute();
      await sql.raw(`create index loads_backhaul_idx on loads (org_id, carrier_id, delivery_deadline) where status in ${BACKHAUL_STATUSES_SQL}`).execute(db);
    },
  };
}
