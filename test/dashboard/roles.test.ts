import { describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, csrfOf, orgWithUser } from './support.js';

// D17 in the dashboard: members read and change nothing; one's own password needs the current one;
// every change is in the audit log once, with who, when and from where.
const t = useDashboardApp();

/** Everything of an organization a change could touch, to compare before and after. */
async function stateOf(orgId: string) {
  const db = t.store.db;
  const [users, keys, webhooks, integration, audit] = await Promise.all([
    db.selectFrom('users').selectAll().where('org_id', '=', orgId).orderBy('id').execute(),
    db.selectFrom('api_keys').selectAll().where('org_id', '=', orgId).orderBy('id').execute(),
    db.selectFrom('webhook_endpoints').selectAll().where('org_id', '=', orgId).orderBy('id').execute(),
    db.selectFrom('tms_integrations').selectAll().where('org_id', '=', orgId).execute(),
    db.selectFrom('audit_log').selectAll().where('org_id', '=', orgId).orderBy('id').execute(),
  ]);
  return { users, keys, webhooks, integration, audit };
}

async function withMember() {
  const o = await orgWithUser(t);
  const n = Math.random().toString(36).slice(2, 8);
  const member = { email: `member-${n}@example.com`, password: `member password ${n}` };
  const created = await t.services.accounts.createUser(o.orgId, { email: member.email, name: `Mo ${n}`, password: member.password });
  expect(created.role).toBe('member');
  return { ...o, member: { ...member, id: created.id } };
}

describe('roles (D17)', () => {
  it('a member is refused 403 on every dashboard route that changes something, and nothing changes', async () => {
    const o = await withMember();
    const key = (await t.services.accounts.listKeys(o.orgId))[0]!;
    const endpoint = await t.webhooks.service.create(o.orgId, { url: 'https://93.184.216.34/hooks' });
    const ids: Record<string, string> = { '/settings/api-keys/:id': key.id, '/settings/webhooks/:id': endpoint.id, '/users/:id': o.userId };
    const v = new Visitor(t, '203.0.113.50');
    await v.signIn(o.member.email, o.member.password);
    const csrf = csrfOf((await v.get('/users')).body);

    // The table comes from the routes the dashboard registered: a new route is in it without anyone adding it.
    const routes = t.dashboardWriteRoutes;
    expect(
      routes
        .filter((r) => r.member)
        .map((r) => `${r.method} ${r.url}`)
        .sort(),
    ).toEqual(['POST /account/password', 'POST /signin', 'POST /signout']);
    const adminOnly = routes.filter((r) => !r.member);
    expect(adminOnly.length).toBeGreaterThanOrEqual(15);
    // A form as an admin would send it, so only the role can be why it is refused.
    const form = {
      _csrf: csrf,
      name: 'Eve',
      email: `eve-${o.orgId}@example.com`,
      role: 'admin',
      password: 'a password of length',
      user_id: o.userId,
      new_password: 'another long password',
      external_system: 'X',
      scopes: 'read:loads',
      per_minute: '5',
      per_day: '50',
      grace_hours: '0',
      url: 'https://93.184.216.34/other',
      status: 'disabled',
      after_sequence: '0',
      organization_name: 'Evil',
      setup_code: 'x',
    };
    const before = await stateOf(o.orgId);
    for (const r of adminOnly) {
      const url = Object.entries(ids).reduce((u, [pattern, id]) => (u.startsWith(pattern) ? u.replace(':id', encodeURIComponent(id)) : u), r.url);
      expect(url, r.url).not.toContain(':');
      const res = await t.app.inject({
        method: r.method as 'POST',
        url,
        remoteAddress: v.remoteAddress,
        payload: new URLSearchParams(form).toString(),
        headers: { cookie: v.cookieHeader, 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(res.statusCode, `${r.method} ${url}`).toBe(403);
      expect(res.body, `${r.method} ${url}`).toContain('Only an admin of your organization can change users, API keys, webhooks, imports or settings.');
    }
    expect(await stateOf(o.orgId)).toEqual(before);

    // The same forms work for the admin (one of them, to show the form above was a good one).
    const admin = new Visitor(t);
    await admin.signIn(o.email, o.password);
    const ok = await admin.post('/settings/api-keys/' + key.id + '/limits', { ...form, _csrf: csrfOf((await admin.get('/users')).body) });
    expect(ok.statusCode).toBe(303);

    // A member reads every page, without an admin's forms on it: every form that posts goes to a route a
    // member may use (their password, signing out).
    const memberPosts = routes.filter((r) => r.member).map((r) => r.url);
    for (const path of [
      '/',
      '/users',
      '/settings/api-keys',
      `/settings/api-keys/${key.id}/limits`,
      `/settings/api-keys/${key.id}/rotate`,
      `/settings/api-keys/${key.id}/revoke`,
      '/settings/webhooks',
      `/settings/webhooks/${endpoint.id}`,
      `/settings/webhooks/${endpoint.id}/rotate`,
      `/settings/webhooks/${endpoint.id}/delete`,
      '/settings/integrations',
      '/settings/recommendations',
      '/settings/audit-log',
      '/events',
      '/imports',
      '/account/password',
    ]) {
      const res = await v.get(path);
      expect(res.statusCode, path).toBe(200);
      const posts = [...res.body.matchAll(/<form[^>]*method="post"[^>]*action="([^"]+)"|<form[^>]*action="([^"]+)"[^>]*method="post"/g)].map(
        (m) => m[1] ?? m[2],
      );
      expect(
        posts.filter((a) => !memberPosts.includes(a!)),
        path,
      ).toEqual([]);
    }
    const usersPage = (await v.get('/users')).body;
    expect(usersPage).not.toContain('action="/users"');
    expect(usersPage).toContain('You are a member');
    expect((await v.get('/settings/api-keys')).body).not.toContain('action="/settings/api-keys"');
  });

  it('a member whose role changes to admin may change things from the next request on', async () => {
    const o = await withMember();
    const v = new Visitor(t);
    await v.signIn(o.member.email, o.member.password);
    const csrf = csrfOf((await v.get('/users')).body);
    expect((await v.post('/users', { _csrf: csrf, name: 'New', email: `new-${o.orgId}@example.com` })).statusCode).toBe(403);
    const admin = new Visitor(t);
    await admin.signIn(o.email, o.password);
    const made = await admin.post(`/users/${o.member.id}/role`, { _csrf: csrfOf((await admin.get('/users')).body), role: 'admin' });
    expect(made.statusCode).toBe(303);
    const added = await v.post('/users', { _csrf: csrf, name: 'New', email: `new-${o.orgId}@example.com` });
    expect(added.statusCode).toBe(303);
    // The last admin cannot be made a member: the owner steps down, the new admin cannot.
    expect((await admin.post(`/users/${o.userId}/role`, { _csrf: csrfOf((await admin.get('/users')).body), role: 'member' })).statusCode).toBe(303);
    const last = await v.post(`/users/${o.member.id}/role`, { _csrf: csrf, role: 'member' });
    expect(last.statusCode).toBe(409);
    expect(last.body).toContain('An organization needs at least one admin');
  });
});

describe('own password (D17)', () => {
  it('is changed only with the current one; an admin sets only other users’ passwords', async () => {
    const o = await withMember();
    const v = new Visitor(t);
    await v.signIn(o.member.email, o.member.password);
    const csrf = csrfOf((await v.get('/account/password')).body);
    const without = await v.post('/account/password', { _csrf: csrf, new_password: 'taken over password' });
    expect(without.statusCode).toBe(403);
    expect(without.body).toContain('Enter your current password.');
    const wrong = await v.post('/account/password', { _csrf: csrf, current_password: 'not my password', new_password: 'taken over password' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.body).toContain('Your current password is not correct.');
    // Unchanged: the old password still signs in, the new one does not.
    expect(await t.services.accounts.verifyCredentials(o.member.email, 'taken over password')).toBeNull();
    expect(await t.services.accounts.verifyCredentials(o.member.email, o.member.password)).not.toBeNull();
    const short = await v.post('/account/password', { _csrf: csrf, current_password: o.member.password, new_password: 'short' });
    expect(short.statusCode).toBe(422);
    const done = await v.post('/account/password', { _csrf: csrf, current_password: o.member.password, new_password: 'my own new password' });
    expect(done.statusCode).toBe(303);
    expect(await t.services.accounts.verifyCredentials(o.member.email, 'my own new password')).not.toBeNull();

    // The admin's "Set a password" form does not take the admin's own account.
    const admin = new Visitor(t);
    await admin.signIn(o.email, o.password);
    const self = await admin.post('/users/password', {
      _csrf: csrfOf((await admin.get('/users')).body),
      user_id: o.userId,
      new_password: 'set without the current',
    });
    expect(self.statusCode).toBe(403);
    expect(await t.services.accounts.verifyCredentials(o.email, 'set without the current')).toBeNull();
    const other = await admin.post('/users/password', {
      _csrf: csrfOf((await admin.get('/users')).body),
      user_id: o.member.id,
      new_password: 'reset by the admin',
    });
    expect(other.statusCode).toBe(303);
  });
});

describe('audit log in the dashboard (D17)', () => {
  it('records every dashboard change once, with the user, the time and the address, and lists them with filters', async () => {
    const o = await orgWithUser(t, { connect: false });
    const ip = '203.0.113.77';
    const v = new Visitor(t, ip);
    await v.signIn(o.email, o.password);
    const started = t.clock.now().toISOString();
    const csrf = () => v.get('/users').then((r) => csrfOf(r.body));
    expect((await v.post('/settings/integrations', { _csrf: await csrf() })).statusCode).toBe(303);
    expect(
      (await v.post('/users', { _csrf: await csrf(), name: 'Mo', email: `mo-${o.orgId}@example.com`, role: 'member', password: 'member password 1' }))
        .statusCode,
    ).toBe(303);
    const mo = (await t.services.accounts.listUsers(o.orgId)).find((u) => u.name === 'Mo')!;
    expect(mo.role).toBe('member');
    expect((await v.post(`/users/${mo.id}/role`, { _csrf: await csrf(), role: 'admin' })).statusCode).toBe(303);
    expect((await v.post('/users/password', { _csrf: await csrf(), user_id: mo.id, new_password: 'member password 2' })).statusCode).toBe(303);
    expect((await v.post('/account/password', { _csrf: await csrf(), current_password: o.password, new_password: 'owner password 2!' })).statusCode).toBe(303);
    const keyPage = await v.post('/settings/api-keys', {
      _csrf: await csrf(),
      name: 'TMS',
      external_system: 'McLeod',
      scopes: ['read:loads', 'read:audit'],
      per_minute: '100',
      per_day: '1000',
      expires_at: '2099-12-31',
    });
    expect(keyPage.statusCode).toBe(200);
    expect(keyPage.body).toContain('API key created');
    const key = (await t.services.accounts.listKeys(o.orgId))[0]!;
    expect(key.expires_at).toBe('2099-12-31T00:00:00.000Z');
    expect((await v.post(`/settings/api-keys/${key.id}/limits`, { _csrf: await csrf(), per_minute: '10', per_day: '100', strict: 'on' })).statusCode).toBe(303);
    expect((await t.services.accounts.listKeys(o.orgId))[0]!.strict).toBe(true);
    // The same form sent again changes nothing, and nothing is recorded.
    expect((await v.post(`/settings/api-keys/${key.id}/limits`, { _csrf: await csrf(), per_minute: '10', per_day: '100', strict: 'on' })).statusCode).toBe(303);
    const rotated = await v.post(`/settings/api-keys/${key.id}/rotate`, { _csrf: await csrf(), grace_hours: '24' });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.body).toContain('keeps working until');
    const again = await v.post(`/settings/api-keys/${key.id}/rotate`, { _csrf: await csrf(), grace_hours: '24' });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('was rotated already: rotate its replacement instead.');
    const newKey = (await t.services.accounts.listKeys(o.orgId)).find((k) => k.id !== key.id)!;
    expect((await v.post(`/settings/api-keys/${newKey.id}/revoke`, { _csrf: await csrf() })).statusCode).toBe(303);
    expect((await v.post('/settings/webhooks', { _csrf: await csrf(), url: 'https://93.184.216.34/hooks' })).statusCode).toBeLessThan(400);
    const ep = (await t.store.db.selectFrom('webhook_endpoints').select('id').where('org_id', '=', o.orgId).executeTakeFirstOrThrow()).id;
    expect((await v.post(`/settings/webhooks/${ep}/status`, { _csrf: await csrf(), status: 'disabled' })).statusCode).toBe(303);
    expect((await v.post(`/settings/webhooks/${ep}/rotate`, { _csrf: await csrf() })).statusCode).toBeLessThan(400);
    expect((await v.post(`/settings/webhooks/${ep}/delete`, { _csrf: await csrf() })).statusCode).toBe(303);

    const rows = (await t.store.db.selectFrom('audit_log').selectAll().where('org_id', '=', o.orgId).orderBy('at').orderBy('id').execute()).filter(
      (r) => r.at >= started,
    );
    expect(rows.map((r) => [r.action, r.target_type, r.target_id])).toEqual([
      ['settings.changed', 'settings', 'tms_integration'],
      ['user.created', 'user', mo.id],
      ['user.role_changed', 'user', mo.id],
      ['user.password_set', 'user', mo.id],
      ['user.password_set', 'user', o.userId],
      ['key.created', 'key', key.id],
      ['key.limits_changed', 'key', key.id],
      ['key.handling_changed', 'key', key.id],
      ['key.rotated', 'key', key.id],
      ['key.revoked', 'key', newKey.id],
      ['webhook_endpoint.created', 'webhook_endpoint', ep],
      ['webhook_endpoint.updated', 'webhook_endpoint', ep],
      ['webhook_endpoint.secret_rotated', 'webhook_endpoint', ep],
      ['webhook_endpoint.deleted', 'webhook_endpoint', ep],
    ]);
    for (const r of rows) expect(r).toMatchObject({ actor_type: 'user', actor_id: o.userId, actor_name: expect.stringMatching(/^Owner /), ip });

    // The page: newest first, filtered by kind of action and by day.
    const all = await v.get('/settings/audit-log');
    expect(all.statusCode).toBe(200);
    expect(all.body.indexOf('webhook_endpoint.deleted')).toBeLessThan(all.body.indexOf('settings.changed</code>'));
    const keysOnly = await v.get('/settings/audit-log?action=key.');
    expect(keysOnly.body).toContain('<code>key.rotated</code>');
    expect(keysOnly.body).not.toContain('<code>user.created</code>');
    expect(keysOnly.body).toContain(ip);
    const today = started.slice(0, 10);
    expect((await v.get(`/settings/audit-log?from=${today}&to=${today}&actor_type=user`)).body).toContain('<code>user.role_changed</code>');
    expect((await v.get('/settings/audit-log?to=2001-01-01')).body).toContain('No entries match these filters.');
    // A filter that cannot be applied is said; the list shows without it.
    const odd = (await v.get('/settings/audit-log?from=2026-02-30&actor_type=evil&action=%3Cscript%3E')).body;
    expect(odd).toContain('Not applied:');
    expect(odd).toContain('From “2026-02-30” is not a day (YYYY-MM-DD)');
    expect(odd).toContain('Done by “evil” is not user, key or cli');
    expect(odd).toContain('Action “&lt;script&gt;” is not one of the actions listed');
    expect(odd).not.toContain('<script>');
    expect(odd).toContain('<code>webhook_endpoint.deleted</code>');
    // Past the last page: the last page, filters kept.
    const past = await v.get('/settings/audit-log?action=key.&page=99');
    expect(past.statusCode).toBe(303);
    expect(past.headers.location).toBe('/settings/audit-log?action=key.');
  });
});
