import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers.js';
import { checkPageStructure, startDashboardApp, watchPage, chromiumReady, CHROMIUM, CHROMIUM_PRESENT, BROWSER_REQUIRED, LAUNCH_ARGS } from './support.js';

/**
 * End to end in real headless Chromium (Debian's `chromium`, driven by playwright-core) against a
 * listening server: first run, Add Integration, a key created and used, rotated and revoked, a user
 * added, and a load page with stops, hours, time zones and carrier recommendations.
 */
const ARTIFACTS = join(process.env.LANEBRIDGE_TEST_ARTIFACTS ?? join(tmpdir(), 'lanebridge-test-artifacts'), 'dashboard');

const OWNER = { org: 'Lone Star Logistics', name: 'Ada Owner', email: 'ada@lonestar.example', password: 'browser test password' };

let t: TestApp;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const outsideRequests: string[] = [];
const consoleErrors: string[] = [];

beforeAll(async () => {
  if (!chromiumReady('dashboard browser tests')) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  t = await startDashboardApp({ fresh: true });
  base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await context.newPage();
  watchPage(page, base, outsideRequests, consoleErrors);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const api = (key: string, path: string, body?: unknown) =>
  fetch(`${base}/v2/tms-api${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function seed(key: string, path: string, body: unknown) {
  const res = await api(key, path, body);
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(201);
}

async function readNewKey(): Promise<string> {
  const key = await page.getByLabel(/^API key/).inputValue();
  expect(key).toMatch(/^lbk_[0-9a-f]{64}$/);
  return key;
}

describe.skipIf(!CHROMIUM_PRESENT && !BROWSER_REQUIRED)('dashboard in Chromium', () => {
  let key = '';

  it('first run creates the organization and signs in; the sign-in page works with the keyboard', async () => {
    await page.goto(`${base}/`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Create your organization');
    await checkPageStructure(page);
    await page.getByLabel('Setup code').fill((await t.services.accounts.setupCode())!);
    await page.getByLabel('Organization name').fill(OWNER.org);
    await page.getByLabel('Your name').fill(OWNER.name);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(`${base}/settings/integrations?done=welcome`);
    expect(await page.getByRole('status').textContent()).toContain('Your organization is set up');
    expect(await page.locator('header').textContent()).toContain(`Signed in as ${OWNER.name}`);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'lb_session');
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe('Lax');

    // Sign out and back in, by keyboard only: Tab reaches the skip link first, then the form.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/signin?done=signed-out`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).toBe('solid'); // focus is visible
    await page.keyboard.press('Tab'); // brand link
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-email');
    await page.keyboard.type(OWNER.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(OWNER.password);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(OWNER.org);
    await checkPageStructure(page);
  });

  it('connects the TMS integration, then creates a key shown once with a copy button; the key works', async () => {
    await page.goto(`${base}/settings/api-keys`);
    expect(await page.getByText('API keys can be created once the TMS API integration is connected').count()).toBe(1);
    await page.getByRole('link', { name: 'Go to TMS Integrations and add the integration' }).click();
    expect(await page.getByText('Not connected').count()).toBe(1);
    await checkPageStructure(page);
    await page.getByRole('button', { name: 'Add Integration' }).click();
    await page.waitForURL(`${base}/settings/api-keys?done=connected`);
    await checkPageStructure(page);

    await page.getByLabel('Name', { exact: true }).fill('Production TMS sync');
    await page.getByLabel('External system').fill('McLeod LoadMaster');
    for (const box of await page.getByRole('checkbox').all()) await box.check();
    expect(await page.getByRole('checkbox', { name: /write:rates/ }).isChecked()).toBe(true);
    await page.getByLabel('Requests per minute').fill('100');
    await page.getByLabel('Requests per day').fill('5000');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'API key created' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('It will not be shown again');
    key = await readNewKey();
    await page.getByRole('button', { name: 'Copy key' }).click();
    await expect.poll(() => page.locator('#copy-status').textContent()).toBe('Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await checkPageStructure(page);
    await page.screenshot({ path: join(ARTIFACTS, 'api-key-created.png'), fullPage: true });

    const res = await api(key, '/customers');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { items: unknown[] }).items).toEqual([]);

    // The list shows the key without its secret part.
    await page.getByRole('link', { name: 'I have copied the key' }).click();
    const row = page.getByRole('row', { name: /Production TMS sync/ });
    expect(await row.textContent()).toContain(key.slice(0, 12));
    expect(await page.content()).not.toContain(key);
  });

  it('seeds data through the API and shows a load with stops, hours, time zones and recommendations', async () => {
    const day = 86_400_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    await seed(key, '/locations', {
      external_reference_id: 'DAL-DC',
      name: 'Dallas Distribution Center',
      city: 'Dallas',
      latitude: 32.7767,
      longitude: -96.797,
      weekday_open_hours: '08:00',
      weekday_close_hours: '17:00',
      weekend_open_hours: '09:00',
      weekend_close_hours: '13:00',
    });
    await seed(key, '/locations', {
      external_reference_id: 'DEN-WH',
      name: 'Denver Warehouse',
      city: 'Denver',
      latitude: 39.7392,
      longitude: -104.9903,
      weekday_open_hours: '06:00',
      weekday_close_hours: '22:00',
    });
    await seed(key, '/customers', { external_reference_id: 'CUST-1', name: 'Acme Retail' });
    await seed(key, '/carriers', {
      external_reference_id: 'CAR-A',
      name: 'Alamo Trucking',
      dot_number: 'DOT100001',
      contacts: [{ first_name: 'Rosa', last_name: 'Diaz', primary_email: 'rosa@alamo.example', is_primary_contact: true }],
    });
    await seed(key, '/carriers', { external_reference_id: 'CAR-B', name: 'Bluebonnet Freight', dot_number: 'DOT200002' });
    const now = Date.now();
    for (const [ref, carrier, daysAgo] of [
      ['H-1', 'CAR-A', 5],
      ['H-2', 'CAR-A', 20],
      ['H-3', 'CAR-B', 40],
    ] as const) {
      await seed(key, '/loads', {
        external_reference_id: ref,
        equipment_type: 'DRY_VAN',
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST-1',
        carrier_external_reference_id: carrier,
        status: 'DELIVERED',
        financial_rates: [{ rate_entity: 'CARRIER', amount: 1800 }],
        stops: [
          {
            stop_type: 'Pickup',
            location_external_reference_id: 'DAL-DC',
            early_arrival: iso(now - (daysAgo + 2) * day),
            late_arrival: iso(now - (daysAgo + 2) * day + 3_600_000),
          },
          {
            stop_type: 'Delivery',
            location_external_reference_id: 'DEN-WH',
            early_arrival: iso(now - daysAgo * day),
            late_arrival: iso(now - daysAgo * day + 3_600_000),
          },
        ],
      });
    }
    await seed(key, '/market-rates', {
      origin: { location_external_reference_id: 'DAL-DC' },
      destination: { location_external_reference_id: 'DEN-WH' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.5,
    });
    await seed(key, '/loads', {
      external_reference_id: 'OPEN-1',
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'CUST-1',
      description: 'Retail replenishment, 22 pallets',
      stops: [
        { stop_type: 'Pickup', location_external_reference_id: 'DAL-DC', early_arrival: '2026-03-04T14:00:00Z', late_arrival: '2026-03-04T16:00:00Z' },
        { stop_type: 'Delivery', location_external_reference_id: 'DEN-WH', early_arrival: '2026-03-05T15:00:00Z', late_arrival: '2026-03-05T18:00:00Z' },
      ],
    });

    await page.goto(`${base}/loads`);
    await checkPageStructure(page);
    await page.getByLabel('Status').selectOption('open');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/status=open/);
    expect(await page.getByRole('row').count()).toBe(2); // header + OPEN-1
    await page.getByRole('link', { name: 'OPEN-1' }).click();
    await page.waitForURL(`${base}/loads/OPEN-1`);
    await checkPageStructure(page);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain('Load OPEN-1');

    const stops = page.getByRole('table', { name: 'Stops' });
    const dallas = await stops.getByRole('row', { name: /Dallas Distribution Center/ }).textContent();
    expect(dallas).toContain('America/Chicago');
    expect(dallas).toContain('Wed, Mar 4, 2026, 08:00 CST');
    expect(dallas).toContain('08:00–17:00');
    expect(dallas).toContain('09:00–13:00');
    const denver = await stops.getByRole('row', { name: /Denver Warehouse/ }).textContent();
    expect(denver).toContain('America/Denver');
    expect(denver).toContain('Thu, Mar 5, 2026, 08:00 MST');
    expect(denver).toContain('06:00–22:00');
    expect(denver).toContain('not given');

    const summary = await page.getByRole('region', { name: 'Summary' }).textContent();
    expect(summary).toMatch(/Total distance\s*[\d,]+ mi \(estimated from the stops\)/);
    expect(summary).toMatch(/Max buy rate\s*\$[\d,]+\.\d\d \(from market rates on the lane\)/);

    const recs = page.getByRole('table', { name: 'Carrier recommendations' });
    const rows = await recs.getByRole('row').allTextContents();
    expect(rows).toHaveLength(3);
    expect(rows[1]).toContain('Alamo Trucking');
    expect(rows[1]).toContain('DOT100001');
    expect(rows[1]).toContain('$1,800.00');
    expect(rows[2]).toContain('Bluebonnet Freight');
    const scores = rows.slice(1).map((r) => Number(/\b(\d\.\d{3})\b/.exec(r)?.[1]));
    expect(scores[0]!).toBeGreaterThan(scores[1]!);
    await page.screenshot({ path: join(ARTIFACTS, 'load-page.png'), fullPage: true });

    // The other data pages show what was seeded.
    await page.getByRole('link', { name: 'Locations' }).click();
    expect(await page.getByRole('row', { name: /Dallas Distribution Center/ }).textContent()).toContain('08:00–17:00');
    await checkPageStructure(page);
    await page.getByRole('link', { name: 'Carriers' }).click();
    expect(await page.getByRole('row', { name: /Alamo Trucking/ }).textContent()).toContain('rosa@alamo.example');
    await page.getByRole('link', { name: 'Customers' }).click();
    expect(await page.getByText('Acme Retail').count()).toBe(1);
    await page.getByRole('link', { name: 'Lanes' }).click();
    const lane = await page.getByRole('row', { name: /Dry van/ }).textContent();
    expect(lane).toContain('near Dallas');
    expect(lane).toContain('near Denver');
    expect(lane).toContain('32°N–33°N, 97°W–96°W');
    await checkPageStructure(page);
    await page.screenshot({ path: join(ARTIFACTS, 'lanes.png'), fullPage: true });
  });

  it('rotates the key (old key 401, new key works) and revokes it (401)', async () => {
    await page.goto(`${base}/settings/api-keys`);
    await page.screenshot({ path: join(ARTIFACTS, 'api-keys.png'), fullPage: true });
    await page.getByRole('link', { name: 'Rotate… key Production TMS sync' }).click();
    await checkPageStructure(page);
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('heading', { name: 'API key rotated' }).waitFor();
    const rotated = await readNewKey();
    expect(rotated).not.toBe(key);
    expect((await api(key, '/customers')).status).toBe(401);
    expect((await api(rotated, '/customers')).status).toBe(200);

    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('link', { name: 'Revoke… key Production TMS sync' }).click();
    expect(await page.getByText('This cannot be undone').count()).toBe(1);
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL(`${base}/settings/api-keys?done=revoked`);
    expect((await api(rotated, '/customers')).status).toBe(401);
    expect(await page.getByRole('heading', { name: 'Revoked keys' }).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'api-keys-revoked.png'), fullPage: true });
  });

  it('adds a user, signs out, and pages then need sign-in again', async () => {
    await page.getByRole('link', { name: 'Users' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Dana Dispatcher');
    await page.getByLabel('Email').fill('dana@lonestar.example');
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.waitForURL(`${base}/users?done=added`);
    expect(await page.getByRole('row', { name: /Dana Dispatcher/ }).textContent()).toContain('dana@lonestar.example');
    await checkPageStructure(page);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin/);
    await page.goto(`${base}/loads/OPEN-1`);
    expect(page.url()).toBe(`${base}/signin?next=%2Floads%2FOPEN-1`);
  });

  it('made no request outside the server and broke no Content-Security-Policy rule', () => {
    expect(outsideRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
