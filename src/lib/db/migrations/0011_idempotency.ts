import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0011(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // One row per organization and Idempotency-Key (docs/api.md, "Safe retries: `Idempotency-Key`";
      // src/lib/http/idempotency.ts). A row without a status is a claim: its request is running until
      // `lease_until`; `claim` is the claimant's token, so only it completes or releases the row.
      // `expires_at` is when the key may be used afresh.
      await db.schema
        .createTable('idempotency_keys')
        .addColumn('org_id', 'text', notNullText)
        .addColumn('key', 'text', notNullText)
        .addColumn('fingerprint', 'text', notNullText)
        .addColumn('claim', 'text', notNullText)
        .addColumn('status', 'integer')
        .addColumn('content_type', 'text', text)
        .addColumn('body', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('lease_until', 'text', notNullText)
        .addColumn('expires_at', 'text', notNullText)
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['org_id', 'key'])
        .execute();
      // The pruning walks expired rows in this order, a bounded number at a time.
      await db.schema.createIndex('idempotency_keys_expires_idx').on('idempotency_keys').columns(['expires_at']).execute();
    },
  };
}
