import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0007(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
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
  };
}
