import type { Db } from './executor.js';
import type { Dialect } from './dialect.js';
import type { DataSnapshot, StatementLog } from './store-common.js';
import { openPostgres } from './postgres.js';
import { openSqlite } from './sqlite.js';

// The data store: one interface over SQLite (src/lib/db/sqlite.ts) and PostgreSQL
// (src/lib/db/postgres.ts), and what the rest of the code imports from the database layer.

export type { Dialect };
export type { Db, Executor } from './executor.js';
export { dialectOf } from './executor.js';
export type { DataSnapshot, StatementLog } from './store-common.js';
export { DatabaseSetupError } from './store-common.js';
export { sqlitePathFromUrl, cachingStatements } from './sqlite.js';
export { STATEMENT_TIMEOUT_MS } from './postgres.js';
export { containsFolded, containsInsensitive, equalsFolded } from './folded.js';

export interface DataStore {
  db: Db;
  dialect: Dialect;
  /** Cheap round trip for /readyz. */
  ping(timeoutMs?: number): Promise<boolean>;
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * What the database looked like as a request arrived, for the answers kept in memory (the checked
   * key, kept reads): null where no cheap change token exists (PostgreSQL).
   */
  snapshot(): DataSnapshot | null;
  /** Every statement sent to the database (PostgreSQL: every round trip), for tests that count them. */
  statements: StatementLog;
  /**
   * A writer that commits one transaction after another without a gap (an import's chunks) awaits this
   * between them. SQLite: once the log is long, resolves after the checkpoint worker has copied it all,
   * so the next transaction rewinds it (sqlite-checkpoints.ts); at once otherwise, and on PostgreSQL.
   */
  betweenWrites(): Promise<void>;
  /**
   * Whether every statement of the process goes through one connection, one at a time (SQLite): a
   * request's statements then queue behind a background writer's transaction, so such a writer lets the
   * requests in flight finish before it begins one (an import's chunk). PostgreSQL: false (a pool).
   */
  readonly oneConnection: boolean;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export interface OpenOptions {
  poolSize?: number;
  /**
   * Told when a database is created because none was there (a new SQLite file, or a PostgreSQL
   * database created by migrate()): the CLI says on stderr which one it opened.
   */
  onCreated?: (message: string) => void;
  /** PostgreSQL: the statement timeout (default STATEMENT_TIMEOUT_MS; tests shorten it). */
  statementTimeoutMs?: number;
  /** A span per statement under the active span (OpenTelemetry; only when tracing is on: src/lib/telemetry). */
  traced?: boolean;
}

export function openDataStore(databaseUrl: string, opts: OpenOptions = {}): DataStore {
  if (isPostgresUrl(databaseUrl)) return openPostgres(databaseUrl, opts);
  return openSqlite(databaseUrl, opts);
}
