import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0015(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // Every attempt of a delivery (issue 26): the delivery row keeps its last outcome (the delivery
      // log's shape: docs/webhooks.md, "The delivery log and the attempt log"); this keeps each one, so
      // a 500 that came before a delivered retry stays visible. `status`: delivered or failed (this
      // attempt); `next_attempt_at`: the retry it scheduled, if any; `response_body`: the start of the
      // answer (at most 2 KiB); `created_at`: when it started. The event's id, type and sequence are
      // copied so the log reads without a join. Deleted with their delivery (pruned by age, or the
      // endpoint deleted).
      await db.schema
        .createTable('webhook_attempts')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', notNullText)
        .addColumn('endpoint_id', 'text', notNullText)
        .addColumn('delivery_id', 'text', (c) => text(c).notNull().references('webhook_deliveries.id').onDelete('cascade'))
        .addColumn('event_id', 'text', notNullText)
        .addColumn('event_type', 'text', notNullText)
        .addColumn('sequence', 'bigint', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', notNullText)
        .addColumn('response_status', 'integer')
        .addColumn('duration_ms', 'integer')
        .addColumn('error', 'text', text)
        .addColumn('response_body', 'text', text)
        .addColumn('next_attempt_at', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .execute();
      // The endpoint's attempt log, newest first; a delivery's attempts (the dashboard, the cascade).
      await db.schema.createIndex('webhook_attempts_endpoint_idx').on('webhook_attempts').columns(['endpoint_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();
      // The last attempt of each delivery made before this migration is the one whose outcome its row
      // kept: it becomes that delivery's first entry in the attempt log (its id made from the delivery's;
      // `created_at` the time that outcome was recorded, its start being unknown).
      await sql`insert into webhook_attempts (id, org_id, endpoint_id, delivery_id, event_id, event_type, sequence, attempt, status, response_status, duration_ms, error, response_body, next_attempt_at, created_at)
        select 'wha_' || substr(id, 5), org_id, endpoint_id, id, event_id, event_type, sequence, attempt,
          case when status = 'delivered' then 'delivered' else 'failed' end,
          response_status, duration_ms, error, null, case when status = 'pending' then next_attempt_at else null end, updated_at
        from webhook_deliveries where attempt > 0`.execute(db);
      // A replay's deliveries share its id (one running replay per endpoint: those still pending).
      await db.schema.alterTable('webhook_deliveries').addColumn('replay_id', 'text', text).execute();
      // An endpoint's pending deliveries (disabling fails them; a running replay is found by them).
      await db.schema.createIndex('webhook_deliveries_endpoint_status_idx').on('webhook_deliveries').columns(['endpoint_id', 'status']).execute();
    },
  };
}
