import { sql, type RawBuilder } from 'kysely';
import { dialectOf, type Executor } from './executor.js';

/**
 * What an engine can do that a module's statement chooses by (the engine seam, docs/architecture.md):
 * each says what it does, not which engine it is, so feature SQL lives in the modules' repos and the
 * engines' differences stay here.
 */

type EngineOf = Executor | 'sqlite' | 'postgres';
const isPostgres = (e: EngineOf) => (typeof e === 'string' ? e : dialectOf(e)) === 'postgres';

/**
 * An array binds as ONE parameter (`= any($n::integer[])`, `unnest($n::text[])`), so a statement's text
 * and parameter count are the same for any number of values (a named prepared statement, planned once
 * per connection). Otherwise values are listed (`IN (?, ?, …)`), one parameter each.
 */
export const bindsArrays = (e: EngineOf): boolean => isPostgres(e);

/**
 * Rows travel from the server as one JSON value (`json_agg`) faster than as rows: the driver parses each
 * row's fields and makes a string of each; one JSON text is parsed natively. Otherwise (in process) rows
 * come as arrays of columns (src/lib/db/prepared.ts, ARRAY_ROWS).
 */
export const sendsRowsAsJson = (e: EngineOf): boolean => isPostgres(e);

/**
 * Reads run in this process: a statement per item costs microseconds, and no statement needs to fold
 * many items into one (a JSON recordset, a lateral join) to save round trips.
 */
export const readsInProcess = (e: EngineOf): boolean => !isPostgres(e);

/** A statement may write in its WITH clause (delete, then upsert, in one statement and one round trip). */
export const writesInWith = (e: EngineOf): boolean => isPostgres(e);

/** The larger of two values as SQL (PostgreSQL's `greatest`, SQLite's two-argument `max`). */
export const greatestOf = (e: EngineOf, a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<string> =>
  isPostgres(e) ? sql<string>`greatest(${a}, ${b})` : sql<string>`max(${a}, ${b})`;
