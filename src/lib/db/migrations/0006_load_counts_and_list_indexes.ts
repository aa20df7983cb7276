import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0006(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
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
  };
}
