import { describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, apiPost, csrfOf, orgWithUser } from './support.js';

let now = Date.now();
const t = useDashboardApp({
  clock: { now: () => new Date(now) },
  // A quicker throttle than production's, so the test can see it without waiting seconds.
  dashboard: { signInThrottle: { freeFailures: 1, baseDelayMs: 500, maxDelayMs: 1000, maxQueued: 2 } },
});

const PAGES = [
  '/',
  '/loads',
  '/loads/ANY',
  '/locations',
  '/carriers',
  '/customers',
  '/lanes',
  '/events',
  '/users',
  '/settings',
  '/settings/integrations',
  '/settings/api-keys',
  '/signout',
];

const keyIdIn = (body: string) => /\/settings\/api-keys\/(key_[0-9a-z]+)\/revoke/.exec(body)?.[1];

async function signedIn(opts: { connect?: boolean } = {}) {
  const o = await orgWithUser(t, opts);
  const v = new Visitor(t);
  await v.signIn(o.email, o.password);
  return { ...o, v };
}

describe('sessions', () => {
  it('every page needs a signed-in user (GET goes to sign-in and back, POST is refused)', async () => {
    await orgWithUser(t); // an organization exists, so `/` is not the first run
    const v = new Visitor(t);
    for (const path of PAGES) {
      const res = await v.get(path);
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location, path).toMatch(/^\/signin/);
    }
    expect((await v.get('/loads?status=open')).headers.location).toBe('/signin?next=%2Floads%3Fstatus%3Dopen');
    for (const path of ['/settings/integrations', '/settings/api-keys', '/users', '/settings/api-keys/key_x/revoke']) {
      const res = await v.post(path, { _csrf: 'x', name: 'n' });
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location).toBe('/signin');
    }
    // A forged or unsigned session cookie is no session.
    v.cookies.set('lb_session', 'made-up-token');
    expect((await v.get('/users')).statusCode).toBe(303);
  });

  it('sign-in returns to the page asked for, but never to another site', async () => {
    const o = await orgWithUser(t);
    const v = new Visitor(t);
    const form = await v.get('/signin?next=%2Fcarriers');
    expect(form.body).toContain('name="next" value="/carriers"');
    const res = await v.post('/signin', { _csrf: csrfOf(form.body), email: o.email, password: o.password, next: '/carriers' });
    expect(res.headers.location).toBe('/carriers');
    for (const next of ['//evil.example/x', 'https://evil.example', '/\\evil.example']) {
      const w = new Visitor(t);
      const f = await w.get('/signin');
      const r = await w.post('/signin', { _csrf: csrfOf(f.body), email: o.email, password: o.password, next });
      expect(r.headers.location, next).toBe('/');
    }
  });

  it('sign-out ends the session everywhere: the old cookie is worthless', async () => {
    const { v } = await signedIn();
    const copied = new Map(v.cookies);
    const out = await v.submit('/signout', '/signout', {});
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/signin?done=signed-out');
    const replay = new Visitor(t);
    for (const [k, val] of copied) replay.cookies.set(k, val);
    expect((await replay.get('/users')).statusCode).toBe(303);
  });

  it('a session ends after two idle hours, and twelve hours after sign-in in any case', async () => {
    const { v } = await signedIn();
    now += 90 * 60_000;
    expect((await v.get('/users')).statusCode).toBe(200);
    now += 2 * 3_600_000 + 60_000;
    expect((await v.get('/users')).statusCode).toBe(303);

    const { v: w } = await signedIn();
    for (let i = 0; i < 13; i++) {
      now += 3_600_000;
      const res = await w.get('/users');
      expect(res.statusCode, `hour ${i + 1}`).toBe(i < 11 ? 200 : 303);
    }
  });
});

describe('CSRF', () => {
  it('every POST form carries the session token; a missing, wrong or cross-site one gets the 403 page', async () => {
    const { v, orgId } = await signedIn();
    const page = await v.get('/users');
    const token = csrfOf(page.body);
    const { v: other } = await signedIn();
    const otherToken = csrfOf((await other.get('/users')).body);
    const user = { name: 'Carl', email: `carl-${Math.random()}@example.com` };
    for (const [label, form, headers] of [
      ['missing', user, {}],
      ['wrong', { ...user, _csrf: 'x'.repeat(43) }, {}],
      ["another session's", { ...user, _csrf: otherToken }, {}],
      ['cross-site', { ...user, _csrf: token }, { 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      const res = await v.post('/users', form, headers);
      expect(res.statusCode, label).toBe(403);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.body).toContain('Form expired');
    }
    for (const action of ['/settings/integrations', '/settings/api-keys', '/signout']) {
      expect((await v.post(action, {})).statusCode, action).toBe(403);
    }
    expect((await t.services.accounts.listUsers(orgId)).some((u) => u.name === 'Carl')).toBe(false);
    const ok = await v.post('/users', { ...user, _csrf: token });
    expect(ok.statusCode).toBe(303);
  });

  it('sign-in form too (login CSRF)', async () => {
    const o = await orgWithUser(t);
    const v = new Visitor(t);
    expect((await v.post('/signin', { email: o.email, password: o.password })).statusCode).toBe(403);
    await v.get('/signin');
    expect((await v.post('/signin', { email: o.email, password: o.password, _csrf: 'guess' })).statusCode).toBe(403);
  });
});

describe('security headers', () => {
  it('pages send CSP without inline scripts, frame and sniffing protection, no-store', async () => {
    const { v } = await signedIn();
    for (const path of ['/', '/loads', '/settings/api-keys', '/signin']) {
      const res = await (path === '/signin' ? new Visitor(t).get(path) : v.get(path));
      const csp = String(res.headers['content-security-policy']);
      expect(csp, path).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('same-origin');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).not.toMatch(/<script>|<style|style="|https?:\/\/(?!127)/);
    }
    const css = await v.get('/assets/dashboard.css');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/text\/css/);
    expect(css.body).toContain(':focus-visible');
  });

  it('leaves the API as it was: JSON errors, no dashboard headers, no form bodies', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
    expect(res.headers['content-security-policy']).toBeUndefined();
    const o = await orgWithUser(t);
    const form = await t.app.inject({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { 'x-api-key': o.key!, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'external_reference_id=C1&name=Acme',
    });
    expect(form.statusCode).toBe(415);
    const doc = await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' });
    expect(Object.keys(doc.json().paths).every((p: string) => p.startsWith('/v2/tms-api'))).toBe(true);
  });
});

describe('escaping', () => {
  it('hostile data from the API is shown as text on every page', async () => {
    const { v, key } = await signedIn();
    const evil = '<script>alert(1)</script>';
    const attr = '" onmouseover="alert(2)';
    expect((await apiPost(t, key!, '/v2/tms-api/customers', { external_reference_id: 'C<1>', name: evil, domain: attr })).statusCode).toBe(201);
    expect(
      (
        await apiPost(t, key!, '/v2/tms-api/carriers', {
          external_reference_id: 'K"1',
          name: evil,
          dot_number: attr,
          contacts: [{ first_name: evil, primary_email: attr }],
        })
      ).statusCode,
    ).toBe(201);
    for (const [ref, lat] of [
      ['L<a>', 32.7767],
      ['L<b>', 29.7604],
    ] as const) {
      expect(
        (
          await apiPost(t, key!, '/v2/tms-api/locations', {
            external_reference_id: ref,
            name: evil,
            latitude: lat,
            longitude: -96.8,
            city: attr,
            weekday_open_hours: '08:00',
          })
        ).statusCode,
      ).toBe(201);
    }
    const load = await apiPost(t, key!, '/v2/tms-api/loads', {
      external_reference_id: `R"><img src=x onerror=alert(3)>`,
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'C<1>',
      description: evil,
      sales_rep: { name: evil, email: attr },
      stops: [
        { stop_type: 'Pickup', location_external_reference_id: 'L<a>', early_arrival: '2026-01-05T14:00:00Z', late_arrival: '2026-01-05T16:00:00Z' },
        { stop_type: 'Delivery', location_external_reference_id: 'L<b>', early_arrival: '2026-01-06T14:00:00Z', late_arrival: '2026-01-06T16:00:00Z' },
      ],
    });
    expect(load.statusCode, load.body).toBe(201);
    const loadUrl = `/loads/${encodeURIComponent(`R"><img src=x onerror=alert(3)>`)}`;
    const searchUrl = `/loads?q=${encodeURIComponent('"><script>alert(4)</script>')}`;
    for (const path of ['/customers', '/carriers', '/locations', '/loads', loadUrl, searchUrl, '/customers?q=%3Cscript%3E', '/events']) {
      const res = await v.get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.body, path).not.toContain('<script>alert');
      expect(res.body, path).not.toContain('<img src=x');
      expect(res.body, path).not.toContain('" onmouseover="alert(2)');
    }
    const customers = await v.get('/customers');
    expect(customers.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(customers.body).toContain('&quot; onmouseover=&quot;alert(2)');
    const loadPage = await v.get(loadUrl);
    expect(loadPage.body).toContain('R&quot;&gt;&lt;img src=x onerror=alert(3)&gt;');
    expect(loadPage.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');

    // Names typed into the dashboard are escaped too.
    await v.submit('/settings/api-keys', '/settings/api-keys', { name: evil, external_system: attr, scopes: ['read:loads'], per_minute: '10', per_day: '100' });
    const keys = await v.get('/settings/api-keys');
    expect(keys.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(keys.body).not.toContain('<script>alert');
  });
});

describe('events page', () => {
  it('lists the change feed newest first, filters by type, shows each event’s data, and pages to older events', async () => {
    const { v, key } = await signedIn();
    const empty = await v.get('/events');
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain('No events yet');
    for (let i = 0; i < 52; i++)
      expect((await apiPost(t, key!, '/v2/tms-api/customers', { external_reference_id: `EV-${i}`, name: `Customer ${i}` })).statusCode).toBe(201);
    const res = await apiPost(t, key!, '/v2/tms-api/carriers', { external_reference_id: 'EV-CAR', name: 'Evented Carrier' });
    expect(res.statusCode).toBe(201);
    const first = await v.get('/events');
    expect(first.statusCode).toBe(200);
    const rows = [...first.body.matchAll(/<tr><td class="num">(\d+)<\/td>.*?<code>([a-z_.]+)<\/code><\/td><td>(?:<a [^>]*>)?([^<]*)(?:<\/a>)?<\/td>/gs)].map(
      (m) => [Number(m[1]), m[2], m[3]],
    );
    expect(rows).toHaveLength(50);
    expect(rows[0]).toEqual([53, 'carrier.created', 'EV-CAR']);
    expect(rows[1]).toEqual([52, 'customer.created', 'EV-51']);
    // The data as the feed carries it, escaped for HTML.
    expect(first.body).toContain('<summary>View data</summary>');
    expect(first.body).toContain('&quot;name&quot;: &quot;Evented Carrier&quot;');
    const older = /href="(\/events\?before=\d+)" rel="next">Older events/.exec(first.body);
    expect(older?.[1]).toBe('/events?before=4');
    const second = await v.get(older![1]!);
    expect([...second.body.matchAll(/<tr><td class="num">(\d+)<\/td>/g)].map((m) => Number(m[1]))).toEqual([3, 2, 1]);
    expect(second.body).not.toContain('Older events');
    const carriersOnly = await v.get('/events?type=carrier.created');
    expect([...carriersOnly.body.matchAll(/<code>([a-z_.]+)<\/code><\/td>/g)].map((m) => m[1])).toEqual(['carrier.created']);
    expect((await v.get('/events?type=load.deleted')).body).toContain('No events of this type yet.');
  });
});

describe('tenant isolation', () => {
  it("a user sees only their organization's data and cannot act on another's keys", async () => {
    const a = await signedIn();
    const b = await signedIn();
    for (const [o, name] of [
      [a, 'Alpha Customer'],
      [b, 'Bravo Customer'],
    ] as const) {
      expect((await apiPost(t, o.key!, '/v2/tms-api/customers', { external_reference_id: 'SAME-REF', name })).statusCode).toBe(201);
      expect((await apiPost(t, o.key!, '/v2/tms-api/carriers', { external_reference_id: 'SAME-CAR', name: `${name} Carrier` })).statusCode).toBe(201);
      for (const ref of ['LA', 'LB']) {
        expect(
          (
            await apiPost(t, o.key!, '/v2/tms-api/locations', {
              external_reference_id: ref,
              name: `${name} ${ref}`,
              latitude: ref === 'LA' ? 32.8 : 29.8,
              longitude: -96,
            })
          ).statusCode,
        ).toBe(201);
      }
    }
    expect(
      (
        await apiPost(t, b.key!, '/v2/tms-api/loads', {
          external_reference_id: 'BRAVO-ONLY',
          equipment_type: 'DRY_VAN',
          transport_mode: 'FTL',
          customer_external_reference_id: 'SAME-REF',
          stops: [
            { stop_type: 'Pickup', location_external_reference_id: 'LA', early_arrival: '2026-01-05T14:00:00Z', late_arrival: '2026-01-05T16:00:00Z' },
            { stop_type: 'Delivery', location_external_reference_id: 'LB', early_arrival: '2026-01-06T14:00:00Z', late_arrival: '2026-01-06T16:00:00Z' },
          ],
        })
      ).statusCode,
    ).toBe(201);

    for (const path of ['/customers', '/carriers', '/locations', '/loads', '/users', '/settings/api-keys', '/', '/loads?q=BRAVO']) {
      const body = (await a.v.get(path)).body;
      expect(body, path).not.toContain('Bravo');
      expect(body, path).not.toContain(b.email);
    }
    expect((await a.v.get('/customers')).body).toContain('Alpha Customer');
    expect((await a.v.get('/loads/BRAVO-ONLY')).statusCode).toBe(404);
    expect((await b.v.get('/loads/BRAVO-ONLY')).statusCode).toBe(200);

    // Bravo's key, addressed through Alpha's session: not found, and it keeps working.
    const bKeyId = keyIdIn((await b.v.get('/settings/api-keys')).body)!;
    expect(bKeyId).toMatch(/^key_/);
    const token = csrfOf((await a.v.get('/settings/api-keys')).body);
    for (const action of ['revoke', 'rotate', 'limits']) {
      expect((await a.v.get(`/settings/api-keys/${bKeyId}/${action}`)).statusCode, action).toBe(404);
      expect((await a.v.post(`/settings/api-keys/${bKeyId}/${action}`, { _csrf: token, per_minute: '1', per_day: '1' })).statusCode, action).toBe(404);
    }
    const stillWorks = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': b.key! } });
    expect(stillWorks.statusCode).toBe(200);
    expect((await t.services.accounts.getKey(b.orgId, bKeyId)).per_minute).not.toBe(1);
  });
});

describe('sign-in', () => {
  it('always answers failures with the same message, and slows repeated failures per email and address', async () => {
    const o = await orgWithUser(t);
    const noPassword = `nopass-${Math.random()}@example.com`;
    await t.services.accounts.createUser(o.orgId, { email: noPassword, name: 'Matched Only' });
    const attempt = async (v: Visitor, email: string, password: string) => {
      const form = await v.get('/signin');
      const started = performance.now();
      const res = await v.post('/signin', { _csrf: csrfOf(form.body), email, password });
      return { res, ms: performance.now() - started };
    };
    const messages = new Set<string>();
    for (const [email, password] of [
      [o.email, 'wrong password'],
      ['nobody@example.com', 'whatever'],
      [noPassword, 'anything'],
      [o.email, ''],
    ]) {
      const { res } = await attempt(new Visitor(t, `10.0.0.${Math.floor(Math.random() * 250)}`), email!, password!);
      expect(res.statusCode).toBe(401);
      messages.add(/<div class="notice error" role="alert"><p>([^<]+)<\/p>/.exec(res.body)?.[1] ?? 'none');
      expect(res.body).toContain(`value="${email}"`);
    }
    expect([...messages]).toEqual(['Email or password is incorrect.']);

    // freeFailures 1, base 500 ms: the 2nd attempt is free, the 3rd waits 500 ms, the 4th 1 s (the maximum here).
    // "Fast" below means well under the smallest delay: scrypt and a loaded machine take some time too.
    const FAST = 450;
    const v = new Visitor(t, '10.9.9.9');
    const times: number[] = [];
    for (let i = 0; i < 4; i++) times.push((await attempt(v, o.email, `wrong ${i}`)).ms);
    expect(times[2]!).toBeGreaterThanOrEqual(490);
    expect(times[3]!).toBeGreaterThanOrEqual(990);
    // Another address, or another email from this one, is not slowed by these failures.
    expect((await attempt(new Visitor(t, '10.9.9.10'), o.email, 'wrong')).ms).toBeLessThan(FAST);
    expect((await attempt(new Visitor(t, '10.9.9.9'), 'someone-else@example.com', 'wrong')).ms).toBeLessThan(FAST);
    // The right password still works (after the wait), and success clears the failures.
    const ok = await attempt(v, o.email, o.password);
    expect(ok.res.statusCode).toBe(303);
    expect(ok.ms).toBeGreaterThanOrEqual(990);
    expect((await attempt(new Visitor(t, '10.9.9.9'), o.email, 'wrong again')).ms).toBeLessThan(FAST);

    // Parallel attempts queue behind each other (so parallelism gains nothing); beyond the queue of 2
    // they are refused at once, with the same answer.
    const w = new Visitor(t, '10.8.8.8');
    for (let i = 0; i < 2; i++) await attempt(w, o.email, `wrong ${i}`);
    const forms = await Promise.all([0, 1, 2, 3].map(() => new Visitor(t, '10.8.8.8')).map(async (x) => ({ x, form: await x.get('/signin') })));
    const started = performance.now();
    const results = await Promise.all(
      forms.map(async ({ x, form }) => {
        const res = await x.post('/signin', { _csrf: csrfOf(form.body), email: o.email, password: 'wrong' });
        return { res, ms: performance.now() - started };
      }),
    );
    expect(results.every(({ res }) => res.statusCode === 401 && res.body.includes('Email or password is incorrect.'))).toBe(true);
    const slowest = results.map((r) => r.ms).sort((a, b) => a - b);
    expect(slowest[3]!).toBeGreaterThanOrEqual(1490); // 500 ms, then 1 s, one after the other
  });
});

describe('TMS integration and API keys', () => {
  it('keys can be created only after Add Integration; limits can be edited; revoke and rotate take effect at once', async () => {
    const o = await orgWithUser(t, { connect: false });
    const v = new Visitor(t);
    await v.signIn(o.email, o.password);

    const before = await v.get('/settings/api-keys');
    expect(before.body).toContain('API keys can be created once the TMS API integration is connected');
    expect(before.body).not.toContain('action="/settings/api-keys"');
    const refused = await v.post('/settings/api-keys', {
      _csrf: csrfOf(before.body),
      name: 'n',
      external_system: 's',
      scopes: ['read:loads'],
      per_minute: '100',
      per_day: '1000',
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain('Connect the TMS API integration before creating API keys');
    expect(await t.services.accounts.listKeys(o.orgId)).toEqual([]);

    const integrations = await v.get('/settings/integrations');
    expect(integrations.body).toContain('Not connected');
    expect(integrations.body).toContain('>Add Integration</button>');
    const connect = await v.post('/settings/integrations', { _csrf: csrfOf(integrations.body) });
    expect(connect.headers.location).toBe('/settings/api-keys?done=connected');
    expect((await v.get('/settings/integrations')).body).toContain('Connected');

    // Form problems come back with the values kept.
    const invalid = await v.submit('/settings/api-keys', '/settings/api-keys', { name: 'Sync', external_system: '', per_minute: '0', per_day: 'lots' });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.body).toContain('Choose at least one scope.');
    expect(invalid.body).toContain('Requests per minute must be a whole number');
    expect(invalid.body).toContain('value="Sync"');

    const created = await v.submit('/settings/api-keys', '/settings/api-keys', {
      name: 'Production sync',
      external_system: 'McLeod',
      scopes: ['read:customers', 'write:rates'],
      per_minute: '120',
      per_day: '5000',
    });
    expect(created.statusCode).toBe(200);
    expect(created.body).toContain('It will not be shown again');
    const key = /id="new-key"[^>]*value="(lbk_[0-9a-f]{64})"/.exec(created.body)?.[1];
    expect(key).toBeDefined();
    expect(created.body).toContain('data-copy-target="new-key"');
    const list = await v.get('/settings/api-keys');
    expect(list.body).not.toContain(key!);
    expect(list.body).toContain(key!.slice(0, 12));
    for (const text of ['Production sync', 'McLeod', 'read:customers', 'write:rates', '120 / min', '5,000 / day', 'never', 'Active'])
      expect(list.body).toContain(text);

    const api = (k: string) => t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': k } });
    expect((await api(key!)).statusCode).toBe(200);
    const keyId = keyIdIn(list.body)!;

    // Limits
    const limitsForm = await v.get(`/settings/api-keys/${keyId}/limits`);
    expect(limitsForm.body).toContain('value="120"');
    expect((await v.post(`/settings/api-keys/${keyId}/limits`, { _csrf: csrfOf(limitsForm.body), per_minute: '-1', per_day: '10' })).statusCode).toBe(422);
    const saved = await v.post(`/settings/api-keys/${keyId}/limits`, { _csrf: csrfOf(limitsForm.body), per_minute: '7', per_day: '70' });
    expect(saved.headers.location).toBe('/settings/api-keys?done=limits');
    expect((await t.services.accounts.authenticate(key!))?.perMinute).toBe(7);
    expect((await v.get('/settings/api-keys')).body).toContain('7 / min');

    // Rotate: confirmation page, then the new key once; the old key fails from the next request.
    const confirmRotate = await v.get(`/settings/api-keys/${keyId}/rotate`);
    expect(confirmRotate.body).toContain('Rotate key “Production sync”?');
    const rotated = await v.post(`/settings/api-keys/${keyId}/rotate`, { _csrf: csrfOf(confirmRotate.body) });
    const newKey = /id="new-key"[^>]*value="(lbk_[0-9a-f]{64})"/.exec(rotated.body)?.[1];
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(key);
    expect((await api(key!)).statusCode).toBe(401);
    expect((await api(newKey!)).statusCode).toBe(200);
    expect((await t.services.accounts.authenticate(newKey!))?.perMinute).toBe(7);

    // Revoke: confirmation page, then 401 at once.
    const newId = keyIdIn((await v.get('/settings/api-keys')).body)!;
    const confirmRevoke = await v.get(`/settings/api-keys/${newId}/revoke`);
    expect(confirmRevoke.body).toContain('This cannot be undone');
    const revoked = await v.post(`/settings/api-keys/${newId}/revoke`, { _csrf: csrfOf(confirmRevoke.body) });
    expect(revoked.headers.location).toBe('/settings/api-keys?done=revoked');
    expect((await api(newKey!)).statusCode).toBe(401);
    const after = await v.get('/settings/api-keys?done=revoked');
    expect(after.body).toContain('The key is revoked');
    expect(after.body).toContain('Revoked keys');
    expect(keyIdIn(after.body)).toBeUndefined(); // no revoke action left on revoked keys
  });
});

describe('users', () => {
  it('adds organization users; one with a password can sign in; duplicates are refused', async () => {
    const { v } = await signedIn();
    const email = `dispatch-${Math.random().toString(36).slice(2)}@example.com`;
    const added = await v.submit('/users', '/users', { name: 'Dana Dispatcher', email, password: 'dispatcher password' });
    expect(added.headers.location).toBe('/users?done=added');
    const list = await v.get('/users?done=added');
    expect(list.body).toContain('Dana Dispatcher');
    expect(list.body).toContain(email);
    const dup = await v.submit('/users', '/users', { name: 'Again', email: email.toUpperCase(), password: '' });
    expect(dup.statusCode).toBe(409);
    expect(dup.body).toContain('A user with this email is already in your organization (listed above).');
    const repOnly = await v.submit('/users', '/users', { name: 'Sam Sales', email: `sam-${Math.random()}@example.com` });
    expect(repOnly.statusCode).toBe(303);
    await new Visitor(t).signIn(email, 'dispatcher password');
  });

  it("an email of another organization's user: the answer says nothing about that organization (issue 26)", async () => {
    const other = await orgWithUser(t, { connect: false });
    const { v } = await signedIn();
    const refused = await v.submit('/users', '/users', { name: 'Pat Lookalike', email: other.email.toUpperCase(), password: '' });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('This email address cannot be used for a new user. Use another address for this person.');
    // Nothing of the other organization, and no word that the address exists somewhere.
    for (const leak of [other.orgName, other.orgId, other.userId, `Owner ${other.orgName.slice(4)}`, 'already', 'another organization', 'exists']) {
      expect(refused.body).not.toContain(leak);
    }
    // Nothing was added here, and the other organization's user is untouched.
    expect((await v.get('/users')).body).not.toContain(other.email);
    await new Visitor(t).signIn(other.email, other.password);
  });
});
