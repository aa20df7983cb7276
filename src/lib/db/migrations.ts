import { sql, type Kysely, type Migration, type MigrationProvider, type CreateTableBuilder, type ColumnDefinitionBuilder } from 'kysely';
import type { Dialect } from './index.js';

type Db = Kysely<unknown>;

/**
 * Text columns use the "C" collation on PostgreSQL so that ordering (sort=name, ids, timestamps) is
 * byte order, exactly as SQLite's default BINARY collation: same answers on both engines.
 */
function textCol(dialect: Dialect) {
  return (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
}

function withTenantColumns<T extends string>(t: CreateTableBuilder<T, never>, dialect: Dialect) {
  const text = textCol(dialect);
  return t
    .addColumn('id', 'text', (c) => text(c).primaryKey())
    .addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'));
}

function migrations(dialect: Dialect): Record<string, Migration> {
  const text = textCol(dialect);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    '0001_foundation': {
      async up(db: Db) {
        await db.schema
          .createTable('organizations')
          .addColumn('id', 'text', (c) => text(c).primaryKey())
          .addColumn('name', 'text', notNullText)
          .addColumn('created_at', 'text', notNullText)
          .execute();
        await db.schema
          .createTable('tms_integrations')
          .addColumn('org_id', 'text', (c) => text(c).primaryKey().references('organizations.id'))
          .addColumn('connected_at', 'text', notNullText)
          .execute();
        await withTenantColumns(db.schema.createTable('users'), dialect)
          .addColumn('email', 'text', notNullText)
          .addColumn('email_lower', 'text', (c) => text(c).notNull().unique())
          .addColumn('name', 'text', notNullText)
          .addColumn('password_hash', 'text', text)
          .addColumn('created_at', 'text', notNullText)
          .execute();
        await db.schema.createIndex('users_org_idx').on('users').columns(['org_id', 'id']).execute();
        await withTenantColumns(db.schema.createTable('api_keys'), dialect)
          .addColumn('name', 'text', notNullText)
          .addColumn('external_system', 'text', notNullText)
          .addColumn('key_hash', 'text', (c) => text(c).notNull().unique())
          .addColumn('key_prefix', 'text', notNullText)
          .addColumn('scopes', 'text', notNullText)
          .addColumn('per_minute', 'integer', (c) => c.notNull())
          .addColumn('per_day', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'text', notNullText)
          .addColumn('last_used_at', 'text', text)
          .addColumn('revoked_at', 'text', text)
          .addColumn('replaced_by_key_id', 'text', text)
          .execute();
        await db.schema.createIndex('api_keys_org_idx').on('api_keys').columns(['org_id', 'created_at']).execute();

        await withTenantColumns(db.schema.createTable('customers'), dialect)
          .addColumn('external_reference_id', 'text', notNullText)
          .addColumn('name', 'text', notNullText)
          .addColumn('reference_number', 'text', text)
          .addColumn('domain', 'text', text)
          .addColumn('phone', 'text', text)
          .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
          .addColumn('customer_type', 'text', text)
          .addColumn('created_at', 'text', notNullText)
          .addColumn('updated_at', 'text', notNullText)
          .addUniqueConstraint('customers_org_ref_uq', ['org_id', 'external_reference_id'])
          .execute();
        for (const col of ['created_at', 'updated_at', 'name']) {
          await db.schema.createIndex(`customers_org_${col}_idx`).on('customers').columns(['org_id', col, 'id']).execute();
        }

        await withTenantColumns(db.schema.createTable('carriers'), dialect)
          .addColumn('external_reference_id', 'text', notNullText)
          .addColumn('name', 'text', notNullText)
          .addColumn('mc_number', 'text', text)
          .addColumn('dot_number', 'text', text)
          .addColumn('phone_number', 'text', text)
          .addColumn('email', 'text', text)
          .addColumn('address_line1', 'text', text)
          .addColumn('address_line2', 'text', text)
          .addColumn('address_city', 'text', text)
          .addColumn('address_state', 'text', text)
          .addColumn('address_postal_code', 'text', text)
          .addColumn('address_country', 'text', text)
          .addColumn('created_at', 'text', notNullText)
          .addColumn('updated_at', 'text', notNullText)
          .addUniqueConstraint('carriers_org_ref_uq', ['org_id', 'external_reference_id'])
          .execute();
        for (const col of ['created_at', 'updated_at', 'name', 'dot_number', 'mc_number']) {
          await db.schema.createIndex(`carriers_org_${col}_idx`).on('carriers').columns(['org_id', col, 'id']).execute();
        }
        await withTenantColumns(db.schema.createTable('carrier_contacts'), dialect)
          .addColumn('carrier_id', 'text', (c) => text(c).notNull().references('carriers.id').onDelete('cascade'))
          .addColumn('position', 'integer', (c) => c.notNull())
          .addColumn('first_name', 'text', text)
          .addColumn('last_name', 'text', text)
          .addColumn('primary_email', 'text', text)
          .addColumn('primary_phone', 'text', text)
          .addColumn('is_primary_contact', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema.createIndex('carrier_contacts_carrier_idx').on('carrier_contacts').columns(['carrier_id', 'position']).execute();
      },
    },
    '0002_locations': {
      async up(db: Db) {
        const real = dialect === 'postgres' ? 'double precision' : 'real';
        await withTenantColumns(db.schema.createTable('locations'), dialect)
          .addColumn('external_reference_id', 'text', notNullText)
          .addColumn('name', 'text', notNullText)
          .addColumn('address_line1', 'text', text)
          .addColumn('address_line2', 'text', text)
          .addColumn('city', 'text', text)
          .addColumn('state', 'text', text)
          .addColumn('postal_code', 'text', text)
          .addColumn('country', 'text', notNullText)
          .addColumn('latitude', sql.raw(real), (c) => c.notNull())
          .addColumn('longitude', sql.raw(real), (c) => c.notNull())
          .addColumn('email', 'text', text)
          .addColumn('phone_number', 'text', text)
          .addColumn('weekday_open_hours', 'text', text)
          .addColumn('weekday_close_hours', 'text', text)
          .addColumn('weekend_open_hours', 'text', text)
          .addColumn('weekend_close_hours', 'text', text)
          .addColumn('internal_notes', 'text', text)
          .addColumn('timezone', 'text', text)
          .addColumn('geocode_source', 'text', notNullText)
          .addColumn('created_at', 'text', notNullText)
          .addColumn('updated_at', 'text', notNullText)
          .addUniqueConstraint('locations_org_ref_uq', ['org_id', 'external_reference_id'])
          .execute();
        for (const col of ['created_at', 'updated_at', 'name', 'city', 'state', 'postal_code']) {
          await db.schema.createIndex(`locations_org_${col}_idx`).on('locations').columns(['org_id', col, 'id']).execute();
        }
      },
    },
    '0003_loads': {
      async up(db: Db) {
        const real = sql.raw(dialect === 'postgres' ? 'double precision' : 'real');
        await withTenantColumns(db.schema.createTable('loads'), dialect)
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
        await withTenantColumns(db.schema.createTable('load_stops'), dialect)
          .addColumn('load_id', 'text', (c) => text(c).notNull().references('loads.id').onDelete('cascade'))
          .addColumn('stop_number', 'integer', (c) => c.notNull())
          .addColumn('stop_type', 'text', notNullText)
          .addColumn('location_id', 'text', (c) => text(c).notNull().references('locations.id'))
          .addColumn('early_arrival', 'text', notNullText)
          .addColumn('late_arrival', 'text', notNullText)
          .addUniqueConstraint('load_stops_number_uq', ['load_id', 'stop_number'])
          .execute();
        await db.schema.createIndex('load_stops_location_idx').on('load_stops').columns(['location_id']).execute();
        await withTenantColumns(db.schema.createTable('load_rates'), dialect)
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
    },
    '0004_lanes_and_market_rates': {
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
        await withTenantColumns(db.schema.createTable('market_rate_snapshots'), dialect)
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
    },
    '0006_load_counts_and_list_indexes': {
      async up(db: Db) {
        await db.schema
          .createTable('load_status_counts')
          .addColumn('org_id', 'text', notNullText)
          .addColumn('status', 'text', notNullText)
          .addColumn('n', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('load_status_counts_pk', ['org_id', 'status'])
          .execute();
        await sql`insert into load_status_counts (org_id, status, n) select org_id, status, count(*) from loads group by org_id, status`.execute(db);
        // List pages sort by time and filter by status most of all: with status in the index, the page
        // of ids is found in the index alone, and only the 50 rows shown are read from the table.
        await db.schema.dropIndex('loads_org_created_idx').execute();
        await db.schema.dropIndex('loads_org_updated_idx').execute();
        await db.schema.createIndex('loads_org_created_idx').on('loads').columns(['org_id', 'created_at', 'id', 'status']).execute();
        await db.schema.createIndex('loads_org_updated_idx').on('loads').columns(['org_id', 'updated_at', 'id', 'status']).execute();
        // Lookups by a set of ids always carry org_id too; led by org_id, these indexes serve both
        // conditions (measured: SQLite otherwise walked the organization's org_id index, 50 ms a page).
        const byOrg: Record<string, string[]> = {
          customers_org_id_idx: ['customers', 'org_id', 'id'],
          carriers_org_id_idx: ['carriers', 'org_id', 'id'],
          locations_org_id_idx: ['locations', 'org_id', 'id'],
          loads_org_id_idx: ['loads', 'org_id', 'id'],
          load_stops_org_load_idx: ['load_stops', 'org_id', 'load_id', 'stop_number'],
          load_rates_org_load_idx: ['load_rates', 'org_id', 'load_id', 'position'],
        };
        for (const [name, [table, ...cols]] of Object.entries(byOrg)) {
          await db.schema.createIndex(name).on(table!).columns(cols).execute();
        }
      },
    },
    '0007_dashboard': {
      async up(db: Db) {
        // Dashboard sign-in sessions; `id` is the SHA-256 of the cookie's token, so a read of this table
        // cannot be turned into a session.
        await db.schema
          .createTable('dashboard_sessions')
          .addColumn('id', 'text', (c) => text(c).primaryKey())
          .addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'))
          .addColumn('user_id', 'text', (c) => text(c).notNull().references('users.id').onDelete('cascade'))
          .addColumn('csrf_token', 'text', notNullText)
          .addColumn('created_at', 'text', notNullText)
          .addColumn('last_seen_at', 'text', notNullText)
          .addColumn('expires_at', 'text', notNullText)
          .execute();
        await db.schema.createIndex('dashboard_sessions_expires_idx').on('dashboard_sessions').columns(['expires_at']).execute();
        await db.schema.createIndex('dashboard_sessions_user_idx').on('dashboard_sessions').columns(['user_id']).execute();
        // Named values the dashboard keeps once per deployment: the cookie-signing secret (shared by
        // every instance) and the marker that the first-run setup was done.
        await db.schema
          .createTable('dashboard_settings')
          .addColumn('name', 'text', (c) => text(c).primaryKey())
          .addColumn('value', 'text', notNullText)
          .addColumn('created_at', 'text', notNullText)
          .execute();
      },
    },
    '0008_lane_history_covering_index': {
      async up(db: Db) {
        // The lane query reads every history row of the lane's cells: with all the columns it scores in
        // the index, those rows are read from the index in lane order instead of one table page each
        // (measured at 1,000,000 loads on SQLite: ~20 µs per candidate row before).
        await db.schema.dropIndex('lane_history_lane_idx').execute();
        const key = 'org_id, equipment_type, origin_cell, destination_cell';
        const carried =
          'origin_latitude, origin_longitude, destination_latitude, destination_longitude, delivered_at, carrier_id, carrier_external_reference_id, carrier_rate_total';
        await sql
          .raw(
            dialect === 'postgres'
              ? `create index lane_history_lane_idx on lane_history (${key}) include (${carried})`
              : `create index lane_history_lane_idx on lane_history (${key}, ${carried})`,
          )
          .execute(db);
      },
    },
    '0009_org_versions': {
      async up(db: Db) {
        // A counter per organization and kind of record, moved by every writing transaction (src/lib/db/versions.ts).
        let t = db.schema.createTable('org_versions').addColumn('org_id', 'text', (c) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c).primaryKey());
        for (const kind of ['customers', 'carriers', 'locations', 'loads', 'market_rates', 'users', 'api_keys']) {
          t = t.addColumn(kind, 'bigint', (c) => c.notNull().defaultTo(0));
        }
        await t.execute();
      },
    },
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return { getMigrations: async () => migrations(dialect) };
}
