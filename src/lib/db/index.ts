import type { Dialect } from './dialect.js';
import type { DataStore, OpenOptions } from './store-common.js';
import { openPostgres } from './postgres.js';
import { openSqlite } from './sqlite.js';

// The data store: one interface over SQLite (src/lib/db/sqlite.ts) and PostgreSQL
// (src/lib/db/postgres.ts), and what the rest of the code imports from the database layer.

export type { Dialect };
export type { Db, Executor } from './executor.js';
export { dialectOf } from './executor.js';
export type { DataSnapshot, DataStore, OpenOptions, StatementLog } from './store-common.js';
export { DatabaseSetupError } from './store-common.js';
export { sqlitePathFromUrl, cachingStatements } from './sqlite.js';
export { STATEMENT_TIMEOUT_MS } from './postgres.js';
export { containsFolded, containsInsensitive, equalsFolded } from './folded.js';

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export function openDataStore(databaseUrl: string, opts: OpenOptions = {}): DataStore {
  if (isPostgresUrl(databaseUrl)) return openPostgres(databaseUrl, opts);
  return openSqlite(databaseUrl, opts);
}
