import { CompiledQuery, createQueryId, sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';
import { preparedInsert } from './prepared.js';
import type { Database } from './types.js';

// Rows per INSERT: a batch of 100 loads is one statement per table; larger sets go in slices of this
// size (compiled once per row count, so at most this many texts per table and engine).
const ROWS_PER_STATEMENT = 100;
// Ids per DELETE … IN (…): far below both engines' parameter limits.
const IDS_PER_STATEMENT = 500;

/**
 * Set-based writes of many rows: one statement for a unit of work's rows of a table. PostgreSQL: one
 * `insert … select from unnest(…)` of one typed array per column, whatever the count (a batch's 100 loads
 * are 26 parameters, not 2,600: one text, parsed and planned once per connection, and sent small);
 * SQLite: a compiled multi-row insert reused, in slices of ROWS_PER_STATEMENT rows. One DELETE per slice of ids.
 */
export function bulkInsert<T extends keyof Database & string>(table: T, columns: readonly (keyof Database[T] & string)[]) {
  const insert = preparedInsert(table, columns);
  let arrays: CompiledQuery<unknown> | null = null;
  return async (tx: Executor, rows: readonly Database[T][]): Promise<void> => {
    if (rows.length === 0) return;
    if (dialectOf(tx) === 'postgres') {
      arrays ??= await unnestInsert(tx, table, columns);
      const parameters = columns.map((c) => rows.map((r) => (r as unknown as Record<string, unknown>)[c] ?? null));
      await tx.executeQuery({ ...arrays, parameters, queryId: createQueryId() });
      return;
    }
    for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) await insert(tx, rows.slice(i, i + ROWS_PER_STATEMENT));
  };
}

/** PostgreSQL: `insert into t (c…) select * from unnest($1::type[], …)`, the column types read from the catalogue once. */
async function unnestInsert(tx: Executor, table: string, columns: readonly string[]): Promise<CompiledQuery<unknown>> {
  const { rows } = await sql<{ column_name: string; udt_name: string }>`
    select column_name, udt_name from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(tx);
  const types = new Map(rows.map((r) => [r.column_name, r.udt_name]));
  const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const casts = columns.map((c, i) => {
    const type = types.get(c);
    if (!type) throw new Error(`bulkInsert: ${table}.${c} is not a column`);
    return `$${i + 1}::${quoted(type)}[]`;
  });
  return CompiledQuery.raw(`insert into ${quoted(table)} (${columns.map(quoted).join(', ')}) select * from unnest(${casts.join(', ')})`);
}

/** Deletes the organization's rows of `table` whose `column` is one of `ids`. */
export async function deleteWhereIn<T extends 'loads' | 'load_stops' | 'load_rates' | 'lane_history'>(tx: Executor, table: T, column: 'id' | 'load_id', orgId: string, ids: readonly string[]): Promise<void> {
  const t = table as 'load_stops';
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    await tx.deleteFrom(t).where('org_id', '=', orgId).where(column as 'load_id', 'in', ids.slice(i, i + IDS_PER_STATEMENT)).execute();
  }
}

