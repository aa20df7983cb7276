import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0009(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // A counter per organization and kind of record, moved by every writing transaction (src/lib/db/versions.ts).
      let t = db.schema
        .createTable('org_versions')
        .addColumn('org_id', 'text', (c) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c).primaryKey());
      for (const kind of ['customers', 'carriers', 'locations', 'loads', 'market_rates', 'users', 'api_keys']) {
        t = t.addColumn(kind, 'bigint', (c) => c.notNull().defaultTo(0));
      }
      await t.execute();
    },
  };
}
