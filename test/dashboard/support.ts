import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { expect, inject } from 'vitest';
import type { Page } from 'playwright-core';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDataStore } from '../../src/lib/db/index.js';
import type { Clock } from '../../src/lib/clock.js';
import { testClock, type TestApp } from '../helpers.js';

export interface DashboardAppOptions {
  /**
   * A database of its own (first run needs one without any organization). On SQLite every app has
   * its own file anyway; on PostgreSQL a database is created for it and dropped on close.
   */
  fresh?: boolean;
  clock?: Clock;
  dashboard?: AppDeps['dashboard'];
}

let counter = 0;

export async function startDashboardApp(o: DashboardAppOptions = {}): Promise<TestApp> {
  const runUrl = inject('databaseUrl');
  let databaseUrl: string;
  let cleanup: () => Promise<void> = async () => {};
  if (!runUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'lanebridge-dash-'));
    databaseUrl = join(dir, 'test.db');
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else if (o.fresh) {
    const url = new URL(runUrl);
    const name = `${url.pathname.slice(1)}_dash_${process.pid}_${++counter}`;
    const admin = new pg.Client({ connectionString: runUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    cleanup = async () => {
      const c = new pg.Client({ connectionString: runUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    };
  } else {
    databaseUrl = runUrl;
  }
  const config = { ...loadConfig({}), databaseUrl };
  const store = openDataStore(databaseUrl, { poolSize: 5 });
  await store.migrate();
  const clock = testClock();
  const built = await buildApp({ config, store, logger: false, clock: o.clock ?? clock, ...(o.dashboard ? { dashboard: o.dashboard } : {}) });
  return {
    ...built,
    store,
    config,
    clock,
    async close() {
      await built.app.close();
      await store.close();
      await cleanup();
    },
  };
}

export type Form = Record<string, string | string[]>;

export function encodeForm(form: Form): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) p.append(k, one);
  return p.toString();
}

/** The hidden CSRF field of the (first) form on a page. */
export function csrfOf(body: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(body);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1]!;
}

/** A cookie-keeping client over app.inject, as a browser would be. */
export class Visitor {
  readonly cookies = new Map<string, string>();
  constructor(
    private readonly t: TestApp,
    readonly remoteAddress = '127.0.0.1',
  ) {}

  private remember(res: LightMyRequestResponse) {
    for (const c of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      const gone = c.value === '' || c.maxAge === 0 || (c.expires && c.expires.getTime() <= Date.now());
      if (gone) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string, headers: Record<string, string> = {}) {
    return this.remember(await this.t.app.inject({ method: 'GET', url, remoteAddress: this.remoteAddress, headers: { cookie: this.cookieHeader, ...headers } }));
  }

  async post(url: string, form: Form, headers: Record<string, string> = {}) {
    return this.remember(
      await this.t.app.inject({
        method: 'POST',
        url,
        remoteAddress: this.remoteAddress,
        payload: encodeForm(form),
        headers: { cookie: this.cookieHeader, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      }),
    );
  }

  /** GETs the page with the form and posts it with the page's CSRF token. */
  async submit(pageUrl: string, action: string, form: Form) {
    const pageRes = await this.get(pageUrl);
    return this.post(action, { _csrf: csrfOf(pageRes.body), ...form });
  }

  async signIn(email: string, password: string) {
    const res = await this.submit('/signin', '/signin', { email, password });
    if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode} ${res.body.slice(0, 200)}`);
    return res;
  }
}

let orgCounter = 0;

/** An organization with a user who can sign in, and the connected integration and a key for seeding. */
export async function orgWithUser(t: TestApp, opts: { connect?: boolean } = {}) {
  const n = `${process.pid}-${++orgCounter}-${Math.random().toString(36).slice(2, 8)}`;
  const org = await t.services.accounts.createOrganization(`Org ${n}`);
  const email = `owner-${n}@example.com`;
  const password = `correct horse ${n}`;
  const user = await t.services.accounts.createUser(org.id, { email, name: `Owner ${n}`, password });
  let key: string | null = null;
  if (opts.connect !== false) {
    key = (await t.services.accounts.createKey(org.id, { name: 'seed', externalSystem: 'vitest', scopes: ['read:customers', 'write:customers', 'read:loads', 'write:loads', 'read:locations', 'write:locations', 'read:carriers', 'write:carriers'] })).key;
  }
  return { orgId: org.id, orgName: `Org ${n}`, email, password, userId: user.id, key };
}

/** A new organization with its first user (an admin), signed in. */
export async function signedIn(t: TestApp) {
  const o = await orgWithUser(t);
  const v = new Visitor(t);
  await v.signIn(o.email, o.password);
  return { o, v };
}

export function apiPost(t: TestApp, key: string, url: string, body: unknown) {
  return t.app.inject({ method: 'POST', url, headers: { 'x-api-key': key }, payload: body as never });
}

/** Every control labelled, one h1 and no skipped heading level. */
export async function checkPageStructure(p: Page) {
  const found = await p.evaluate(() => {
    const unlabelled = [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
      .filter((el) =>
        el.tagName === 'BUTTON'
          ? !(el.textContent ?? '').trim() && !el.getAttribute('aria-label')
          : ((el as HTMLInputElement).labels?.length ?? 0) === 0 && !el.getAttribute('aria-label'),
      )
      .map((el) => el.outerHTML);
    const levels = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => Number(h.tagName[1]));
    return { unlabelled, levels };
  });
  expect(found.unlabelled, p.url()).toEqual([]);
  expect(found.levels[0], p.url()).toBe(1);
  expect(found.levels.filter((l) => l === 1)).toHaveLength(1);
  for (let i = 1; i < found.levels.length; i++) expect(found.levels[i]!, p.url()).toBeLessThanOrEqual(found.levels[i - 1]! + 1);
}

/** Records every request the page makes to another origin than the app's (`base`), and its console errors. */
export function watchPage(p: Page, base: string, outsideRequests: string[], consoleErrors: string[]): void {
  p.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) outsideRequests.push(r.url());
  });
  p.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
}
