import type { Executor } from './executor.js';
import { preparedInsert } from './prepared.js';
import type { Database } from './types.js';

// Rows per INSERT: a batch of 100 loads is one statement per table; larger sets go in slices of this
// size (compiled once per row count, so at most this many texts per table and engine).
const ROWS_PER_STATEMENT = 100;
// Ids per DELETE … IN (…): far below both engines' parameter limits.
const IDS_PER_STATEMENT = 500;

/**
 * Set-based writes of many rows, the same on both engines: one multi-row INSERT per slice of rows
 * (PostgreSQL: one round trip each; SQLite: a compiled statement reused), one DELETE per slice of ids.
 */
export function bulkInsert<T extends keyof Database & string>(table: T, columns: readonly (keyof Database[T] & string)[]) {
  const insert = preparedInsert(table, columns);
  return async (tx: Executor, rows: readonly Database[T][]): Promise<void> => {
    for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) await insert(tx, rows.slice(i, i + ROWS_PER_STATEMENT));
  };
}

/** Deletes the organization's rows of `table` whose `column` is one of `ids`. */
export async function deleteWhereIn<T extends 'loads' | 'load_stops' | 'load_rates' | 'lane_history'>(tx: Executor, table: T, column: 'id' | 'load_id', orgId: string, ids: readonly string[]): Promise<void> {
  const t = table as 'load_stops';
  for (let i = 0; i < ids.length; i += IDS_PER_STATEMENT) {
    await tx.deleteFrom(t).where('org_id', '=', orgId).where(column as 'load_id', 'in', ids.slice(i, i + IDS_PER_STATEMENT)).execute();
  }
}

