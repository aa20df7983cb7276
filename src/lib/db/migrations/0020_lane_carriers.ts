import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0020(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // Each lane's carriers with their history loads on it: the lane stats' distinct carriers kept as the
      // history is written (src/lib/db/lane-stats.ts), instead of recounting the lane's whole history.
      await db.schema
        .createTable('lane_carriers')
        .addColumn('org_id', 'text', notNullText)
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('origin_cell', 'integer', (c) => c.notNull())
        .addColumn('destination_cell', 'integer', (c) => c.notNull())
        .addColumn('carrier_id', 'text', notNullText)
        .addColumn('loads', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('lane_carriers_pk', ['org_id', 'equipment_type', 'origin_cell', 'destination_cell', 'carrier_id'])
        .execute();
      await sql`insert into lane_carriers (org_id, equipment_type, origin_cell, destination_cell, carrier_id, loads)
        select org_id, equipment_type, origin_cell, destination_cell, carrier_id, count(*) from lane_history
        group by org_id, equipment_type, origin_cell, destination_cell, carrier_id`.execute(db);
      // From here on the stats are added to, not recounted: they start from a count of the history (the
      // recount after commit they replace could have been skipped by a process that stopped).
      await sql`delete from lane_stats`.execute(db);
      await sql`insert into lane_stats (org_id, equipment_type, origin_cell, destination_cell, load_count, carrier_count, last_delivered_at, refreshed_at)
        select org_id, equipment_type, origin_cell, destination_cell, count(*), count(distinct carrier_id), max(delivered_at), ${new Date().toISOString()}
        from lane_history group by org_id, equipment_type, origin_cell, destination_cell`.execute(db);
      // (location_id) is the first column of load_stops_location_type_idx: every lookup it served, that
      // index serves, and each stop written paid for both.
      await db.schema.dropIndex('load_stops_location_idx').execute();
    },
  };
}
