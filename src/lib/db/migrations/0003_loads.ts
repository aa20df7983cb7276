import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0003(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  const withTenantColumns = <T extends string>(t: CreateTableBuilder<T, never>) =>
    t.addColumn('id', 'text', (c) => text(c).primaryKey()).addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'));
  return {
    async up(db: Db) {
      const real = sql.raw(dialect === 'postgres' ? 'double precision' : 'real');
      await withTenantColumns(db.schema.createTable('loads'))
        .addColumn('external_reference_id', 'text', notNullText)
        .addColumn('status', 'text', notNullText)
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('transport_mode', 'text', notNullText)
        .addColumn('description', 'text', text)
        .addColumn('customer_id', 'text', (c) => text(c).notNull().references('customers.id'))
        .addColumn('carrier_id', 'text', (c) => text(c).references('carriers.id'))
        .addColumn('weight', real)
        .addColumn('weight_uom', 'text', text)
        .addColumn('total_distance', real)
        .addColumn('total_distance_source', 'text', text)
        .addColumn('max_buy_rate', real)
        .addColumn('max_buy_rate_source', 'text', text)
        .addColumn('sales_rep', 'text', text)
        .addColumn('dispatcher_rep', 'text', text)
        .addColumn('assigned_dispatcher', 'text', text)
        .addColumn('actual_dispatcher', 'text', text)
        .addColumn('operation_user', 'text', text)
        .addColumn('account_manager', 'text', text)
        .addColumn('pickup_at', 'text', text)
        .addColumn('status_updated_at', 'text', notNullText)
        .addColumn('delivered_at', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('updated_at', 'text', notNullText)
        .addUniqueConstraint('loads_org_ref_uq', ['org_id', 'external_reference_id'])
        .execute();
      const loadIndexes: Record<string, string[]> = {
        created: ['org_id', 'created_at', 'id'],
        updated: ['org_id', 'updated_at', 'id'],
        status: ['org_id', 'status', 'created_at', 'id'],
        customer: ['org_id', 'customer_id', 'created_at', 'id'],
        carrier: ['org_id', 'carrier_id', 'created_at', 'id'],
        equipment: ['org_id', 'equipment_type', 'created_at', 'id'],
        pickup: ['org_id', 'pickup_at', 'id'],
      };
      for (const [name, cols] of Object.entries(loadIndexes)) {
        await db.schema.createIndex(`loads_org_${name}_idx`).on('loads').columns(cols).execute();
      }
      await withTenantColumns(db.schema.createTable('load_stops'))
        .addColumn('load_id', 'text', (c) => text(c).notNull().references('loads.id').onDelete('cascade'))
        .addColumn('stop_number', 'integer', (c) => c.notNull())
        .addColumn('stop_type', 'text', notNullText)
        .addColumn('location_id', 'text', (c) => text(c).notNull().references('locations.id'))
        .addColumn('early_arrival', 'text', notNullText)
        .addColumn('late_arrival', 'text', notNullText)
        .addUniqueConstraint('load_stops_number_uq', ['load_id', 'stop_number'])
        .execute();
      await db.schema.createIndex('load_stops_location_idx').on('load_stops').columns(['location_id']).execute();
      await withTenantColumns(db.schema.createTable('load_rates'))
        .addColumn('load_id', 'text', (c) => text(c).notNull().references('loads.id').onDelete('cascade'))
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('rate_entity', 'text', notNullText)
        .addColumn('amount', real, (c) => c.notNull())
        .addColumn('currency', 'text', notNullText)
        .addColumn('rate_type', 'text', notNullText)
        .addColumn('description', 'text', text)
        .execute();
      await db.schema.createIndex('load_rates_load_idx').on('load_rates').columns(['load_id', 'position']).execute();
    },
  };
}
