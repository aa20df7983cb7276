import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import type { TestApp } from '../helpers.js';
import {
  BROWSER_REQUIRED,
  CHROMIUM,
  CHROMIUM_PRESENT,
  LAUNCH_ARGS,
  SCREENSHOTS,
  WIDTHS,
  chartAxes,
  checkPageStructure,
  checkboxProblems,
  layoutProblems,
  openAllDetails,
  startDashboardApp,
  watchPage,
  chromiumReady,
} from './support.js';

/**
 * Every dashboard page in headless Chromium at laptop (1,366 × 900) and phone (390 × 844) width, on
 * an organization with the data a broker has after a while (long names, keys with every scope, a
 * webhook endpoint with a long URL and failed deliveries, an import with refused rows, a member,
 * audit entries, events, delivered and open loads with recommendations). On every page, at both
 * widths, with every `<details>` opened: the page does not scroll sideways, no table is wider than a
 * container that does not scroll and no cell spills out of its column, checkboxes are full size and
 * beside their label, and no chart repeats a value on its axis (count charts: whole numbers only).
 * Each page is saved to test-results/screenshots/page-<name>-<desktop|phone>.png.
 */
const DAY = 86_400_000;
const OWNER = {
  organization: 'Lone Star Freight Brokerage & Logistics Partners of North Texas',
  name: 'Ada Okonkwo-Fitzgerald',
  email: 'ada.okonkwo-fitzgerald@lonestar-freight-brokerage.example',
  password: 'pages browser password',
};
const LONG_KEY = {
  name: 'Production TMS synchronisation for the Dallas brokerage desk (loads, carriers, locations, rates)',
  system: 'McLeod LoadMaster Enterprise 2024.2 on-premises, Dallas data centre',
};
// No break opportunity over 150 characters: the URL must wrap (or scroll in its table), not widen the page.
const LONG_WEBHOOK_URL = `http://127.0.0.1:9/integrations/lanebridge/webhooks/receiver/organization-7f3c2a910b5e4d8f9a613e2f7c4d1b08/events?token=${'a1b2c3d4e5'.repeat(6)}`;

let t: TestApp;
let base = '';
let browser: Browser;
let page: Page;
let importsDir = '';
const outsideRequests: string[] = [];
const consoleErrors: string[] = [];
/** Ids the pages' addresses need, known once the data is seeded. */
const ids = { key: '', webhook: '', importWithErrors: '' };

beforeAll(async () => {
  if (!chromiumReady('dashboard pages browser tests')) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  importsDir = mkdtempSync(join(tmpdir(), 'lanebridge-pages-imports-'));
  // First run needs a database without any organization; deliveries and imports run when drained.
  t = await startDashboardApp({
    fresh: true,
    config: { importsDir, webhookAllowInsecure: true },
    workers: { webhookDelivery: 'manual', importRunner: 'manual' },
  });
  base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  page = await (await browser.newContext({ viewport: WIDTHS.desktop })).newPage();
  watchPage(page, base, outsideRequests, consoleErrors);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  if (importsDir) rmSync(importsDir, { recursive: true, force: true });
});

/**
 * The current page's problems at both widths (with its folded parts opened), its structure checked
 * and its screenshots saved; the window is back at desktop width afterwards.
 */
async function problemsAtBothWidths(name: string): Promise<string[]> {
  await checkPageStructure(page);
  await openAllDetails(page);
  const problems: string[] = [];
  for (const [width, size] of Object.entries(WIDTHS)) {
    await page.setViewportSize(size);
    problems.push(...(await layoutProblems(page, { tablesMayScroll: width === 'phone' })).map((p) => `${width}: ${p}`));
    problems.push(...(await checkboxProblems(page)).problems.map((p) => `${width}: ${p}`));
    await page.screenshot({ path: join(SCREENSHOTS, `page-${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize(WIDTHS.desktop);
  for (const chart of await chartAxes(page)) {
    if (new Set(chart.ticks).size !== chart.ticks.length) problems.push(`chart ${chart.id} repeats a value on its axis: ${chart.ticks.join(', ')}`);
    if (chart.counts && !chart.ticks.every((tick) => /^\d[\d,]*$/.test(tick)))
      problems.push(`count chart ${chart.id} has a tick that is not a whole number: ${chart.ticks.join(', ')}`);
  }
  return problems;
}

async function seed(key: string, url: string, body: unknown, status = 201) {
  const res = await t.app.inject({ method: 'POST', url: `/v2/tms-api${url}`, headers: { 'x-api-key': key }, payload: body as never });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(status);
  return res;
}

/** What a broker's organization holds after a while, with names as long as real ones get. */
async function seedOrganization(orgId: string) {
  const { accounts } = t.services;
  const expires = new Date(t.clock.now().getTime() + 400 * DAY).toISOString();
  const created = await accounts.createKey(orgId, {
    name: LONG_KEY.name,
    externalSystem: LONG_KEY.system,
    scopes: [...SCOPES],
    perMinute: 12_000,
    perDay: 2_000_000,
    strict: true,
    expiresAt: expires,
  });
  ids.key = created.id;
  const key = created.key;
  const staging = await accounts.createKey(orgId, {
    name: 'Staging sandbox (decommissioned)',
    externalSystem: 'McLeod test instance',
    scopes: ['read:loads', 'read:carriers'],
  });
  await accounts.revokeKey(orgId, staging.id);
  const rotating = await accounts.createKey(orgId, {
    name: 'Carrier portal',
    externalSystem: 'Portal',
    scopes: ['read:carriers', 'write:carriers', 'read:loads'],
  });
  await accounts.rotateKey(orgId, rotating.id, { graceHours: 48 });
  await accounts.createUser(orgId, {
    email: 'maximilian.dispatch-coordinator@lonestar-freight-brokerage.example',
    name: 'Maximilian Alexander Dispatch-Coordinator',
    password: 'member password long',
    role: 'member',
  });
  await accounts.createUser(orgId, { email: 'rep.only@lonestar-freight-brokerage.example', name: 'Rita Rep (no sign-in)' });

  // Created first, so every change below is delivered to it (and fails: nothing listens on port 9).
  const endpoint = await t.webhooks.service.create(orgId, {
    url: LONG_WEBHOOK_URL,
    description: 'Forwards every change to the data warehouse loader of the analytics team (nightly reconciliation and the on-time dashboards)',
  });
  ids.webhook = endpoint.id;

  const now = t.clock.now().getTime();
  const iso = (ms: number) => new Date(ms).toISOString();
  const places: [string, string, string, number, number][] = [
    ['LOC-DAL', 'Dallas Regional Distribution Center, North Dock Receiving', 'TX', 32.7767, -96.797],
    ['LOC-FTW', 'Fort Worth Alliance Cross-Dock Yard', 'TX', 32.7555, -97.3308],
    ['LOC-HOU', 'Houston Port Terminal 4, Bayport Container Yard', 'TX', 29.7604, -95.3698],
    ['LOC-CHI', 'Chicago Intermodal Hub', 'IL', 41.8781, -87.6298],
    ['LOC-ATL', 'Atlanta Crossdock', 'GA', 33.749, -84.388],
  ];
  for (const [ref, name, state, latitude, longitude] of places) {
    await seed(key, '/locations', {
      external_reference_id: ref,
      name,
      city: name.split(' ')[0],
      state,
      latitude,
      longitude,
      address_line1: '12500 Interstate Highway 35 East Frontage Road, Building C',
      phone_number: '+1 214 555 0142',
      email: `receiving.appointments.${ref.toLowerCase()}@lonestar-freight-brokerage.example`,
      weekday_open_hours: '07:00',
      weekday_close_hours: '18:00',
      weekend_open_hours: '08:00',
      weekend_close_hours: '12:00',
    });
  }
  await seed(key, '/customers', {
    external_reference_id: 'CUST-ACME',
    name: 'Acme Consolidated Southwestern Grocery Distribution Cooperative, Inc.',
    reference_number: 'ACME-000123456789',
    customer_type: 'Retail grocery',
    domain: 'acme-consolidated-southwestern-grocery.example',
    phone: '+1 972 555 0100',
  });
  await seed(key, '/customers', { external_reference_id: 'CUST-BOLT', name: 'Bolt Hardware' });
  await seed(key, '/carriers', {
    external_reference_id: 'CAR-ALAMO',
    name: 'Alamo Trucking & Refrigerated Logistics of South Texas, LLC',
    dot_number: 'DOT100001',
    mc_number: 'MC-7654321',
    phone_number: '+1 210 555 0199',
    email: 'dispatch.operations.after-hours@alamo-trucking-refrigerated.example',
    address: { city: 'San Antonio', state: 'TX' },
    contacts: [
      {
        first_name: 'Rosalind',
        last_name: 'Diaz-Montgomery',
        primary_email: 'rosalind.diaz-montgomery@alamo-trucking-refrigerated.example',
        primary_phone: '+1 214 555 0100',
        is_primary_contact: true,
      },
      { first_name: 'Bo', last_name: 'Nguyen', primary_email: 'bo@alamo.example', primary_phone: '+1 214 555 0101' },
    ],
  });
  await seed(key, '/carriers', { external_reference_id: 'CAR-BLUE', name: 'Bluebonnet Freight', dot_number: 'DOT200002', phone_number: '+1 713 555 0199' });
  const lanes: [string, string, string, string, number][] = [
    ['LOC-DAL', 'LOC-HOU', 'DRY_VAN', 'CAR-ALAMO', 6],
    ['LOC-FTW', 'LOC-HOU', 'DRY_VAN', 'CAR-BLUE', 2],
    ['LOC-CHI', 'LOC-ATL', 'REEFER', 'CAR-BLUE', 3],
  ];
  let n = 0;
  for (const [from, to, equipment, carrier, loads] of lanes) {
    for (let i = 0; i < loads; i++) {
      const daysAgo = 3 + i * 9;
      const delivery = now - daysAgo * DAY;
      await seed(key, '/loads', {
        external_reference_id: `HIST-2026-${String(++n).padStart(6, '0')}`,
        equipment_type: equipment,
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST-ACME',
        carrier_external_reference_id: carrier,
        status: 'DELIVERED',
        financial_rates: [
          { rate_entity: 'CARRIER', amount: 900 + i * 40 },
          { rate_entity: 'CUSTOMER', amount: 1200 + i * 40, description: 'Linehaul including fuel surcharge at the DOE weekly average' },
        ],
        stops: [
          {
            stop_type: 'Pickup',
            location_external_reference_id: from,
            early_arrival: iso(delivery - DAY),
            late_arrival: iso(delivery - DAY + 3_600_000),
            actual_arrival: iso(delivery - DAY + 600_000),
          },
          {
            stop_type: 'Delivery',
            location_external_reference_id: to,
            early_arrival: iso(delivery),
            late_arrival: iso(delivery + 3_600_000),
            actual_arrival: iso(delivery + (i % 2 ? 7_200_000 : 900_000)),
          },
        ],
      });
    }
  }
  for (let w = 0; w < 6; w++) {
    await seed(key, '/market-rates', {
      origin: { location_external_reference_id: 'LOC-DAL' },
      destination: { location_external_reference_id: 'LOC-HOU' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.4 + w * 0.05,
      source: 'DAT',
      as_of: iso(now - w * 7 * DAY),
    });
  }
  await seed(key, '/loads', {
    external_reference_id: 'OPEN-DAL-HOU-0001',
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'CUST-ACME',
    weight: 42_000,
    weight_uom: 'lbs',
    description: 'Palletised dry grocery, 26 pallets, floor-loaded at the origin; appointment required at every stop, lumper paid by the receiver.',
    sales_rep: {
      name: 'Maximilian Alexander Dispatch-Coordinator',
      email: 'maximilian.dispatch-coordinator@lonestar-freight-brokerage.example',
      external_reference_id: 'REP-000042',
    },
    dispatcher_rep: { name: 'Rita Rep (no sign-in)', email: 'rep.only@lonestar-freight-brokerage.example' },
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'LOC-DAL', early_arrival: '2026-03-04T09:00:00Z', late_arrival: '2026-03-04T10:00:00Z' },
      { stop_type: 'Both', location_external_reference_id: 'LOC-FTW', early_arrival: '2026-03-04T18:00:00Z', late_arrival: '2026-03-04T19:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'LOC-HOU', early_arrival: '2026-03-05T15:00:00Z', late_arrival: '2026-03-05T18:00:00Z' },
    ],
  });
  // A failed write for the Overview's integration health (no name: 422).
  await seed(key, '/customers', { external_reference_id: 'CUST-NONAME' }, 422);

  // An import with a refused row (its errors are a download).
  const imp = await seed(key, '/imports', { resource: 'customers', format: 'ndjson' });
  ids.importWithErrors = (imp.json() as { id: string }).id;
  const rows = [
    { external_reference_id: 'IMP-1', name: 'Imported One' },
    { external_reference_id: 'IMP-2' },
    { external_reference_id: 'IMP-3', name: 'Imported Three' },
  ];
  const part = await t.app.inject({
    method: 'PUT',
    url: `/v2/tms-api/imports/${ids.importWithErrors}/parts/1`,
    headers: { 'x-api-key': key, 'content-type': 'application/x-ndjson' },
    payload: `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`,
  });
  expect(part.statusCode, part.body).toBe(200);
  await seed(key, `/imports/${ids.importWithErrors}/complete`, undefined, 200);
  await t.imports.runner.drain();
  await t.webhooks.worker.drain();
}

interface PageVisit {
  /** The route as the dashboard registers it. */
  route: string;
  /** Its screenshots' name. */
  name: string;
  path: () => string;
  /** What must be on it, so that the page checked is the one meant. */
  check?: () => Promise<void>;
}

const keyPath = () => `/settings/api-keys/${ids.key}`;
const webhookPath = () => `/settings/webhooks/${ids.webhook}`;
const heading = async () => (await page.getByRole('heading', { level: 1 }).textContent()) ?? '';

/** Every page of a signed-in admin (the sign-in and first-run pages are visited on their own). */
const PAGES: PageVisit[] = [
  {
    route: '/',
    name: 'overview',
    path: () => '/',
    check: async () => expect((await chartAxes(page)).filter((c) => c.id.startsWith('usage-') && c.counts).length).toBeGreaterThan(0),
  },
  { route: '/loads', name: 'loads', path: () => '/loads' },
  {
    route: '/loads/:ref',
    name: 'load-open',
    path: () => '/loads/OPEN-DAL-HOU-0001',
    check: async () => expect(await page.getByRole('table', { name: 'Carrier recommendations' }).count()).toBe(1),
  },
  { route: '/loads/:ref', name: 'load-delivered', path: () => '/loads/HIST-2026-000001' },
  { route: '/customers', name: 'customers', path: () => '/customers' },
  { route: '/customers/:ref', name: 'customer', path: () => '/customers/CUST-ACME' },
  { route: '/carriers', name: 'carriers', path: () => '/carriers' },
  { route: '/carriers/:ref', name: 'carrier', path: () => '/carriers/CAR-ALAMO' },
  { route: '/locations', name: 'locations', path: () => '/locations' },
  { route: '/locations/:ref', name: 'location', path: () => '/locations/LOC-HOU' },
  { route: '/lanes', name: 'lanes', path: () => '/lanes' },
  {
    route: '/lanes/:origin/:destination/:equipment',
    name: 'lane',
    path: () => '/lanes/LOC-DAL/LOC-HOU/DRY_VAN',
    check: async () => expect((await chartAxes(page)).find((c) => c.id === 'lane-volume')?.counts).toBe(true),
  },
  // At most one delivery a week: a count axis topped at 1 (it read 0, 1, 1).
  { route: '/lanes/:origin/:destination/:equipment', name: 'lane-weekly', path: () => '/lanes/LOC-CHI/LOC-ATL/REEFER' },
  { route: '/events', name: 'events', path: () => '/events' },
  {
    route: '/imports',
    name: 'imports',
    path: () => '/imports',
    check: async () => expect(await page.getByRole('link', { name: /Download 1 \(NDJSON\)/ }).count()).toBe(1),
  },
  {
    route: '/users',
    name: 'users',
    path: () => '/users',
    check: async () => expect(await page.getByText('Maximilian Alexander Dispatch-Coordinator').count()).toBeGreaterThan(0),
  },
  { route: '/account/password', name: 'account-password', path: () => '/account/password' },
  { route: '/signout', name: 'signout', path: () => '/signout' },
  { route: '/settings/integrations', name: 'settings-integrations', path: () => '/settings/integrations' },
  { route: '/settings/recommendations', name: 'settings-recommendations', path: () => '/settings/recommendations' },
  {
    route: '/settings/api-keys',
    name: 'settings-api-keys',
    path: () => '/settings/api-keys',
    // The scopes and the strict checkbox.
    check: async () => expect((await checkboxProblems(page)).checkboxes).toBe(SCOPES.length + 1),
  },
  {
    route: '/settings/api-keys/:id/limits',
    name: 'settings-api-key-limits',
    path: () => `${keyPath()}/limits`,
    check: async () => expect((await checkboxProblems(page)).checkboxes).toBe(1),
  },
  { route: '/settings/api-keys/:id/rotate', name: 'settings-api-key-rotate', path: () => `${keyPath()}/rotate` },
  { route: '/settings/api-keys/:id/revoke', name: 'settings-api-key-revoke', path: () => `${keyPath()}/revoke` },
  { route: '/settings/audit-log', name: 'settings-audit-log', path: () => '/settings/audit-log' },
  {
    route: '/settings/webhooks',
    name: 'settings-webhooks',
    path: () => '/settings/webhooks',
    check: async () => expect((await checkboxProblems(page)).checkboxes).toBeGreaterThanOrEqual(10),
  },
  {
    route: '/settings/webhooks/:id',
    name: 'settings-webhook',
    path: webhookPath,
    check: async () => expect(await page.locator('caption', { hasText: 'Attempts to send' }).count()).toBeGreaterThan(0),
  },
  { route: '/settings/webhooks/:id/rotate', name: 'settings-webhook-rotate', path: () => `${webhookPath()}/rotate` },
  { route: '/settings/webhooks/:id/delete', name: 'settings-webhook-delete', path: () => `${webhookPath()}/delete` },
  {
    route: '/loads/:ref',
    name: 'not-found',
    path: () => '/loads/NO-SUCH-LOAD',
    check: async () => {
      expect(await heading()).toBe('Not found');
      // The browser logs the 404 it was answered: expected here, so not counted at the end.
      await expect.poll(() => consoleErrors.findIndex((e) => e.includes('404'))).toBeGreaterThanOrEqual(0);
      consoleErrors.splice(
        consoleErrors.findIndex((e) => e.includes('404')),
        1,
      );
    },
  },
];

/** Routes that answer with something other than a page of their own. */
const NOT_PAGES: Record<string, string> = {
  '/settings': 'redirects to /settings/integrations',
  '/imports/:id/errors': 'a download (NDJSON)',
};

describe.skipIf(!CHROMIUM_PRESENT && !BROWSER_REQUIRED)('every dashboard page fits a laptop and a phone', () => {
  it('first run: Create your organization, then TMS Integrations before the integration is connected', async () => {
    await page.goto(`${base}/`);
    expect(await heading()).toBe('Create your organization');
    // Checked at the end: every later page needs the organization this test makes and fills.
    const firstRun = await problemsAtBothWidths('first-run');
    await page.locator('#f-setup_code').fill((await t.services.accounts.setupCode())!);
    await page.locator('#f-organization_name').fill(OWNER.organization);
    await page.locator('#f-name').fill(OWNER.name);
    await page.locator('#f-email').fill(OWNER.email);
    await page.locator('#f-password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(`${base}/settings/integrations?done=welcome`);
    const notConnected = await problemsAtBothWidths('settings-integrations-not-connected');
    await page.getByRole('button', { name: 'Add Integration' }).click();
    await page.waitForURL(`${base}/settings/api-keys?done=connected`);
    const user = await t.services.accounts.verifyCredentials(OWNER.email, OWNER.password);
    await seedOrganization(user!.org_id);
    expect({ firstRun, notConnected }).toEqual({ firstRun: [], notConnected: [] });
  }, 120_000);

  for (const visit of PAGES) {
    it(`${visit.name} (${visit.route})`, async () => {
      await page.goto(`${base}${visit.path()}`);
      await visit.check?.();
      expect(await problemsAtBothWidths(visit.name)).toEqual([]);
    });
  }

  it('the page that shows a new key once, after creating it with the form', async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.getByLabel('Name', { exact: true }).fill('Carrier onboarding portal for the Houston and San Antonio offices');
    await page.getByLabel('External system', { exact: true }).fill('Onboarding portal');
    await page.getByRole('checkbox', { name: /read:carriers/ }).check();
    await page.getByRole('checkbox', { name: /Strict handling/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    expect(await problemsAtBothWidths('settings-api-key-new')).toEqual([]);
  });

  it('the routes that are not pages: the settings redirect and the download of refused rows', async () => {
    await page.goto(`${base}/settings`);
    expect(page.url()).toBe(`${base}/settings/integrations`);
    const download = await page.request.get(`${base}/imports/${ids.importWithErrors}/errors`);
    expect(download.status()).toBe(200);
    expect(download.headers()['content-type']).toMatch(/^application\/x-ndjson/);
    expect((await download.text()).trim().split('\n')).toHaveLength(1);
  });

  it('sign-in, after signing out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).first().click();
    await page.waitForURL(`${base}/signin?done=signed-out`);
    expect(await problemsAtBothWidths('signin')).toEqual([]);
  });

  it('visited every page the dashboard registers', () => {
    const visited = new Set([...PAGES.map((v) => v.route), '/', '/signin', '/settings/api-keys', ...Object.keys(NOT_PAGES)]);
    expect(dashboardPageRoutes(t).filter((route) => !visited.has(route))).toEqual([]);
  });

  it('made no request outside the server and broke no Content-Security-Policy rule', () => {
    expect(outsideRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});

/** GET routes that are not the dashboard's: the API, its documentation, the stylesheet and script, the probes. */
const NOT_DASHBOARD = [/^\/v2\//, /^\/docs/, /^\/assets\//, /^\/(healthz|readyz|metrics)$/];

/**
 * The dashboard's GET routes, read from the router (`printRoutes` draws its tree: each line is a
 * route, its path the parent's path followed by the line's own part), so a page added later is
 * checked here without anyone listing it.
 */
function dashboardPageRoutes(app: TestApp): string[] {
  const paths: string[] = [];
  const byDepth: string[] = [];
  for (const line of app.app.printRoutes({ method: 'GET', commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (.*?) \(GET\b/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    byDepth[depth] = (depth > 0 ? byDepth[depth - 1]! : '') + m[2]!;
    paths.push(byDepth[depth]!);
  }
  expect(paths).toContain('/loads/:ref');
  return paths.filter((path) => !NOT_DASHBOARD.some((re) => re.test(path)));
}
