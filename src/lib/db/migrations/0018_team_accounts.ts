import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0018(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // Users that exist before roles become admins (the default;
      // docs/dashboard.md, "Roles, the first run and the audit log"); new users are members once an
      // admin exists (decided by the accounts service, not the column).
      await db.schema
        .alterTable('users')
        .addColumn('role', 'text', (c) => text(c).notNull().defaultTo('admin'))
        .execute();
      // A key's end (ISO 8601, UTC); null: it never expires. Rotation with a grace period sets the old key's.
      await db.schema.alterTable('api_keys').addColumn('expires_at', 'text', text).execute();
      // The audit log (docs/api.md, "The audit log"): one row per change to users, keys, webhook
      // endpoints, imports and settings, written in the transaction of the change; kept 400 days.
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', notNullText)
        .addColumn('at', 'text', notNullText)
        .addColumn('action', 'text', notNullText)
        .addColumn('actor_type', 'text', notNullText)
        .addColumn('actor_id', 'text', text)
        .addColumn('actor_name', 'text', notNullText)
        .addColumn('target_type', 'text', notNullText)
        .addColumn('target_id', 'text', notNullText)
        .addColumn('ip', 'text', text)
        .execute();
      await db.schema.createIndex('audit_log_org_at_idx').on('audit_log').columns(['org_id', 'at', 'id']).execute();
    },
  };
}
