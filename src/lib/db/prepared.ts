import { createQueryId, type CompiledQuery, type Compilable, type Kysely } from 'kysely';
import type { Executor } from './executor.js';
import type { Database } from './types.js';

const SENTINEL = '\u0001lb-param:';

/**
 * A query built and compiled once, then run with new parameter values (Kysely's building and compiling
 * is about a third of a point read). `param(name)` stands for a value given at each call; the SQL text
 * is fixed, so the statement caches of both engines hit every time.
 */
export function prepared<P extends Record<string, unknown>, R>(
  build: (db: Kysely<Database>, param: <K extends keyof P & string>(name: K) => P[K]) => Compilable<R>,
) {
  const cache = new WeakMap<object, { compiled: CompiledQuery<R>; slots: (string | null)[] }>();
  const param = <K extends keyof P & string>(name: K) => `${SENTINEL}${name}` as unknown as P[K];
  return async (executor: Executor, values: P): Promise<R[]> => {
    // Compiled once per dialect (SQLite and PostgreSQL compile differently): keyed by the dialect
    // adapter, which the database and every transaction on it share (a transaction is a new executor
    // object each time, so keying by the executor would compile again in every transaction).
    const root = (executor as unknown as Kysely<Database>).getExecutor().adapter as object;
    let entry = cache.get(root);
    if (!entry) {
      const compiled = build(executor as unknown as Kysely<Database>, param).compile();
      const slots = compiled.parameters.map((p) => (typeof p === 'string' && p.startsWith(SENTINEL) ? p.slice(SENTINEL.length) : null));
      entry = { compiled, slots };
      cache.set(root, entry);
    }
    const { compiled, slots } = entry;
    const parameters = compiled.parameters.map((p, i) => (slots[i] === null ? p : values[slots[i]!]));
    const result = await executor.executeQuery<R>({ ...compiled, parameters, queryId: createQueryId() });
    return result.rows;
  };
}

/**
 * A multi-row INSERT into `table` built and compiled once per row count (one statement, so one round
 * trip on PostgreSQL; a compiled statement reused, so no building on SQLite). `columns` must name every
 * column the rows carry.
 */
export function preparedInsert<T extends keyof Database & string>(table: T, columns: readonly (keyof Database[T] & string)[]) {
  const byCount = new Map<number, (executor: Executor, values: Record<string, unknown>) => Promise<unknown[]>>();
  return async (executor: Executor, rows: readonly Database[T][]): Promise<void> => {
    if (rows.length === 0) return;
    let insert = byCount.get(rows.length);
    if (!insert) {
      const count = rows.length;
      insert = prepared<Record<string, unknown>, unknown>((db, p) =>
        db.insertInto(table).values(Array.from({ length: count }, (_, i) => Object.fromEntries(columns.map((c) => [c, p(`${i}:${c}`)]))) as never),
      );
      byCount.set(count, insert);
    }
    const values: Record<string, unknown> = {};
    rows.forEach((row, i) => {
      for (const c of columns) values[`${i}:${c}`] = (row as unknown as Record<string, unknown>)[c];
    });
    await insert(executor, values);
  };
}
