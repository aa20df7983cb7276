// Shared pieces of the reliability tests: real server processes, real HTTP, real databases.
// Everything here targets 127.0.0.1 only, and every loop is bounded in count and time.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll } from 'vitest';
import { openDataStore, type DataStore } from '../../src/lib/db/index.js';
import { accountsService } from '../../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { waitFor } from '../helpers.js';

export const BIN = join(process.cwd(), 'bin/lanebridge');

/** Limits high enough that no reliability test ever meets the rate limiter (they test other things). */
export const HUGE_LIMITS = { perMinute: 1_000_000_000, perDay: 2_000_000_000 } as const;

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `lanebridge-${prefix}-`));
}

/** A port nobody listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP client (node:http, so a refused connection, a reset and a timeout are told apart)

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  ms: number;
}

export interface HttpOptions {
  method?: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  agent?: http.Agent | false;
  /** Called once the whole request body has been handed to the socket. */
  onSent?: () => void;
  /** The body's last byte is held back until this settles: the request stays in flight, waiting for it. */
  holdLastByte?: Promise<unknown>;
}

export function httpRequest(port: number, opts: HttpOptions): Promise<HttpResult> {
  const started = Date.now();
  const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: opts.method ?? 'GET',
        path: opts.path,
        agent: opts.agent ?? false,
        headers: {
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started }),
        );
      },
    );
    req.setTimeout(opts.timeoutMs ?? 15_000, () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.on('error', reject);
    if (opts.onSent) req.on('finish', opts.onSent);
    const hold = opts.holdLastByte;
    if (hold && payload !== undefined && payload.length > 1) {
      // JSON bodies end in an ASCII character: the last character is the last byte.
      req.write(payload.slice(0, -1));
      void hold.then(() => req.end(payload.slice(-1)));
    } else req.end(payload);
  });
}

export function parse<T = any>(r: HttpResult): T {
  return JSON.parse(r.text) as T;
}

// ---------------------------------------------------------------------------------------------
// Server processes

export interface ServerProcess {
  proc: ChildProcess;
  port: number;
  /** stdout and stderr so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  waitReady(timeoutMs?: number): Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

const children = new Set<ChildProcess>();

/** `bin/lanebridge serve` as a child process; `DATABASE_URL` and the port are its own. */
export async function startServer(opts: { databaseUrl: string; port?: number; env?: Record<string, string>; logLevel?: string }): Promise<ServerProcess> {
  const port = opts.port ?? (await freePort());
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.REDIS_URL;
  delete env.LANEBRIDGE_TEST_DATABASE_URL;
  const proc = spawn(BIN, ['serve'], {
    env: {
      ...env,
      DATABASE_URL: opts.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: opts.logLevel ?? 'warn',
      // Internal fields (src/config.ts): no rate limits unless a test's env says otherwise.
      LANEBRIDGE_INTERNAL: JSON.stringify({ rateLimits: false }),
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    proc.on('exit', (code, signal) => {
      children.delete(proc);
      resolve({ code, signal, at: Date.now() });
    }),
  );
  let dead: string | null = null;
  void exited.then((e) => (dead = `code ${e.code}, signal ${e.signal}`));
  return {
    proc,
    port,
    output: () => out,
    exited,
    kill: (signal) => {
      if (!dead) proc.kill(signal);
    },
    async waitReady(timeoutMs = 30_000) {
      const ready = async () => {
        if (dead) throw new Error(`server exited before it was ready (${dead}):\n${out}`);
        try {
          return (await httpRequest(port, { path: '/readyz', timeoutMs: 2000 })).status === 200;
        } catch {
          return false; // not listening yet
        }
      };
      await waitFor(ready, { timeout: timeoutMs, interval: 100 }).catch((err: Error) => {
        throw err.message.startsWith('server exited') ? err : new Error(`server not ready after ${timeoutMs} ms:\n${out}`);
      });
    },
  };
}

/**
 * startServer and waitReady. A process killed by a signal before it was ready (not by us: this machine
 * is shared, and something outside the test has been seen to kill processes) is started once more; one
 * that exits by itself fails the test at once.
 */
export async function startReadyServer(opts: Parameters<typeof startServer>[0]): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    const server = await startServer(opts);
    try {
      await server.waitReady();
      return server;
    } catch (err) {
      const killed = server.proc.signalCode !== null;
      server.kill('SIGKILL');
      if (!killed || attempt >= 2) throw err;
      console.warn(`server killed by ${server.proc.signalCode} before it was ready; starting it again`);
    }
  }
}

/** SIGKILL every server process still running (afterAll, whatever happened in the tests). */
export async function killAllServers() {
  const pending = [...children].map(
    (p) =>
      new Promise<void>((resolve) => {
        if (p.exitCode !== null || p.signalCode !== null) return resolve();
        p.once('exit', () => resolve());
        p.kill('SIGKILL');
        setTimeout(resolve, 5000).unref();
      }),
  );
  await Promise.all(pending);
}

// ---------------------------------------------------------------------------------------------
// Databases

/** What a file's tests leave behind, undone by an afterAll: every server still running, then the cleanups (newest first). */
export interface ServerCleanups {
  push(...cleanups: (() => Promise<void> | void)[]): void;
  /** A database for one test: a SQLite file, or on the PostgreSQL run a fresh database; removed afterwards. */
  database(name: string): Promise<string>;
}

/** The file's cleanups (one call at the top of a test file: it registers the afterAll). */
export function serverCleanups(): ServerCleanups {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    await killAllServers();
    for (const c of cleanups.reverse()) await c();
  });
  return {
    push: (...more) => void cleanups.push(...more),
    async database(name) {
      const admin = pgAdminUrl();
      if (admin) {
        const db = await freshPgDatabase(admin, `${name}_${process.pid}`);
        cleanups.push(() => db.drop());
        return db.url;
      }
      const dir = tempDir(name);
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return join(dir, 'lanebridge.db');
    },
  };
}

/** An organization and an all-scope key written straight into the database (migrating it first). */
export async function createTenantInDb(databaseUrl: string, name = 'Reliability'): Promise<{ orgId: string; key: string; keyId: string }> {
  const store = openDataStore(databaseUrl, { poolSize: 2 });
  try {
    await store.migrate();
    return await createTenant(store, name);
  } finally {
    await store.close();
  }
}

export async function createTenant(store: DataStore, name = 'Reliability'): Promise<{ orgId: string; key: string; keyId: string }> {
  const accounts = accountsService(store);
  const org = await accounts.createOrganization(`${name} ${process.pid} ${Math.random().toString(36).slice(2, 8)}`);
  const key = await accounts.createKey(org.id, { name: 'reliability', externalSystem: 'vitest', scopes: [...SCOPES], ...HUGE_LIMITS });
  return { orgId: org.id, key: key.key, keyId: key.id };
}

/** The admin URL of the PostgreSQL run (`LANEBRIDGE_TEST_DATABASE_URL`), or null on the SQLite run. */
export function pgAdminUrl(): string | null {
  return process.env.LANEBRIDGE_TEST_DATABASE_URL || null;
}

/** A fresh PostgreSQL database beside the admin one; `drop()` removes it (connections included). */
export async function freshPgDatabase(adminUrl: string, name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A throwaway PostgreSQL cluster of our own (the machine's one is shared with everyone's tests)

const PG_BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/14/bin'];

export function findPgBin(): string | null {
  return PG_BIN_DIRS.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl'))) ?? null;
}

export class PgCluster {
  readonly dir: string;
  readonly dataDir: string;
  private readonly asUser: string[];

  constructor(
    private readonly bin: string,
    readonly port: number,
  ) {
    this.dir = tempDir('pgcluster');
    this.dataDir = join(this.dir, 'data');
    // initdb and postgres refuse to run as root: run them as the postgres system user then.
    const root = process.getuid?.() === 0;
    this.asUser = root ? ['runuser', '-u', 'postgres', '--'] : [];
    if (root) {
      const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
      const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
      chownSync(this.dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
    }
  }

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private run(tool: string, args: string[], timeoutMs = 60_000) {
    const [cmd, ...pre] = [...this.asUser, join(this.bin, tool)];
    const r = spawnSync(cmd!, [...pre, ...args], { encoding: 'utf8', timeout: timeoutMs });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout || String(r.error)}`);
    return r.stdout;
  }

  init() {
    this.run('initdb', ['-D', this.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  }

  start() {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`;
    this.run('pg_ctl', ['-D', this.dataDir, '-o', opts, '-l', join(this.dir, 'postgres.log'), '-w', '-t', '30', 'start']);
  }

  /** `fast`: sessions are terminated, the cluster shuts down cleanly. `immediate`: like a crash. */
  stop(mode: 'fast' | 'immediate' = 'fast') {
    this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
  }

  running(): boolean {
    const [cmd, ...pre] = [...this.asUser, join(this.bin, 'pg_ctl')];
    return spawnSync(cmd!, [...pre, '-D', this.dataDir, 'status'], { encoding: 'utf8' }).status === 0;
  }

  /** Stops the cluster if it runs and removes its directory. Never throws. */
  destroy() {
    try {
      if (existsSync(this.dataDir) && this.running()) this.stop('immediate');
    } catch {
      // best effort
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
