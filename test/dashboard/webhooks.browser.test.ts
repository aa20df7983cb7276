import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { startApp, uid, type TestApp } from '../helpers.js';
import { startReceiver, type Receiver } from '../modules/webhooks/support.js';
import { checkPageStructure, chromiumReady, CHROMIUM, CHROMIUM_PRESENT, BROWSER_REQUIRED, LAUNCH_ARGS } from './support.js';

/**
 * Settings → Webhooks end to end in headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against a listening server and a real receiver on 127.0.0.1: add an endpoint (secret shown once, copy
 * button), send a test event, see deliveries in the log, replay, rotate, disable and enable, the notice of
 * an endpoint disabled automatically (410), delete.
 */
const OWNER = { email: 'webhooks@lonestar.example', name: 'Wes Hooks', password: 'webhook browser password' };

let t: TestApp;
let rx: Receiver;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let apiKey = '';
let orgId = '';
const consoleErrors: string[] = [];

beforeAll(async () => {
  if (!chromiumReady('webhook dashboard browser tests')) return;
  t = await startApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
  rx = await startReceiver();
  const org = await t.services.accounts.createOrganization(`Webhook Browser ${uid('O')}`);
  orgId = org.id;
  await t.services.accounts.createUser(org.id, OWNER);
  apiKey = (await t.services.accounts.createKey(org.id, { name: 'browser', externalSystem: 'vitest', scopes: [...SCOPES] })).key;
  base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await rx?.close();
  await t?.close();
});

async function createCustomer(name: string) {
  const res = await fetch(`${base}/v2/tms-api/customers`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ external_reference_id: uid('C'), name }),
  });
  expect(res.status).toBe(201);
}

describe.skipIf(!CHROMIUM_PRESENT && !BROWSER_REQUIRED)('Settings → Webhooks in Chromium', () => {
  let secret = '';
  let endpointPath = '';

  it('adds an endpoint: URL, event types as checkboxes, description; the secret is shown once with a copy button', async () => {
    await page.goto(`${base}/signin`);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/`);
    await page.goto(`${base}/settings/api-keys`);
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(`${base}/settings/webhooks`);
    await checkPageStructure(page);
    expect(await page.getByText('No endpoints yet.').count()).toBe(1);

    // A URL that is not one: the form says so, next to the field.
    await page.getByLabel('Endpoint URL').fill('not a url');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    expect(await page.locator('#f-url-error').textContent()).toBe('Input should be a valid URL');

    await page.getByLabel('Endpoint URL').fill(rx.url);
    await page.getByLabel('customer.created').check();
    await page.getByLabel('customer.updated').check();
    await page.getByLabel('Description').fill('Our TMS inbox');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Webhook endpoint added');
    await checkPageStructure(page);
    secret = await page.getByLabel(/^Signing secret for/).inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await expect.poll(() => page.locator('#copy-status').textContent()).toBe('Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await page.getByRole('link', { name: 'I have copied the secret' }).click();
    await page.waitForURL(/\/settings\/webhooks\/whe_[0-9a-z]+$/);
    endpointPath = new URL(page.url()).pathname;
    expect(await page.locator('dl.facts').textContent()).toContain('customer.created, customer.updated');
    // Shown once: no page shows it again.
    expect(await page.content()).not.toContain(secret);
    await page.goto(`${base}/settings/webhooks`);
    expect(await page.content()).not.toContain(secret);
    expect(await page.locator('tbody tr').first().textContent()).toContain('Our TMS inbox');
  });

  it('sends a test event that verifies with the same signature scheme', async () => {
    await page.goto(`${base}${endpointPath}`);
    await checkPageStructure(page);
    await page.getByRole('button', { name: 'Send test event' }).click();
    const status = await page.getByRole('status').first().textContent();
    expect(status).toMatch(/Test event evt_[0-9a-z]+ delivered: HTTP 200 in \d+ ms\./);
    const r = rx.received.at(-1)!;
    expect(new Webhook(secret).verify(r.body, r.headers)).toMatchObject({
      type: 'webhook.test',
      sequence: 0,
      data: { endpoint_id: endpointPath.split('/').pop() },
    });
    expect(await page.locator('table tbody tr').first().textContent()).toContain('webhook.test');
  });

  it('shows deliveries in the log and replays from a sequence', async () => {
    await createCustomer('Browser Freight');
    await t.webhooks.worker.drain();
    const delivered = rx.received.at(-1)!;
    expect(JSON.parse(delivered.body)).toMatchObject({ type: 'customer.created', data: { name: 'Browser Freight' } });
    await page.goto(`${base}${endpointPath}`);
    const row = page.locator('table tbody tr').first();
    expect(await row.textContent()).toContain('customer.created');
    expect(await row.textContent()).toContain('Delivered');
    expect(await row.textContent()).toContain('200');

    const sequence = JSON.parse(delivered.body).sequence as number;
    await page.getByLabel('Send again every event after sequence').fill(String(sequence - 1));
    await page.getByRole('button', { name: 'Replay events' }).click();
    expect(await page.getByRole('status').first().textContent()).toContain('1 event queued for delivery again.');
    await t.webhooks.worker.drain();
    expect(rx.received.at(-1)!.headers['webhook-id']).toBe(delivered.headers['webhook-id']);
    await page.getByLabel('Send again every event after sequence').fill('-3');
    await page.getByRole('button', { name: 'Replay events' }).click();
    expect(await page.locator('#f-after_sequence-error').textContent()).toBe('Enter a sequence number: 0 or more.');
  });

  it('rotates the secret (shown once), disables and enables', async () => {
    await page.goto(`${base}${endpointPath}`);
    await page.getByRole('link', { name: 'Rotate secret…' }).click();
    await checkPageStructure(page);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await page.getByLabel(/^Signing secret for/).inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await page.getByRole('link', { name: 'I have copied the secret' }).click();
    expect(await page.locator('dl.facts').textContent()).toContain('the previous secret also signs until');
    await createCustomer('Rotated Browser');
    await t.webhooks.worker.drain();
    const r = rx.received.at(-1)!;
    expect(r.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(rotated).verify(r.body, r.headers)).toMatchObject({ data: { name: 'Rotated Browser' } });
    expect(new Webhook(secret).verify(r.body, r.headers)).toMatchObject({ data: { name: 'Rotated Browser' } });
    secret = rotated;

    await page.getByRole('button', { name: 'Disable' }).click();
    expect(await page.getByRole('status').first().textContent()).toContain('The endpoint is disabled.');
    expect(await page.locator('dl.facts').textContent()).toContain('Disabled');
    await page.getByRole('button', { name: 'Enable' }).click();
    expect(await page.getByRole('status').first().textContent()).toContain('The endpoint is enabled.');
  });

  it('says when an endpoint was disabled automatically (the receiver answered 410)', async () => {
    rx.answer = () => ({ status: 410 });
    try {
      await createCustomer('Gone Browser');
      await t.webhooks.worker.drain();
    } finally {
      rx.answer = () => ({ status: 200 });
    }
    await page.goto(`${base}/settings/webhooks`);
    const alert = page.getByRole('alert');
    expect(await alert.textContent()).toContain('An endpoint was disabled automatically.');
    expect(await alert.textContent()).toContain('The receiver answered 410 Gone');
    expect(await page.locator('tbody tr').first().textContent()).toContain('Disabled automatically');
    await page.goto(`${base}${endpointPath}`);
    expect(await page.getByRole('alert').textContent()).toContain('Disabled automatically.');
    const [overview] = await t.webhooks.service.overview(orgId);
    expect(overview).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
  });

  it('deletes the endpoint after a confirmation', async () => {
    await page.goto(`${base}${endpointPath}`);
    await page.getByRole('link', { name: 'Delete…' }).click();
    // The confirmation page, once loaded (a click does not wait for the navigation it starts).
    await page.waitForURL(`${base}${endpointPath}/delete`);
    await checkPageStructure(page);
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.waitForURL(`${base}/settings/webhooks?done=deleted`);
    expect(await page.getByRole('status').first().textContent()).toContain('The endpoint is deleted');
    expect(await page.getByText('No endpoints yet.').count()).toBe(1);
    expect(await t.webhooks.service.overview(orgId)).toEqual([]);
    // The two refused forms (422) are logged by Chromium as failed loads; nothing else may be.
    expect(
      consoleErrors.filter((e) => !e.includes('status of 422')),
      consoleErrors.join('\n'),
    ).toEqual([]);
  });
});
