import { createHash } from 'node:crypto';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from './types.js';
import type { DataStore, OpenOptions } from './store-common.js';
import { DatabaseSetupError, maybeTraced, runMigrations, statementLog } from './store-common.js';

// The PostgreSQL store (pg): a pool with timeouts, the named prepared statements, the database created
// when it does not exist.

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

/** PostgreSQL: the longest a statement of a request may run (a batch item's statement included). */
export const STATEMENT_TIMEOUT_MS = 30_000;

export function openPostgres(url: string, opts: OpenOptions): DataStore {
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
