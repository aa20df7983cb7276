import { CompiledQuery, createQueryId, type Compilable, type Kysely } from 'kysely';
import { dialectOf, type Executor } from './executor.js';
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
    const result = await executor.executeQuery<R>(Object.assign({}, compiled, { parameters, queryId: createQueryId() }));
    return result.rows;
  };
}

/**
 * A multi-row INSERT into `table` built and compiled once per row count (one statement, so one round
 * trip on PostgreSQL; a compiled statement reused, so no building on SQLite). `columns` must name every
 * column the rows carry.
 */
export function preparedInsert<T extends keyof Database & string>(table: T, columns: readonly (keyof Database[T] & string)[]) {
  const byCount = new WeakMap<object, Map<number, CompiledQuery<unknown>>>();
  return async (executor: Executor, rows: readonly Database[T][]): Promise<void> => {
    if (rows.length === 0) return;
    const root = (executor as unknown as Kysely<Database>).getExecutor().adapter as object;
    let compiledByCount = byCount.get(root);
    if (!compiledByCount) byCount.set(root, (compiledByCount = new Map()));
    let compiled = compiledByCount.get(rows.length);
    if (!compiled) {
      // Placeholders row by row, column by column: the parameters of a call are the rows' values in that order.
      const placeholder = (i: number, c: string) => `${SENTINEL}${i}:${c}`;
      compiled = (executor as unknown as Kysely<Database>)
        .insertInto(table)
        .values(Array.from({ length: rows.length }, (_, i) => Object.fromEntries(columns.map((c) => [c, placeholder(i, c)]))) as never)
        .compile() as CompiledQuery<unknown>;
      const expected = rows.flatMap((_, i) => columns.map((c) => placeholder(i, c)));
      if (compiled.parameters.length !== expected.length || compiled.parameters.some((p, i) => p !== expected[i]))
        throw new Error(`preparedInsert(${table}): unexpected parameter order`);
      compiledByCount.set(rows.length, compiled);
    }
    const parameters: unknown[] = new Array(rows.length * columns.length);
    let k = 0;
    for (const row of rows) for (const c of columns) parameters[k++] = (row as unknown as Record<string, unknown>)[c] ?? null;
    await executor.executeQuery(Object.assign({}, compiled, { parameters, queryId: createQueryId() }));
  };
}

/**
 * Marks a SQLite statement whose rows come back as arrays of the selected columns, in order (no object
 * built per row: better-sqlite3's raw mode; cachingStatements in ./index.ts). Only for reads whose caller
 * takes the columns by position.
 */
export const ARRAY_ROWS = '/* array rows */ ';

/** Shapes kept per statement and database (preparedByShape), the least lately used dropped first. */
export const MAX_SHAPES = 256;

/**
 * A query whose text depends only on a shape of its input (how many values an IN list holds, which
 * optional conditions it has): built and compiled once per shape and dialect, then run with the input's
 * values. `parametersOf` lists them in the order the compiled text takes them; the first compile of each
 * shape checks that list against the parameters Kysely compiled and throws when they differ, so a
 * change to `build` that reorders them fails at once rather than binding values to the wrong places.
 * For reads on hot paths, where Kysely's building and compiling was a tenth of a request (an open load's
 * recommendations: the lane read, the loads on their way, the carriers' cards).
 * `arrayRows` (SQLite only; PostgreSQL returns objects): rows as arrays of the columns (ARRAY_ROWS).
 */
export function preparedByShape<I, R>(
  shapeOf: (input: I) => string,
  build: (executor: Executor, input: I) => Compilable<R>,
  parametersOf: (input: I, dialect: 'sqlite' | 'postgres') => unknown[],
  opts: { arrayRows?: boolean } = {},
) {
  // Per database, the texts of the shapes used most lately (a rank_by=balanced read has a carrier count
  // per lane, the follow-up's unions of areas a cell count per group): bounded, and only the text is
  // kept, not Kysely's query tree (about 35 KB a lane read's).
  const cache = new WeakMap<object, Map<string, CompiledQuery<R>>>();
  return async (executor: Executor, input: I): Promise<R[]> => {
    const dialect = dialectOf(executor);
    const root = (executor as unknown as Kysely<Database>).getExecutor().adapter as object;
    let byShape = cache.get(root);
    if (!byShape) cache.set(root, (byShape = new Map()));
    const shape = shapeOf(input);
    let compiled = byShape.get(shape);
    const parameters = parametersOf(input, dialect);
    if (compiled) {
      byShape.delete(shape);
    } else {
      const fresh = build(executor, input).compile();
      if (JSON.stringify(fresh.parameters) !== JSON.stringify(parameters))
        throw new Error(`preparedByShape: the parameters of shape ${shape} are not in the compiled order`);
      compiled = CompiledQuery.raw(opts.arrayRows && dialect === 'sqlite' ? ARRAY_ROWS + fresh.sql : fresh.sql) as CompiledQuery<R>;
      if (byShape.size >= MAX_SHAPES) byShape.delete(byShape.keys().next().value as string);
    }
    byShape.set(shape, compiled);
    const result = await executor.executeQuery<R>(Object.assign({}, compiled, { parameters, queryId: createQueryId() }));
    return result.rows;
  };
}
