import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0012(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // An organization's webhook endpoints (docs/webhooks.md). `secret` signs (it must be readable,
      // unlike API keys); `previous_secret` signs beside it until `previous_secret_until` (24 h after a
      // rotation). `enqueued_through` is the last event sequence of the organization already turned into
      // deliveries for this endpoint: moved in the transaction that inserts them, so no event is skipped
      // or queued twice. `failing_since`: the first failed attempt since the last success (5 days of it
      // disables); `disabled_reason`: why it is disabled (manual, gone: a 410, failing: 5 days of
      // failures).
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'))
        .addColumn('url', 'text', notNullText)
        .addColumn('event_types', 'text', text)
        .addColumn('description', 'text', text)
        .addColumn('status', 'text', notNullText)
        .addColumn('disabled_reason', 'text', text)
        .addColumn('disabled_at', 'text', text)
        .addColumn('secret', 'text', notNullText)
        .addColumn('previous_secret', 'text', text)
        .addColumn('previous_secret_until', 'text', text)
        .addColumn('enqueued_through', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('failing_since', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('updated_at', 'text', notNullText)
        .execute();
      await db.schema.createIndex('webhook_endpoints_org_idx').on('webhook_endpoints').columns(['org_id', 'created_at', 'id']).execute();
      // One row per event sent (or to be sent) to one endpoint; a replay adds rows. `attempt` counts the
      // attempts made; `claim`/`leased_until`: the process sending it now (a lease that ends without an
      // outcome, a killed process, makes it due again). `payload` only for test events (not in `events`).
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', notNullText)
        .addColumn('endpoint_id', 'text', (c) => text(c).notNull().references('webhook_endpoints.id').onDelete('cascade'))
        .addColumn('event_id', 'text', notNullText)
        .addColumn('event_type', 'text', notNullText)
        .addColumn('sequence', 'bigint', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', notNullText)
        .addColumn('response_status', 'integer')
        .addColumn('duration_ms', 'integer')
        .addColumn('error', 'text', text)
        .addColumn('next_attempt_at', 'text', text)
        .addColumn('claim', 'text', text)
        .addColumn('leased_until', 'text', text)
        .addColumn('payload', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('updated_at', 'text', notNullText)
        .execute();
      // The worker's claim: pending rows by due time.
      await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
      // The delivery log of an endpoint, newest first.
      await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'created_at', 'id']).execute();
      // Pruning of old delivered and failed rows (kept as long as the events, EVENT_RETENTION_DAYS).
      await db.schema.createIndex('webhook_deliveries_created_idx').on('webhook_deliveries').columns(['created_at']).execute();
    },
  };
}
