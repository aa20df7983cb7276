import { CompiledQuery, createQueryId, sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';
import { preparedInsert } from './prepared.js';
import type { Database } from './types.js';

// Rows per INSERT: up to this many rows (a batch of 100 loads) are one statement per table; larger sets
// go in slices of this size, and what is left after them in slices of 64, 32 … 1 rows. Each row count
// is a statement text compiled and kept (SQLite's multi-row insert of 100 rows is a large program): an
// import's chunks of varying size left a text for every count from 1 to 100 per table in the statement
// cache (60 MB more memory); larger sets now add 7 texts per table at most.
const ROWS_PER_STATEMENT = 100;
// Ids per DELETE … IN (…): far below both engines' parameter limits.
const IDS_PER_STATEMENT = 500;

/**
 * Set-based writes of many rows: one statement for a unit of work's rows of a table. PostgreSQL: one
 * `insert … select from unnest(…)` of one typed array per column, whatever the count (a batch's 100 loads
 * are 26 parameters, not 2,600: one text, parsed and planned once per connection, and sent small);
 * SQLite: a compiled multi-row insert reused, in slices of ROWS_PER_STATEMENT rows. One DELETE per slice of ids.
 *
 * `jsonText`: text columns that hold JSON written by the caller (an event's data). On PostgreSQL the rows
 * then go as ONE json parameter (`json_to_recordset`) with those columns placed in it as they are: the
 * driver's array literal escapes every quote of every element in JavaScript, which for a follow-up's
 * thousand events of ranked carriers was most of the event loop's time and garbage (BENCHMARKS.md).
 */
export function bulkInsert<T extends keyof Database & string>(
  table: T,
  columns: readonly (keyof Database[T] & string)[],
  opts: { jsonText?: readonly (keyof Database[T] & string)[] } = {},
) {
  const insert = preparedInsert(table, columns);
  let arrays: CompiledQuery<unknown> | null = null;
  let recordset: CompiledQuery<unknown> | null = null;
  const jsonText = new Set<string>(opts.jsonText ?? []);
  return async (tx: Executor, rows: readonly Database[T][]): Promise<void> => {
    if (rows.length === 0) return;
    if (dialectOf(tx) === 'postgres') {
      if (jsonText.size > 0) {
        recordset ??= await recordsetInsert(tx, table, columns, jsonText);
        const text = `[${rows
          .map(
            (r) =>
              `{${columns
                .map((c, i) => {
                  const v = (r as unknown as Record<string, unknown>)[c] ?? null;
                  return `"c${i}":${v !== null && jsonText.has(c) ? (v as string) : JSON.stringify(v)}`;
                })
                .join(',')}}`,
          )
          .join(',')}]`;
        await tx.executeQuery(Object.assign({}, recordset, { parameters: [text], queryId: createQueryId() }));
        return;
      }
      arrays ??= await unnestInsert(tx, table, columns);
      const parameters = columns.map((c) => rows.map((r) => (r as unknown as Record<string, unknown>)[c] ?? null));
      await tx.executeQuery(Object.assign({}, arrays, { parameters, queryId: createQueryId() }));
      return;
    }
    if (rows.length <= ROWS_PER_STATEMENT) return insert(tx, rows);
    let i = 0;
    for (; i + ROWS_PER_STATEMENT <= rows.length; i += ROWS_PER_STATEMENT) await insert(tx, rows.slice(i, i + ROWS_PER_STATEMENT));
    for (let size = 64; size >= 1; size >>= 1) {
      if (rows.length - i < size) continue;
      await insert(tx, rows.slice(i, i + size));
      i += size;
    }
  };
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The column types of a PostgreSQL table, from the catalogue. */
async function columnTypes(tx: Executor, table: string, columns: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ column_name: string; udt_name: string }>`
    select column_name, udt_name from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(tx);
  const types = new Map(rows.map((r) => [r.column_name, r.udt_name]));
  return columns.map((c) => {
    const type = types.get(c);
    if (!type) throw new Error(`bulkInsert: ${table}.${c} is not a column`);
    return type;
  });
}

/** PostgreSQL: `insert into t (c…) select * from unnest($1::type[], …)`, the column types read from the catalogue once. */
async function unnestInsert(tx: Executor, table: string, columns: readonly string[]): Promise<CompiledQuery<unknown>> {
  const types = await columnTypes(tx, table, columns);
  const casts = types.map((type, i) => `$${i + 1}::${quoted(type)}[]`);
  return CompiledQuery.raw(`insert into ${quoted(table)} (${columns.map(quoted).join(', ')}) select * from unnest(${casts.join(', ')})`);
}

/**
 * PostgreSQL: `insert into t (c…) select … from json_to_recordset($1::json) as x(c0 type, …)`: each row an
 * object of keys c0, c1, … (the column's position); a `jsonText` column is read as json and stored as its text.
 */
async function recordsetInsert(tx: Executor, table: string, columns: readonly string[], jsonText: ReadonlySet<string>): Promise<CompiledQuery<unknown>> {
  const types = await columnTypes(tx, table, columns);
  const fields = columns.map((c, i) => `c${i} ${jsonText.has(c) ? 'json' : quoted(types[i]!)}`);
  const values = columns.map((c, i) => (jsonText.has(c) ? `x.c${i}::text` : `x.c${i}`));
  return CompiledQuery.raw(
    `insert into ${quoted(table)} (${columns.map(quoted).join(', ')}) select ${values.join(', ')} from json_to_recordset($1::json) as x(${fields.join(', ')})`,
  );
}

/** Deletes the organization's rows of `table` whose `column` is one of `ids`. */
export async function deleteWhereIn<T extends 'loads' | 'load_stops' | 'load_rates'>(
  tx: Executor,
  table: T,
  column: 'id' | 'load_id',
  orgId: string,
  ids: readonly string[],
): Promise<void> {
  const t = table as 'load_stops';
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    await tx
      .deleteFrom(t)
      .where('org_id', '=', orgId)
      .where(column as 'load_id', 'in', ids.slice(i, i + IDS_PER_STATEMENT))
      .execute();
  }
}
