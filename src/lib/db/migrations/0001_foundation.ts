import { sql, type ColumnDefinitionBuilder, type CreateTableBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0001(dialect: Dialect): Migration {
  // Text in byte order on PostgreSQL, as SQLite's BINARY collation (same sort answers on both engines).
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  const withTenantColumns = <T extends string>(t: CreateTableBuilder<T, never>) =>
    t.addColumn('id', 'text', (c) => text(c).primaryKey()).addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'));
  const columns = { text, notNullText, withTenantColumns };
  return {
    async up(db: Db) {
      await createAccountTables(db, columns);
      await createRecordTables(db, columns);
    },
  };
}

type Columns = {
  text: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
  notNullText: (c: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;
  withTenantColumns: <T extends string>(t: CreateTableBuilder<T, never>) => CreateTableBuilder<T, 'id' | 'org_id'>;
};

/** Organizations, their integrations, users and API keys (the first half of up(), statements unchanged). */
async function createAccountTables(db: Db, { text, notNullText, withTenantColumns }: Columns) {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'text', (c) => text(c).primaryKey())
    .addColumn('name', 'text', notNullText)
    .addColumn('created_at', 'text', notNullText)
    .execute();
  await db.schema
    .createTable('tms_integrations')
    .addColumn('org_id', 'text', (c) => text(c).primaryKey().references('organizations.id'))
    .addColumn('connected_at', 'text', notNullText)
    .execute();
  await withTenantColumns(db.schema.createTable('users'))
    .addColumn('email', 'text', notNullText)
    .addColumn('email_lower', 'text', (c) => text(c).notNull().unique())
    .addColumn('name', 'text', notNullText)
    .addColumn('password_hash', 'text', text)
    .addColumn('created_at', 'text', notNullText)
    .execute();
  await db.schema.createIndex('users_org_idx').on('users').columns(['org_id', 'id']).execute();
  await withTenantColumns(db.schema.createTable('api_keys'))
    .addColumn('name', 'text', notNullText)
    .addColumn('external_system', 'text', notNullText)
    .addColumn('key_hash', 'text', (c) => text(c).notNull().unique())
    .addColumn('key_prefix', 'text', notNullText)
    .addColumn('scopes', 'text', notNullText)
    .addColumn('per_minute', 'integer', (c) => c.notNull())
    .addColumn('per_day', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', notNullText)
    .addColumn('last_used_at', 'text', text)
    .addColumn('revoked_at', 'text', text)
    .addColumn('replaced_by_key_id', 'text', text)
    .execute();
  await db.schema.createIndex('api_keys_org_idx').on('api_keys').columns(['org_id', 'created_at']).execute();
}

/** Customers, carriers and their contacts (the second half of up(), statements unchanged). */
async function createRecordTables(db: Db, { text, notNullText, withTenantColumns }: Columns) {
  await withTenantColumns(db.schema.createTable('customers'))
    .addColumn('external_reference_id', 'text', notNullText)
    .addColumn('name', 'text', notNullText)
    .addColumn('reference_number', 'text', text)
    .addColumn('domain', 'text', text)
    .addColumn('phone', 'text', text)
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('customer_type', 'text', text)
    .addColumn('created_at', 'text', notNullText)
    .addColumn('updated_at', 'text', notNullText)
    .addUniqueConstraint('customers_org_ref_uq', ['org_id', 'external_reference_id'])
    .execute();
  for (const col of ['created_at', 'updated_at', 'name']) {
    await db.schema.createIndex(`customers_org_${col}_idx`).on('customers').columns(['org_id', col, 'id']).execute();
  }

  await withTenantColumns(db.schema.createTable('carriers'))
    .addColumn('external_reference_id', 'text', notNullText)
    .addColumn('name', 'text', notNullText)
    .addColumn('mc_number', 'text', text)
    .addColumn('dot_number', 'text', text)
    .addColumn('phone_number', 'text', text)
    .addColumn('email', 'text', text)
    .addColumn('address_line1', 'text', text)
    .addColumn('address_line2', 'text', text)
    .addColumn('address_city', 'text', text)
    .addColumn('address_state', 'text', text)
    .addColumn('address_postal_code', 'text', text)
    .addColumn('address_country', 'text', text)
    .addColumn('created_at', 'text', notNullText)
    .addColumn('updated_at', 'text', notNullText)
    .addUniqueConstraint('carriers_org_ref_uq', ['org_id', 'external_reference_id'])
    .execute();
  for (const col of ['created_at', 'updated_at', 'name', 'dot_number', 'mc_number']) {
    await db.schema.createIndex(`carriers_org_${col}_idx`).on('carriers').columns(['org_id', col, 'id']).execute();
  }
  await withTenantColumns(db.schema.createTable('carrier_contacts'))
    .addColumn('carrier_id', 'text', (c) => text(c).notNull().references('carriers.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('first_name', 'text', text)
    .addColumn('last_name', 'text', text)
    .addColumn('primary_email', 'text', text)
    .addColumn('primary_phone', 'text', text)
    .addColumn('is_primary_contact', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('carrier_contacts_carrier_idx').on('carrier_contacts').columns(['carrier_id', 'position']).execute();
}
