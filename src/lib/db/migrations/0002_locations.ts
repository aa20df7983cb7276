import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0002(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  const withTenantColumns = <T extends string>(t: CreateTableBuilder<T, never>) =>
    t.addColumn('id', 'text', (c) => text(c).primaryKey()).addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'));
  return {
    async up(db: Db) {
      const real = dialect === 'postgres' ? 'double precision' : 'real';
      await withTenantColumns(db.schema.createTable('locations'))
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
  };
}
