import { sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';
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

/**
 * How a batch's transaction starts on this engine. PostgreSQL: the organization's batches take turns (an
 * advisory lock held to commit, so two batches never hold each other's rows), and no lock wait outlives
 * the request's deadline (`lock_timeout`: the batch answers 503 instead of running past it). SQLite runs
 * one write transaction at a time already.
 */
export async function beginBatch(tx: Executor, orgId: string, remainingMs: number): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  if (Number.isFinite(remainingMs)) await sql`select set_config('lock_timeout', ${`${Math.max(1, Math.ceil(remainingMs))}ms`}, true)`.execute(tx);
  await sql`select pg_advisory_xact_lock(${BATCH_LOCK_CLASS}, hashtext(${orgId}))`.execute(tx);
}

// The advisory lock class of an organization's batches (PostgreSQL), beside the organization's hash.
const BATCH_LOCK_CLASS = 7215;

/**
 * Whether a savepoint costs round trips (PostgreSQL: two per item, a quarter of a changed load's) or
 * microseconds (SQLite, in process). A batch of immediate writes runs its items without savepoints where
 * they cost, and again with them only when an item fails.
 */
export const savepointsAreCheap = (tx: Executor): boolean => dialectOf(tx) !== 'postgres';

/** Whether reads of rows a batch will change lock them (PostgreSQL: FOR UPDATE, in reference order). */
export const locksRowsForUpdate = (tx: Executor): boolean => dialectOf(tx) === 'postgres';
