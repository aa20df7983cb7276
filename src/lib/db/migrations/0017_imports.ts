import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0017(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // An import job (docs/imports.md). `checkpoint_row`: the last row (numbered from 1 over the whole
      // upload) whose chunk committed; moved only forward, in the chunk's own transaction, with the
      // counts. `claim`/`leased_until`: the process running it now (a lease that ends, a killed process,
      // lets any instance take it over and resume after the checkpoint). `options`: the create request's
      // csv options as JSON.
      await db.schema
        .createTable('imports')
        .addColumn('id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'))
        .addColumn('resource', 'text', notNullText)
        .addColumn('format', 'text', notNullText)
        .addColumn('emit_events', 'text', notNullText)
        .addColumn('operation', 'text', notNullText)
        .addColumn('options', 'text', text)
        .addColumn('status', 'text', notNullText)
        .addColumn('parts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('bytes_total', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rows_total', 'bigint')
        .addColumn('checkpoint_row', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rows_processed', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rows_succeeded', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rows_failed', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('claim', 'text', text)
        .addColumn('leased_until', 'text', text)
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('error', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('updated_at', 'text', notNullText)
        .addColumn('queued_at', 'text', text)
        .addColumn('started_at', 'text', text)
        .addColumn('finished_at', 'text', text)
        .execute();
      await db.schema.createIndex('imports_org_idx').on('imports').columns(['org_id', 'created_at', 'id']).execute();
      // One queued or running import per organization (409 for another: docs/imports.md, "How it runs"),
      // held by the database on every instance.
      await db.schema
        .createIndex('imports_one_active_idx')
        .unique()
        .on('imports')
        .column('org_id')
        .where(sql.ref('status'), 'in', ['queued', 'running'])
        .execute();
      // The runner's claim: imports waiting or running, by when they were queued.
      await db.schema.createIndex('imports_claim_idx').on('imports').columns(['status', 'queued_at']).execute();
      // The refused rows of an import (its error file), written in the transaction of their chunk.
      await db.schema
        .createTable('import_errors')
        .addColumn('import_id', 'text', (c) => text(c).notNull().references('imports.id').onDelete('cascade'))
        .addColumn('row', 'bigint', (c) => c.notNull())
        .addColumn('external_reference_id', 'text', text)
        .addColumn('detail', 'text', notNullText)
        .addPrimaryKeyConstraint('import_errors_pk', ['import_id', 'row'])
        .execute();
    },
  };
}
