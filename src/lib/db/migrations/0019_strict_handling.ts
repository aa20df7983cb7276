import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0019(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // A key made strict
      // (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`")
      // answers every request as `Prefer: handling=strict` would (0 or 1).
      await db.schema
        .alterTable('api_keys')
        .addColumn('strict', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // Fields ignored per key and field (`body.contacts[].phone_number`, `query.custmer_id`), counted
      // in memory and upserted with the usage counters (src/modules/ops/usage.service.ts), so a request never writes.
      await db.schema
        .createTable('ignored_fields')
        .addColumn('org_id', 'text', notNullText)
        .addColumn('key_id', 'text', notNullText)
        .addColumn('field', 'text', notNullText)
        .addColumn('route', 'text', notNullText)
        .addColumn('count', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('first_seen_at', 'text', notNullText)
        .addColumn('last_seen_at', 'text', notNullText)
        .addPrimaryKeyConstraint('ignored_fields_pk', ['org_id', 'key_id', 'route', 'field'])
        .execute();
      await db.schema.createIndex('ignored_fields_seen_idx').on('ignored_fields').columns(['org_id', 'last_seen_at']).execute();
    },
  };
}
