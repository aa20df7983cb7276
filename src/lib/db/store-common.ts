import { Kysely, Migrator, type Dialect as KyselyDialect } from 'kysely';
import { tracedDialect } from './tracing.js';
import { readVersions, type OrgVersions } from './versions.js';
import type { Dialect } from './dialect.js';
import type { Db } from './executor.js';
import { migrationProvider } from './migrations/index.js';
import { fillDeliveryDeadlines } from './migrations/0021_delivery_deadline.js';

// What both engines' stores share (src/lib/db/sqlite.ts, src/lib/db/postgres.ts): the statement log,
// the snapshot of a request, tracing, the setup error and the migrations run.

export interface StatementLog {
  /** Calls `fn` with the text of each statement from now on; returns the function that stops it. */
  watch(fn: (sql: string) => void): () => void;
}

export function statementLog(): StatementLog & { emit(sql: string): void; active(): boolean } {
  const watchers = new Set<(sql: string) => void>();
  return {
    watch(fn) {
      watchers.add(fn);
      return () => watchers.delete(fn);
    },
    active: () => watchers.size > 0,
    emit(sql) {
      for (const w of watchers) w(sql);
    },
  };
}

/** A request's view of the database for its caches (src/lib/http/read-cache.ts, the key check). */
export interface DataSnapshot {
  /** Differs whenever anything may have been written anywhere since an earlier snapshot. */
  readonly token: string;
  /** The organization's record counters (src/lib/db/versions.ts), read once per snapshot. */
  versions(orgId: string): Promise<OrgVersions>;
  /** Nothing was written anywhere since the snapshot was taken (what was read since is as of it). */
  unchanged(): boolean;
}

export function snapshotOf(db: Db, token: string, currentToken: () => string): DataSnapshot {
  const read = new Map<string, Promise<OrgVersions>>();
  return {
    token,
    unchanged: () => currentToken() === token,
    versions(orgId) {
      let v = read.get(orgId);
      if (!v) read.set(orgId, (v = readVersions(db, orgId)));
      return v;
    },
  };
}

export const maybeTraced = (dialect: KyselyDialect, system: 'sqlite' | 'postgresql', opts: OpenOptions) =>
  opts.traced ? tracedDialect(dialect, system) : dialect;

/** The database cannot be opened or set up; the message is one line that names the fix. */
export class DatabaseSetupError extends Error {}

export async function runMigrations(db: Db, dialect: Dialect): Promise<void> {
  // Kysely's migrator takes a lock (an advisory lock on PostgreSQL), so instances starting together are safe.
  // Migrations written in parallel branches may land in either order; each one stands on its own.
  const migrator = new Migrator({ db, provider: migrationProvider(dialect), allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${String((error as Error).message ?? error)}`);
  }
  // What a migration left to fill in batches of their own (each a short transaction, not one long lock).
  await fillDeliveryDeadlines(db as unknown as Kysely<unknown>);
}

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
