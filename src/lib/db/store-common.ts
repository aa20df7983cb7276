import { Kysely, Migrator, type Dialect as KyselyDialect } from 'kysely';
import { tracedDialect } from './tracing.js';
import { readVersions, type OrgVersions } from './versions.js';
import type { Dialect } from './dialect.js';
import type { Db } from './executor.js';
import type { OpenOptions } from './index.js';
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
