import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0004(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  const withTenantColumns = <T extends string>(t: CreateTableBuilder<T, never>) =>
    t.addColumn('id', 'text', (c) => text(c).primaryKey()).addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'));
  return {
    async up(db: Db) {
      const real = sql.raw(dialect === 'postgres' ? 'double precision' : 'real');
      await db.schema
        .createTable('lane_history')
        .addColumn('load_id', 'text', (c) => text(c).primaryKey().references('loads.id').onDelete('cascade'))
        .addColumn('org_id', 'text', notNullText)
        .addColumn('carrier_id', 'text', notNullText)
        .addColumn('carrier_external_reference_id', 'text', notNullText)
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('origin_location_id', 'text', notNullText)
        .addColumn('destination_location_id', 'text', notNullText)
        .addColumn('origin_latitude', real, (c) => c.notNull())
        .addColumn('origin_longitude', real, (c) => c.notNull())
        .addColumn('destination_latitude', real, (c) => c.notNull())
        .addColumn('destination_longitude', real, (c) => c.notNull())
        .addColumn('origin_cell', 'integer', (c) => c.notNull())
        .addColumn('destination_cell', 'integer', (c) => c.notNull())
        .addColumn('delivered_at', 'text', notNullText)
        .addColumn('carrier_rate_total', real)
        .execute();
      await db.schema
        .createIndex('lane_history_lane_idx')
        .on('lane_history')
        .columns(['org_id', 'equipment_type', 'origin_cell', 'destination_cell'])
        .execute();
      await db.schema.createIndex('lane_history_origin_loc_idx').on('lane_history').columns(['origin_location_id']).execute();
      await db.schema.createIndex('lane_history_destination_loc_idx').on('lane_history').columns(['destination_location_id']).execute();
      await db.schema
        .createTable('lane_stats')
        .addColumn('org_id', 'text', notNullText)
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('origin_cell', 'integer', (c) => c.notNull())
        .addColumn('destination_cell', 'integer', (c) => c.notNull())
        .addColumn('load_count', 'integer', (c) => c.notNull())
        .addColumn('carrier_count', 'integer', (c) => c.notNull())
        .addColumn('last_delivered_at', 'text', notNullText)
        .addColumn('refreshed_at', 'text', notNullText)
        .addPrimaryKeyConstraint('lane_stats_pk', ['org_id', 'equipment_type', 'origin_cell', 'destination_cell'])
        .execute();
      await db.schema.createIndex('lane_stats_count_idx').on('lane_stats').columns(['org_id', 'load_count']).execute();
      await withTenantColumns(db.schema.createTable('market_rate_snapshots'))
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('origin_label', 'text', notNullText)
        .addColumn('destination_label', 'text', notNullText)
        .addColumn('origin_latitude', real, (c) => c.notNull())
        .addColumn('origin_longitude', real, (c) => c.notNull())
        .addColumn('destination_latitude', real, (c) => c.notNull())
        .addColumn('destination_longitude', real, (c) => c.notNull())
        .addColumn('origin_state', 'text', text)
        .addColumn('destination_state', 'text', text)
        .addColumn('origin_cell', 'integer', (c) => c.notNull())
        .addColumn('destination_cell', 'integer', (c) => c.notNull())
        .addColumn('rate_per_mile', real, (c) => c.notNull())
        .addColumn('rate_per_mile_low', real)
        .addColumn('rate_per_mile_high', real)
        .addColumn('currency', 'text', notNullText)
        .addColumn('source', 'text', text)
        .addColumn('as_of', 'text', notNullText)
        .addColumn('created_at', 'text', notNullText)
        .execute();
      await db.schema
        .createIndex('market_rates_lane_idx')
        .on('market_rate_snapshots')
        .columns(['org_id', 'equipment_type', 'origin_cell', 'destination_cell', 'as_of'])
        .execute();
      await db.schema.createIndex('market_rates_org_idx').on('market_rate_snapshots').columns(['org_id', 'created_at', 'id']).execute();
    },
  };
}
