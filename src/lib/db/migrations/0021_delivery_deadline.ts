import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

/** The statuses of a load on its way (D14's backhaul, src/domain/enums.ts at the time). */
const BACKHAUL_STATUSES_SQL = "('COVERED', 'DISPATCHED', 'AT_SHIPPER', 'EN_ROUTE', 'AT_RECEIVER')";

/** Every load's delivery deadline from its stops, as the write path sets it (loads written before 0021). */
export async function backfillDeliveryDeadlines(db: Db): Promise<void> {
  await sql`update loads set delivery_deadline = (
      select s.late_arrival from load_stops s
      where s.load_id = loads.id and s.stop_type in ('Delivery', 'Both')
      order by s.stop_number desc limit 1)`.execute(db);
}

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0021(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  return {
    async up(db: Db) {
      // D14's backhaul: a load's delivery deadline, the late_arrival of its last Delivery/Both stop (D7's
      // destination), kept on the row as pickup_at is, so a recommendation finds the ranked carriers' loads
      // on their way that deliver in the window before the pickup by an index range, not by probing the
      // stops of every load the carriers have on their way (about 700 at a million loads, 5 ms a request).
      await db.schema.alterTable('loads').addColumn('delivery_deadline', 'text', text).execute();
      await backfillDeliveryDeadlines(db);
      await db.schema.dropIndex('loads_backhaul_idx').execute();
      await sql
        .raw(`create index loads_backhaul_idx on loads (org_id, carrier_id, delivery_deadline) where status in ${BACKHAUL_STATUSES_SQL}`)
        .execute(db);
    },
  };
}
