import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0024(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  return {
    async up(db: Db) {
      // What a target was called when the entry was written: a removed user's name and email stay
      // readable in the log after the user row is gone
      // (docs/dashboard.md, "Ending sessions, removing users").
      await db.schema.alterTable('audit_log').addColumn('target_name', 'text', text).execute();
    },
  };
}
