import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0014(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // API usage per key and UTC hour (src/modules/ops/usage.service.ts): counted in memory, upserted every few
      // seconds, so a request never writes. `hour` is `YYYY-MM-DDTHH:00:00Z`.
      await db.schema
        .createTable('api_usage_hourly')
        .addColumn('org_id', 'text', notNullText)
        .addColumn('key_id', 'text', notNullText)
        .addColumn('hour', 'text', notNullText)
        .addColumn('ok', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('client_errors', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('server_errors', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('rate_limited', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_request_at', 'text', notNullText)
        .addPrimaryKeyConstraint('api_usage_hourly_pk', ['org_id', 'hour', 'key_id'])
        .execute();
      // Failed writes (single requests and batch items) of the last days, for operations to fix the data
      // in the TMS: bounded by age and by a count per organization (pruned after each flush).
      await db.schema
        .createTable('failed_writes')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', notNullText)
        .addColumn('key_id', 'text', notNullText)
        .addColumn('occurred_at', 'text', notNullText)
        .addColumn('method', 'text', notNullText)
        .addColumn('path', 'text', notNullText)
        .addColumn('resource', 'text', notNullText)
        .addColumn('operation', 'text', notNullText)
        .addColumn('reference', 'text', text)
        .addColumn('batch_index', 'integer')
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('detail', 'text', notNullText)
        .addColumn('request_id', 'text', text)
        .execute();
      await db.schema.createIndex('failed_writes_org_idx').on('failed_writes').columns(['org_id', 'occurred_at', 'id']).execute();
      await db.schema.createIndex('failed_writes_age_idx').on('failed_writes').columns(['occurred_at']).execute();
      // The carrier page lists the lanes a carrier has run: without this, a scan of the organization's history.
      // The Loads list's origin/destination state filter goes from a state's locations to their stops'
      // loads without reading the stops themselves (a covering index).
      await db.schema.createIndex('load_stops_location_type_idx').on('load_stops').columns(['location_id', 'stop_type', 'load_id']).execute();
      await db.schema.createIndex('lane_history_carrier_idx').on('lane_history').columns(['org_id', 'carrier_id', 'delivered_at']).execute();
    },
  };
}
