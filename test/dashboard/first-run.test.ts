import { describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, csrfOf } from './support.js';

// First run needs a database without any organization: this file gets one of its own on either engine.
const t = useDashboardApp({ fresh: true });

const OWNER = { organization_name: 'Acme Freight', name: 'Ada Owner', email: 'ada@acme.example', password: 'a long enough password' };

describe('first run', () => {
  it('offers "Create your organization" while there is none, then requires sign-in', async () => {
    const v = new Visitor(t);
    const res = await v.get('/');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<h1>Create your organization</h1>');
    for (const name of ['setup_code', 'organization_name', 'name', 'email', 'password']) expect(res.body).toContain(`<label for="f-${name}">`);
    const code = (await t.services.accounts.setupCode())!;
    expect(code).toMatch(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){3}$/);
    // D17: without the setup code, or with a wrong one, the first run is refused and nothing is made.
    const noCode = await v.post('/', { ...OWNER, _csrf: csrfOf(res.body) });
    expect(noCode.statusCode).toBe(403);
    expect(noCode.body).toContain('Enter the setup code that lanebridge serve printed');
    const wrong = await v.post('/', { ...OWNER, setup_code: 'AAAA-BBBB-CCCC-DDDD', _csrf: csrfOf(res.body) });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.body).toContain('This setup code is not right');
    expect(await t.services.accounts.countOrganizations()).toBe(0);
    // The same code whatever is asked again (serve, the CLI and the page agree).
    expect(await t.services.accounts.setupCode()).toBe(code);
    // Sign-in has nothing to sign in to yet.
    expect((await v.get('/signin')).headers.location).toBe('/');

    // The form refuses a post without its token, with a wrong one, and from another site.
    expect((await v.post('/', OWNER)).statusCode).toBe(403);
    expect((await v.post('/', { ...OWNER, _csrf: 'forged' })).statusCode).toBe(403);
    const other = new Visitor(t);
    await other.get('/');
    expect((await v.post('/', { ...OWNER, _csrf: csrfOf((await other.get('/')).body) })).statusCode).toBe(403);
    expect((await v.post('/', { ...OWNER, _csrf: csrfOf(res.body) }, { 'sec-fetch-site': 'cross-site' })).statusCode).toBe(403);
    expect(await t.services.accounts.countOrganizations()).toBe(0);

    // Field problems are reported next to their fields, and nothing is created.
    const bad = await v.post('/', { _csrf: csrfOf(res.body), setup_code: code, organization_name: '', name: 'Ada', email: 'not-an-email', password: 'short' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('Enter the organization name.');
    expect(bad.body).toContain('id="f-email-error"');
    expect(bad.body).toContain('aria-invalid="true"');
    expect(bad.body).toContain('at least 10 characters');
    expect(await t.services.accounts.countOrganizations()).toBe(0);

    // Typed in lower case and without dashes, it is still the code.
    const created = await v.post('/', { ...OWNER, setup_code: code.toLowerCase().replaceAll('-', ''), _csrf: csrfOf(bad.body) });
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe('/settings/integrations?done=welcome');
    const cookie = String([created.headers['set-cookie']].flat().find((c) => String(c).startsWith('lb_session=')));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/); // plain HTTP here; DASHBOARD_COOKIE_SECURE=on forces it
    const welcome = await v.get('/settings/integrations?done=welcome');
    expect(welcome.statusCode).toBe(200);
    expect(welcome.body).toContain('Your organization is set up');
    expect(welcome.body).toContain('Signed in as Ada Owner');
    expect(await t.services.accounts.countOrganizations()).toBe(1);
    // Used once: it is gone, and the first user is the organization's admin.
    expect(await t.services.accounts.setupCode()).toBeNull();
    expect(welcome.body).toContain('Signed in as Ada Owner (admin)');

    // Afterwards `/` wants a signed-in user, and a second first run is not possible.
    const stranger = new Visitor(t);
    const again = await stranger.get('/');
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe('/signin');
    const form = await stranger.get('/signin');
    const second = await stranger.post('/', { ...OWNER, setup_code: code, email: 'eve@evil.example', _csrf: csrfOf(form.body) });
    expect(second.statusCode).toBe(303);
    expect(second.headers.location).toBe('/signin');
    expect(await t.services.accounts.countOrganizations()).toBe(1);

    // The owner can sign in again with the password set at first run.
    await new Visitor(t).signIn(OWNER.email, OWNER.password);
  });

  it('the overview shows the organization and the next step', async () => {
    const v = new Visitor(t);
    await v.signIn(OWNER.email, OWNER.password);
    const home = await v.get('/');
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain('<h1>Acme Freight</h1>');
    expect(home.body).toContain('connect the TMS API integration');
  });
});
