import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps, type Lanebridge } from '../src/app.js';
import type { Clock } from '../src/lib/clock.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDataStore, type DataStore } from '../src/lib/db/index.js';
import { SCOPES, type Scope } from '../src/modules/accounts/scopes.js';

export interface TestApp extends Lanebridge {
  store: DataStore;
  config: Config;
  /** The app's clock when the test did not pass its own. */
  clock: TestClock;
  close(): Promise<void>;
}

export interface TestClock extends Clock {
  /** Moves time on (instead of sleeping). */
  advance(ms: number): void;
}

/**
 * The default clock of test apps: it moves only when told, plus 1 ms at each reading, so that
 * consecutive writes get ordered timestamps without a real wait.
 */
export function testClock(start = Date.now()): TestClock {
  let at = start;
  return {
    now: () => new Date(at++),
    advance(ms: number) {
      at += ms;
    },
  };
}

export const isPostgres = () => inject('databaseUrl') !== null;

/**
 * The app on the suite's database: the run's PostgreSQL database, or a fresh SQLite file. `opts` adds
 * what buildApp takes beside the config (a fake clock, rate-limiter options, a logger).
 */
export async function startApp(overrides: Partial<Config> = {}, opts: Partial<Omit<AppDeps, 'config' | 'store'>> = {}): Promise<TestApp> {
  return startAppOn(inject('databaseUrl'), overrides, opts);
}

/**
 * The app on the database `databaseUrl` (null: a fresh SQLite file): a test whose app works every
 * organization's rows (a background webhook worker) gives it a PostgreSQL database of its own.
 */
export async function startAppOn(
  pgUrl: string | null,
  overrides: Partial<Config> = {},
  opts: Partial<Omit<AppDeps, 'config' | 'store'>> = {},
): Promise<TestApp> {
  let dir: string | null = null;
  let databaseUrl: string;
  if (pgUrl) databaseUrl = pgUrl;
  else {
    dir = mkdtempSync(join(tmpdir(), 'lanebridge-test-'));
    databaseUrl = join(dir, 'test.db');
  }
  const config = { ...loadConfig({}), databaseUrl, ...overrides };
  const store = openDataStore(databaseUrl, { poolSize: 5 });
  await store.migrate();
  const clock = testClock();
  // Imports (D15) run only when a test drains them or asks for the background runner: the suite's
  // apps share one PostgreSQL database, and each has its own parts directory.
  const built = await buildApp({ logger: false, clock, importRunner: 'manual', ...opts, config, store });
  return {
    ...built,
    store,
    config,
    clock,
    async close() {
      await built.app.close();
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The app of a file or a describe block, with its teardown: `const t = useApp(overrides, opts)`
 * registers a beforeAll that starts it (as startApp does) and an afterAll that closes it, so no test
 * writes its own close. `t` is read in hooks and tests (before the beforeAll has run it throws). Call
 * it before the block's own beforeAll hooks that use it: hooks run in the order they are registered
 * (after hooks in reverse). A test that restarts, crashes or closes its app on purpose uses startApp.
 */
export function useApp(overrides: Partial<Config> = {}, opts: Partial<Omit<AppDeps, 'config' | 'store'>> = {}): TestApp {
  return useAppFrom(() => startApp(overrides, opts));
}

/** useApp for an app another helper starts (the dashboard's, test/dashboard/support.ts). */
export function useAppFrom(start: () => Promise<TestApp>): TestApp {
  let started: TestApp | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    await started?.close();
    started = undefined;
  });
  return new Proxy({} as TestApp, {
    get(_, key) {
      if (!started) throw new Error(`useApp: the app is read before its beforeAll started it (reading ${String(key)})`);
      return Reflect.get(started, key, started);
    },
  });
}

/** What a truthy value of type T can be. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Waits until `condition` gives a truthy value (which it returns), checking every `interval` ms; after
 * `timeout` ms it throws, naming `what`. The suite's one way to wait for something to happen (an
 * answer, a row, a log line) instead of sleeping a guessed time.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeout = 10_000, interval = 20, what = 'the condition' }: { timeout?: number; interval?: number; what?: string } = {},
): Promise<Truthy<T>> {
  const until = Date.now() + timeout;
  for (;;) {
    const value = await condition();
    if (value) return value as Truthy<T>;
    if (Date.now() >= until) throw new Error(`waitFor: ${what} did not happen within ${timeout} ms`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

/**
 * Lets `ms` of real time pass. Only where the passing of time is what the test is about (a gap, a
 * timeout, a throttle window, a client that stalls); to wait for something to happen use waitFor.
 */
export function letTimePass(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface Tenant {
  orgId: string;
  keyId: string;
  key: string;
  headers: Record<string, string>;
  request(opts: InjectOptions): Promise<LightMyRequestResponse>;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, body: unknown): Promise<LightMyRequestResponse>;
  put(url: string, body: unknown): Promise<LightMyRequestResponse>;
  del(url: string): Promise<LightMyRequestResponse>;
}

let tenantCounter = 0;

/**
 * A new organization with a key: tests never share data, so they run in any order on any engine. The
 * key has the product's default rate limits (100 a minute) unless `limits` says otherwise.
 */
export async function newTenant(t: TestApp, scopes: readonly Scope[] = SCOPES, limits: { perMinute?: number; perDay?: number } = {}): Promise<Tenant> {
  const { accounts } = t.services;
  const org = await accounts.createOrganization(`Test Org ${++tenantCounter} ${process.pid}`);
  const created = await accounts.createKey(org.id, { name: 'test', externalSystem: 'vitest', scopes: [...scopes], ...limits });
  const headers = { 'x-api-key': created.key };
  const request = (opts: InjectOptions) => t.app.inject({ ...opts, headers: { ...headers, ...(opts.headers as Record<string, string> | undefined) } });
  return {
    orgId: org.id,
    keyId: created.id,
    key: created.key,
    headers,
    request,
    get: (url) => request({ method: 'GET', url }),
    post: (url, body) => request({ method: 'POST', url, payload: body as never }),
    put: (url, body) => request({ method: 'PUT', url, payload: body as never }),
    del: (url) => request({ method: 'DELETE', url }),
  };
}

export function json<T = any>(res: LightMyRequestResponse): T {
  return JSON.parse(res.body) as T;
}

/** A unique-enough suffix for external reference ids within a test. */
export function uid(prefix = 'X'): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}
