import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  sql,
  type DatabaseConnection,
  type Dialect as KyselyDialect,
  type Driver,
} from 'kysely';
import { tracedDialect } from './tracing.js';
import type { Database } from './types.js';
import { readVersions, type OrgVersions } from './versions.js';
import { ARRAY_ROWS } from './prepared.js';
import type { Dialect } from './dialect.js';
import { migrationProvider } from './migrations/index.js';
import { fillDeliveryDeadlines } from './migrations/0021_delivery_deadline.js';
import { foldCase } from '../fold.js';
import { backgroundCheckpoints } from './sqlite-checkpoints.js';

export type { Dialect };
import type { Db } from './executor.js';
export type { Db, Executor } from './executor.js';
export { dialectOf } from './executor.js';

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

export interface StatementLog {
  /** Calls `fn` with the text of each statement from now on; returns the function that stops it. */
  watch(fn: (sql: string) => void): () => void;
}

function statementLog(): StatementLog & { emit(sql: string): void; active(): boolean } {
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

function snapshotOf(db: Db, token: string, currentToken: () => string): DataSnapshot {
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

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

export function sqlitePathFromUrl(url: string): string {
  if (url === ':memory:') return url;
  const path = url.startsWith('file:') ? url.slice('file:'.length).replace(/^\/\/(?=\/)/, '') : url;
  return resolve(path);
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

const maybeTraced = (dialect: KyselyDialect, system: 'sqlite' | 'postgresql', opts: OpenOptions) => (opts.traced ? tracedDialect(dialect, system) : dialect);

/** The database cannot be opened or set up; the message is one line that names the fix. */
export class DatabaseSetupError extends Error {}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * PostgreSQL: creates the database DATABASE_URL names when the server says it does not exist (as the
 * SQLite file is created), connecting to the server's `postgres` (else `template1`) database with the
 * same credentials. When it cannot be reached or created, a DatabaseSetupError says what to do.
 */
async function ensurePostgresDatabase(url: string, onCreated?: (message: string) => void): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, '')) || decodeURIComponent(target.username) || 'postgres';
  const where = `${target.hostname || 'localhost'}:${target.port || '5432'}`;
  const attempt = async (connectionString: string, work?: (c: pg.Client) => Promise<void>) => {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await work?.(client);
    } finally {
      await client.end().catch(() => {});
    }
  };
  try {
    await attempt(url);
    return;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '3D000') {
      throw new DatabaseSetupError(
        `cannot open PostgreSQL database "${name}" at ${where}: ${(err as Error).message || code}. Check that the server runs and DATABASE_URL is right`,
      );
    }
  }
  let lastError: unknown;
  for (const maintenance of ['postgres', 'template1']) {
    const admin = new URL(url);
    admin.pathname = `/${maintenance}`;
    try {
      await attempt(admin.toString(), async (c) => {
        await c.query(`create database ${quoteIdent(name)}`);
      });
      onCreated?.(`created PostgreSQL database "${name}" at ${where}`);
      return;
    } catch (err) {
      // Created by another process meanwhile: there now.
      if ((err as { code?: string }).code === '42P04') return;
      lastError = err;
    }
  }
  throw new DatabaseSetupError(
    `PostgreSQL database "${name}" does not exist at ${where} and could not be created (${(lastError as Error)?.message ?? 'unknown error'}): create it as a role that may, e.g. \`createdb -h ${target.hostname || 'localhost'} -p ${target.port || '5432'} -U postgres${target.username ? ` -O ${decodeURIComponent(target.username)}` : ''} ${name}\`, or point DATABASE_URL at an existing database`,
  );
}

/**
 * SQLite transactions begin IMMEDIATE: they take the write lock at BEGIN, where SQLite waits for it
 * (busy_timeout) when another connection holds it. A plain BEGIN takes it at the first write, and a
 * transaction that has read by then is refused at once (SQLITE_BUSY: the busy wait is not tried while
 * it holds a read snapshot): the checkpoint worker's RESTART (src/lib/db/sqlite-checkpoints.ts) or
 * another process on the file turned a PUT into a 503 and an import chunk into a retry. One
 * transaction runs at a time on this process's connection anyway, so beginning IMMEDIATE costs nothing.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return driver;
  }
}

function openSqlite(url: string, opts: OpenOptions = {}): DataStore {
  const path = sqlitePathFromUrl(url);
  const isNew = path !== ':memory:' && !existsSync(path);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const raw = new SqliteDatabase(path);
  if (isNew) opts.onCreated?.(`created a new SQLite database at ${path} (set DATABASE_URL to use another)`);
  raw.pragma('journal_mode = WAL');
  // NORMAL in WAL mode is durable against process crashes (only an OS crash can lose the last commits).
  raw.pragma('synchronous = NORMAL');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  // The log file is cut back to 64 MiB when it is reset (it keeps its largest size otherwise).
  raw.pragma('journal_size_limit = 67108864');
  // 16 MiB of page cache: the OS caches the file too, and the server stays within 300 MB (BENCHMARKS.md).
  raw.pragma('cache_size = -16384');
  // Checkpoints beside the requests, not inside the commit that crosses the log's limit.
  const checkpoints = path === ':memory:' ? null : backgroundCheckpoints(raw, path);
  const log = statementLog();
  const statements = cachingStatements(raw, 500, log);
  const db = new Kysely<Database>({ dialect: maybeTraced(new ImmediateSqliteDialect({ database: statements }), 'sqlite', opts) });
  // Without statistics SQLite takes `org_id = ?` (every index leads with it) for selective and walks an
  // organization; `optimize` refreshes stale statistics at start and hourly.
  const refreshPlannerStatistics = () => {
    try {
      raw.pragma('analysis_limit = 1000');
      raw.pragma('optimize = 0x10002');
      // STAT4 samples make every statement binding a value against a sampled index re-plan at each run
      // (BENCHMARKS.md, findings); the per-index averages of sqlite_stat1 are all the plans need.
      const hasStat4 = raw.prepare("select 1 from sqlite_schema where name = 'sqlite_stat4'").get();
      if (hasStat4 && raw.prepare('select 1 from sqlite_stat4 limit 1').get()) {
        raw.exec('delete from sqlite_stat4; analyze sqlite_schema');
      }
    } catch {
      /* statistics are an optimisation; a busy database tries again next time */
    }
  };
  const statisticsTimer = setInterval(refreshPlannerStatistics, 3_600_000);
  statisticsTimer.unref();
  const dataVersion = raw.prepare('pragma data_version').pluck();
  const totalChanges = raw.prepare('select total_changes()').pluck();
  // This connection's row changes and other connections' commits: differs after any write anywhere.
  const changeToken = () => `${totalChanges.get() as number}:${dataVersion.get() as number}`;
  return {
    db,
    dialect: 'sqlite',
    oneConnection: true,
    statements: log,
    // Taken as each request arrives: other connections' commits answered before it was sent are seen.
    snapshot: () => snapshotOf(db, changeToken(), changeToken),
    betweenWrites: () => checkpoints?.catchUp() ?? Promise.resolve(),
    async ping() {
      try {
        raw.prepare('select 1').get();
        return true;
      } catch {
        return false;
      }
    },
    async migrate() {
      await runMigrations(db, 'sqlite');
      statements.forget();
      refreshPlannerStatistics();
    },
    async close() {
      clearInterval(statisticsTimer);
      await checkpoints?.stop();
      await db.destroy();
    },
  };
}

/** PostgreSQL: the longest a statement of a request may run (a batch item's statement included). */
export const STATEMENT_TIMEOUT_MS = 30_000;

function openPostgres(url: string, opts: OpenOptions): DataStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    // A query that cannot finish in time is answered as "unavailable", never left hanging: the client
    // stops waiting (query_timeout) and PostgreSQL stops working on it (statement_timeout; without it an
    // abandoned statement kept its backend busy). docs/deployment.md gives the measured reasons.
    query_timeout: (opts.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS) + 1000,
    statement_timeout: opts.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS,
    // A transaction left open by a stalled process gives up its locks (an organization's batch lock).
    idle_in_transaction_session_timeout: 60_000,
  });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {});
  // A client checked out of the pool (a transaction between two statements) that loses its connection
  // emits 'error' with no listener of the pool's: without one the process dies (found by the outage
  // test). The statement that follows fails instead, and is answered 503.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const log = statementLog();
  const db = new Kysely<Database>({ dialect: maybeTraced(new PostgresDialect({ pool: namedStatements(pool, log) }), 'postgresql', opts) });
  return {
    db,
    dialect: 'postgres',
    oneConnection: false,
    statements: log,
    snapshot: () => null,
    betweenWrites: () => Promise.resolve(),
    async ping(timeoutMs = 2000) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
        const probe = pool.query('select 1').then(() => true as const);
        probe.catch(() => {});
        return await Promise.race([probe, timeout]);
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    },
    // Migrations run on a connection of their own without the statement timeout (an index built on a
    // million loads takes longer than any request may).
    async migrate() {
      await ensurePostgresDatabase(url, opts.onCreated);
      const migrator = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
      try {
        await runMigrations(migrator, 'postgres');
      } finally {
        await migrator.destroy();
      }
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Compiled statements kept and reused (LRU): Kysely prepares every statement anew and the same few
 * hundred texts recur; safe because better-sqlite3 runs a statement to completion before its next use.
 * Reading statements fetch arrays turned into objects by a constructor generated from the columns
 * (half the cost of better-sqlite3's row objects; the same keys in the same order). `forget()` drops
 * them all (after migrations, when a `select *` may have gained columns).
 */
export function cachingStatements(
  raw: SqliteDatabase.Database,
  max = 500,
  log?: ReturnType<typeof statementLog>,
): SqliteDatabase.Database & { forget(): void } {
  const cache = new Map<string, SqliteDatabase.Statement>();
  const fast = (stmt: SqliteDatabase.Statement): SqliteDatabase.Statement => {
    if (!stmt.reader) return stmt;
    // Read by position (preparedByShape's arrayRows): the arrays as they come.
    if (stmt.source.startsWith(ARRAY_ROWS)) return stmt.raw(true);
    const columns = stmt.columns().map((c) => c.name);
    // Keys are JSON-quoted column names.
    const build = new Function('r', `return {${columns.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (r: unknown[]) => unknown;
    const rows = stmt.raw(true);
    const overrides: Record<string | symbol, unknown> = {
      all: (...params: unknown[]) => (rows.all(...params) as unknown[][]).map(build),
      get: (...params: unknown[]) => {
        const r = rows.get(...params) as unknown[] | undefined;
        return r === undefined ? undefined : build(r);
      },
      *iterate(...params: unknown[]) {
        for (const r of rows.iterate(...params) as IterableIterator<unknown[]>) yield build(r);
      },
    };
    return new Proxy(stmt, {
      get(target, prop) {
        if (Object.hasOwn(overrides, prop)) return overrides[prop];
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  };
  return new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === 'forget') return () => cache.clear();
      if (prop !== 'prepare') {
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      }
      return (source: string) => {
        // Kysely prepares every statement it runs (a cached one comes back from here).
        if (log?.active()) log.emit(source);
        let stmt = cache.get(source);
        if (stmt) {
          cache.delete(source);
        } else {
          stmt = fast(target.prepare(source));
          if (cache.size >= max) cache.delete(cache.keys().next().value as string);
        }
        cache.set(source, stmt);
        return stmt;
      };
    },
  }) as SqliteDatabase.Database & { forget(): void };
}

const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;
const MAX_NAMED_PARAMETERS = 32;

/** Data statements as named prepared statements, parsed and planned once per connection; named by their text. */
function namedStatements(pool: pg.Pool, log: ReturnType<typeof statementLog>): pg.Pool {
  const wrapClient = (client: pg.PoolClient): pg.PoolClient =>
    new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'query') {
          const v = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? v.bind(target) : v;
        }
        return (text: unknown, values?: unknown[]) => {
          if (log.active()) log.emit(typeof text === 'string' ? text : String((text as { text?: string })?.text));
          // A statement with many parameters is a batch's (an IN list as long as the batch): its text
          // varies with the batch's size and it runs once per batch, so it is not kept on the connection.
          if (typeof text === 'string' && PREPARABLE.test(text) && (values?.length ?? 0) <= MAX_NAMED_PARAMETERS) {
            const name = `lb_${createHash('sha1').update(text).digest('base64url').slice(0, 22)}`;
            return target.query({ name, text, values: values ?? [] });
          }
          return (target.query as (t: unknown, v?: unknown[]) => unknown)(text, values);
        };
      },
    });
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'connect') return async () => wrapClient(await target.connect());
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

async function runMigrations(db: Db, dialect: Dialect): Promise<void> {
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

/**
 * Case-insensitive "contains" on a folded column (docs/api.md, "Lists"): the column holds foldCase(text)
 * written by the write path, the needle is folded the same way here, so both engines compare the same
 * bytes (LIKE is case-sensitive in PostgreSQL and ASCII-only case-insensitive in SQLite; neither matters
 * on folded text). PostgreSQL answers it from a pg_trgm GIN index when the extension exists (migration
 * 0013).
 */
export function containsFolded(foldedColumn: string, needle: string) {
  const escaped = foldCase(needle).replace(/[\\%_]/g, (ch) => `\\${ch}`);
  return sql<boolean>`${sql.ref(foldedColumn)} like ${`%${escaped}%`} escape '\\'`;
}

/** Case-insensitive equality on a folded column, e.g. locations' city. */
export function equalsFolded(foldedColumn: string, value: string) {
  return sql<boolean>`${sql.ref(foldedColumn)} = ${foldCase(value)}`;
}

/** Case-insensitive "contains" by SQL lower(): ASCII letters only (text without a folded column). */
export function containsInsensitive(column: string, needle: string) {
  const escaped = needle.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`);
  return sql<boolean>`lower(${sql.ref(column)}) like ${`%${escaped}%`} escape '\\'`;
}
