import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject } from 'vitest';
import type { Page } from 'playwright-core';
import type { LightMyRequestResponse } from 'fastify';
import type { AppDeps } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import type { Clock } from '../../src/lib/clock.js';
import { startAppOn, useAppFrom, type TestApp } from '../helpers.js';
import { freshPgDatabase } from '../reliability/support.js';

export interface DashboardAppOptions {
  /**
   * A database of its own (first run needs one without any organization). On SQLite every app has
   * its own file anyway; on PostgreSQL a database is created for it and dropped on close.
   */
  fresh?: boolean;
  clock?: Clock;
  dashboard?: AppDeps['dashboard'];
  /** Settings over the environment's (an imports folder, insecure webhook URLs). */
  config?: Partial<Config>;
  /** How the app's workers run (`webhookDelivery: 'manual'`, `importRunner: 'manual'`: only when drained). */
  workers?: Pick<AppDeps, 'webhookDelivery' | 'importRunner'>;
}

let counter = 0;

export async function startDashboardApp(o: DashboardAppOptions = {}): Promise<TestApp> {
  const runUrl = inject('databaseUrl');
  const own = runUrl && o.fresh ? await freshPgDatabase(runUrl, `${new URL(runUrl).pathname.slice(1)}_dash_${process.pid}_${++counter}`) : null;
  // The dashboard's apps run their import runner as the product does unless `workers` says otherwise.
  const deps: Partial<AppDeps> = Object.assign(
    { importRunner: undefined },
    o.workers,
    o.clock && { clock: o.clock },
    o.dashboard && { dashboard: o.dashboard },
  );
  const t = await startAppOn(own?.url ?? runUrl, o.config, deps);
  if (own) {
    const close = t.close;
    t.close = async () => {
      await close();
      await own.drop();
    };
  }
  return t;
}

/** startDashboardApp with useApp's automatic teardown (test/helpers.ts). */
export function useDashboardApp(o: DashboardAppOptions = {}): TestApp {
  return useAppFrom(() => startDashboardApp(o));
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
    return this.remember(
      await this.t.app.inject({ method: 'GET', url, remoteAddress: this.remoteAddress, headers: { cookie: this.cookieHeader, ...headers } }),
    );
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
    key = (
      await t.services.accounts.createKey(org.id, {
        name: 'seed',
        externalSystem: 'vitest',
        scopes: ['read:customers', 'write:customers', 'read:loads', 'write:loads', 'read:locations', 'write:locations', 'read:carriers', 'write:carriers'],
      })
    ).key;
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

/** Headless Chromium for the browser tests: Debian's `chromium`, or LANEBRIDGE_CHROMIUM. */
export const CHROMIUM = process.env.LANEBRIDGE_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_PRESENT = existsSync(CHROMIUM);
/** On CI a missing Chromium fails the browser tests instead of skipping them. */
export const BROWSER_REQUIRED = Boolean(process.env.CI);
export const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];
/**
 * Whether a browser test file can start Chromium. Without it a developer's run skips the file's tests
 * (`tests … skipped` on stderr) instead of failing the whole suite, and CI fails (.ci/run installs it).
 */
export function chromiumReady(tests: string): boolean {
  if (CHROMIUM_PRESENT) return true;
  if (!BROWSER_REQUIRED) {
    process.stderr.write(`${tests} skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)\n`);
    return false;
  }
  throw new Error(
    `Chromium was not found at ${CHROMIUM}. The dashboard browser tests need Debian's chromium: ` +
      'run `apt-get install -y chromium` (.ci/run does this when it is missing), or set LANEBRIDGE_CHROMIUM to its path. ' +
      '`npx playwright install` cannot download a browser here.',
  );
}
/** Where the browser tests save their screenshots (gitignored). */
export const SCREENSHOTS = join(process.cwd(), 'test-results', 'screenshots');
/** A laptop and a phone. */
export const WIDTHS = { desktop: { width: 1366, height: 900 }, phone: { width: 390, height: 844 } } as const;

/** Opens every `<details>`, so what it folds away is laid out and checked too. */
export async function openAllDetails(p: Page): Promise<void> {
  await p.evaluate(() => {
    for (const d of document.querySelectorAll('details')) d.open = true;
  });
}

/**
 * What does not fit at the page's current width, in words (empty when everything fits): the page
 * scrolling sideways (wider than the window by more than 1 px), a table wider than its container,
 * content clipped by an ancestor of a table with `overflow-x: hidden` or `clip`, and a table cell
 * whose content spills out of it. With `tablesMayScroll` a table may be wider than a container that
 * scrolls sideways (`overflow-x: auto` or `scroll`): that is how wide tables fit a phone; without it
 * (a laptop) every table must show all its columns.
 */
export async function layoutProblems(p: Page, o: { tablesMayScroll: boolean }): Promise<string[]> {
  return p.evaluate((tablesMayScroll) => {
    const problems: string[] = [];
    const root = document.documentElement;
    const sideways = root.scrollWidth - window.innerWidth;
    const overflowX = (el: Element) => getComputedStyle(el).overflowX;
    if (sideways > 1) {
      // The outermost elements that stick out (not those inside a box that scrolls or clips them).
      const contained = (el: Element) => {
        for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) if (overflowX(a) !== 'visible') return true;
        return false;
      };
      const out = (el: Element | null) => !!el && el.getBoundingClientRect().right > window.innerWidth + 1;
      const culprits = [...document.body.querySelectorAll('*')]
        .filter((el) => out(el) && (getComputedStyle(el).position === 'absolute' || (!out(el.parentElement) && !contained(el))))
        .slice(0, 4)
        .map(
          (el) =>
            `<${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string' ? ` class="${el.className}"` : ''}> ${Math.round(el.getBoundingClientRect().width)} px wide`,
        );
      problems.push(
        `the page scrolls sideways: ${root.scrollWidth} px wide in a ${window.innerWidth} px window (${sideways} px too wide): ${culprits.join(', ')}`,
      );
    }
    const contentWidth = (el: Element) => {
      const style = getComputedStyle(el);
      return el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    };
    const nameOf = (table: HTMLTableElement) => {
      const labelledBy = table.getAttribute('aria-labelledby');
      const text =
        table.caption?.textContent ?? (labelledBy ? document.getElementById(labelledBy)?.textContent : null) ?? table.querySelector('th')?.textContent ?? '';
      return text.trim().replace(/\s+/g, ' ').slice(0, 60);
    };
    for (const table of document.querySelectorAll('table')) {
      if (table.getClientRects().length === 0) continue; // not rendered (in a closed <details>)
      const name = nameOf(table);
      const holder = table.parentElement!;
      const tooWide = Math.ceil(table.getBoundingClientRect().width) - Math.floor(contentWidth(holder));
      const scrolls = ['auto', 'scroll'].includes(overflowX(holder));
      if (tooWide > 1 && !(tablesMayScroll && scrolls)) {
        const columns = [...(table.tHead?.rows[0]?.cells ?? [])]
          .map((c) => `${(c.textContent ?? '').trim()} ${Math.round(c.getBoundingClientRect().width)}`)
          .join(', ');
        problems.push(
          `table "${name}" is ${tooWide} px wider than its container <${holder.tagName.toLowerCase()} class="${holder.className}">${scrolls ? ' (it scrolls)' : ', which does not scroll'}; columns: ${columns}`,
        );
      }
      for (let el: Element | null = holder; el && el !== root; el = el.parentElement) {
        const clipped = el.scrollWidth - el.clientWidth;
        if (['hidden', 'clip'].includes(overflowX(el)) && clipped > 1)
          problems.push(`<${el.tagName.toLowerCase()} class="${el.className}"> around table "${name}" cuts off ${clipped} px of it`);
      }
      for (const row of table.rows) {
        for (const cell of row.cells) {
          const spill = cell.scrollWidth - cell.clientWidth;
          if (spill > 1)
            problems.push(
              `a cell of table "${name}" spills ${spill} px out of its column: "${(cell.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 50)}"`,
            );
        }
      }
    }
    return problems;
  }, o.tablesMayScroll);
}

/**
 * Every visible checkbox that is not a square of at least `min` px (one squeezed in a row is only
 * narrower), or not level with the first line of its label's text (its middle more than 4 px from
 * the line's) or overlapping it; and how many there are.
 */
export async function checkboxProblems(p: Page, min = 13): Promise<{ checkboxes: number; problems: string[] }> {
  return p.evaluate((minSize) => {
    const problems: string[] = [];
    const boxes = [...document.querySelectorAll<HTMLInputElement>('input[type=checkbox]')].filter((b) => b.getClientRects().length > 0);
    for (const box of boxes) {
      const name = `checkbox ${box.name}=${box.value}`;
      const r = box.getBoundingClientRect();
      if (Math.min(r.width, r.height) < minSize || Math.abs(r.width - r.height) > 0.5)
        problems.push(`${name} is ${r.width.toFixed(1)} × ${r.height.toFixed(1)} px (a square of at least ${minSize} px expected)`);
      const label = box.labels?.[0];
      if (!label) continue;
      const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => ((n.textContent ?? '').trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP),
      });
      const text = walker.nextNode();
      if (!text) continue;
      const range = document.createRange();
      range.selectNodeContents(text);
      const line = range.getClientRects()[0];
      if (!line) continue;
      const offset = Math.abs(r.top + r.height / 2 - (line.top + line.height / 2));
      if (offset > 4) problems.push(`${name} is not level with the first line of its label: ${offset.toFixed(1)} px off its middle`);
      if (r.right > line.left) problems.push(`${name} overlaps its label by ${(r.right - line.left).toFixed(1)} px`);
    }
    return { checkboxes: boxes.length, problems };
  }, min);
}

/**
 * The labels of each chart's value axis, by chart id (the right-aligned labels of its axes: the
 * other axis labels are centred under their column), and whether the chart counts things
 * (`data-axis="count"`: whole-number ticks).
 */
export async function chartAxes(p: Page): Promise<{ id: string; counts: boolean; ticks: string[] }[]> {
  return p.evaluate(() =>
    [...document.querySelectorAll('svg.chart')].map((svg) => ({
      id: svg.id,
      counts: svg.getAttribute('data-axis') === 'count',
      ticks: [...svg.querySelectorAll('.axis text[text-anchor="end"]')].map((t) => (t.textContent ?? '').trim()),
    })),
  );
}

/** A request to the API as the key `key`, through the app (no network). */
export function apiAs(t: TestApp, key: string, method: string, url: string, body?: unknown) {
  return t.app.inject({
    method: method as 'POST',
    url: `/v2/tms-api${url}`,
    headers: { 'x-api-key': key },
    ...(body === undefined ? {} : { payload: body as never }),
  });
}

/** A record created through the API as the key `key` (201, else the test fails with the answer). */
export async function seedAs(t: TestApp, key: string, url: string, body: unknown): Promise<void> {
  const res = await apiAs(t, key, 'POST', url, body);
  expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
}
