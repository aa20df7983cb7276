import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, type DatabaseConnection, type Driver } from 'kysely';
import type { Database } from './types.js';
import { ARRAY_ROWS } from './prepared.js';
import type { DataStore, OpenOptions } from './store-common.js';
import { backgroundCheckpoints } from './sqlite-checkpoints.js';
import { maybeTraced, runMigrations, snapshotOf, statementLog } from './store-common.js';

// The SQLite store (better-sqlite3): one connection, its pragmas, the statements kept compiled, the
// planner statistics and the change token of the snapshots.

export function sqlitePathFromUrl(url: string): string {
  if (url === ':memory:') return url;
  const path = url.startsWith('file:') ? url.slice('file:'.length).replace(/^\/\/(?=\/)/, '') : url;
  return resolve(path);
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

export function openSqlite(url: string, opts: OpenOptions = {}): DataStore {
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
