// Issue 45 (docs/dashboard.md, "Sessions" and "Throttled forms"): dashboard sessions end when their
// user's password changes or is reset; an admin ends a user's sessions or removes the user (keys stay,
// the audit log names who removed whom); the setup-code and own-password forms take 5 attempts a
// minute per address, and the setup form checks the code before hashing anything.
import { describe, expect, it, vi } from 'vitest';
import { hashPassword } from '../../src/modules/accounts/secrets.js';
import { cliActor } from '../../src/modules/audit/audit.js';
import { useDashboardApp, Visitor, csrfOf, orgWithUser } from './support.js';

vi.mock('../../src/modules/accounts/secrets.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/modules/accounts/secrets.js')>();
  return { ...original, hashPassword: vi.fn(original.hashPassword) };
});

const t = useDashboardApp();

let address = 0;
/** A browser of its own, from an address of its own (the throttles count per address). */
const browser = () => new Visitor(t, `10.45.0.${++address}`);

/** An organization with its admin and a member who can sign in. */
async function team() {
  const o = await orgWithUser(t);
  const memberEmail = `member-${o.orgId}@example.com`;
  const member = await t.services.accounts.createUser(o.orgId, { email: memberEmail, name: 'Mo Member', password: 'member password 1', role: 'member' });
  return { ...o, member: { ...member, password: 'member password 1' } };
}

/** Whether this browser is still signed in (a page answers; else it is sent to sign in). */
async function signedIn(v: Visitor): Promise<boolean> {
  const res = await v.get('/users');
  if (res.statusCode === 200) return true;
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe('/signin?next=%2Fusers');
  return false;
}

async function auditEntries(orgId: string, action: string) {
  const { key } = await t.services.accounts.createKey(orgId, { name: 'audit reader', externalSystem: 'vitest', scopes: ['read:audit'] });
  const res = await t.app.inject({ method: 'GET', url: `/v2/tms-api/audit-log?action=${action}`, headers: { 'x-api-key': key } });
  expect(res.statusCode).toBe(200);
  return res.json().items as { action: string; actor: unknown; target: unknown }[];
}

describe('sessions end with their password', () => {
  it("changing one's own password ends the user's other sessions, not this one", async () => {
    const o = await orgWithUser(t);
    const here = browser();
    const elsewhere = browser();
    await here.signIn(o.email, o.password);
    await elsewhere.signIn(o.email, o.password);
    const res = await here.submit('/account/password', '/account/password', { current_password: o.password, new_password: 'a brand new password' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/account/password?done=changed');
    expect((await here.get('/account/password?done=changed')).body).toContain('Your other sessions (other browsers and devices) are signed out.');
    expect(await signedIn(here)).toBe(true);
    expect(await signedIn(elsewhere)).toBe(false);
  });

  it("an admin's reset ends every session of that user; the admin's own stay", async () => {
    const o = await team();
    const admin = browser();
    await admin.signIn(o.email, o.password);
    const phone = browser();
    const laptop = browser();
    await phone.signIn(o.member.email, o.member.password);
    await laptop.signIn(o.member.email, o.member.password);
    const res = await admin.submit('/users', '/users/password', { user_id: o.member.id, new_password: 'reset by the admin' });
    expect(res.statusCode).toBe(303);
    expect((await admin.get(res.headers.location!)).body).toContain(
      'The password is set: that user can sign in with it. Their sessions have ended everywhere.',
    );
    expect(await signedIn(phone)).toBe(false);
    expect(await signedIn(laptop)).toBe(false);
    expect(await signedIn(admin)).toBe(true);
    await phone.signIn(o.member.email, 'reset by the admin');
  });
});

describe("an admin ends a user's sessions and removes users", () => {
  it('End sessions signs the user out everywhere, audited', async () => {
    const o = await team();
    const admin = browser();
    await admin.signIn(o.email, o.password);
    const member = browser();
    await member.signIn(o.member.email, o.member.password);
    const res = await admin.submit('/users', `/users/${o.member.id}/sessions/end`, {});
    expect(res.statusCode).toBe(303);
    expect((await admin.get(res.headers.location!)).body).toContain('That user is signed out everywhere: their sessions have ended.');
    expect(await signedIn(member)).toBe(false);
    expect(await auditEntries(o.orgId, 'user.sessions_ended')).toEqual([
      expect.objectContaining({
        actor: { type: 'user', id: o.userId, name: expect.stringMatching(/^Owner /) },
        target: { type: 'user', id: o.member.id, name: `Mo Member <${o.member.email}>` },
      }),
    ]);
  });

  it('Remove deletes the user and their sessions, keeps the keys, and the audit log names who removed whom', async () => {
    const o = await team();
    const admin = browser();
    await admin.signIn(o.email, o.password);
    const member = browser();
    await member.signIn(o.member.email, o.member.password);
    const res = await admin.submit('/users', `/users/${o.member.id}/remove`, {});
    expect(res.statusCode).toBe(303);
    const page = await admin.get(res.headers.location!);
    expect(page.body).toContain('The user is removed. The organization’s API keys are unchanged; the audit log records the removal.');
    expect(page.body).not.toContain(o.member.email);
    expect(await signedIn(member)).toBe(false);
    const again = await member.submit('/signin', '/signin', { email: o.member.email, password: o.member.password });
    expect(again.statusCode).toBe(401);
    expect(again.body).toContain('Email or password is incorrect.');
    // The organization's key (made before) still answers.
    expect((await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': o.key! } })).statusCode).toBe(200);
    const entries = await auditEntries(o.orgId, 'user.removed');
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'user.removed',
        actor: { type: 'user', id: o.userId, name: expect.stringMatching(/^Owner /) },
        target: { type: 'user', id: o.member.id, name: `Mo Member <${o.member.email}>` },
      }),
    ]);
    expect((await admin.get('/settings/audit-log?action=user.removed')).body).toContain(`Mo Member &lt;${o.member.email}&gt;`);
  });

  it('an admin cannot remove themselves here (409), and a member cannot remove anyone (403)', async () => {
    const o = await team();
    const admin = browser();
    await admin.signIn(o.email, o.password);
    const self = await admin.submit('/users', `/users/${o.userId}/remove`, {});
    expect(self.statusCode).toBe(409);
    expect(self.body).toContain('You cannot remove yourself: ask another admin.');
    const member = browser();
    await member.signIn(o.member.email, o.member.password);
    const refused = await member.submit('/users', `/users/${o.userId}/remove`, {});
    expect(refused.statusCode).toBe(403);
    expect((await t.services.accounts.listUsers(o.orgId)).map((u) => u.id).sort()).toEqual([o.userId, o.member.id].sort());
  });

  it('two admins removing each other at once, or demoting each other: one is refused 409, one admin is left', async () => {
    for (let round = 0; round < 10; round++) {
      const o = await orgWithUser(t);
      const second = await t.services.accounts.createUser(o.orgId, {
        email: `second-${round}-${o.orgId}@example.com`,
        name: 'Second Admin',
        password: 'second password 1',
        role: 'admin',
      });
      const removals = [t.services.accounts.removeUser(o.orgId, o.userId), t.services.accounts.removeUser(o.orgId, second.id)];
      const settled = await Promise.allSettled(removals);
      expect(settled.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = settled.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(refused.reason.message).toMatch(/is the organization's last admin and cannot be removed: make another user an admin first$/);
      const admins = await t.store.db.selectFrom('users').select('id').where('org_id', '=', o.orgId).where('role', '=', 'admin').execute();
      expect(admins).toHaveLength(1);

      const third = await t.services.accounts.createUser(o.orgId, {
        email: `third-${round}-${o.orgId}@example.com`,
        name: 'Third Admin',
        password: 'third password 1',
        role: 'admin',
      });
      const demotions = await Promise.allSettled([
        t.services.accounts.setRole(o.orgId, admins[0]!.id, 'member', cliActor()),
        t.services.accounts.setRole(o.orgId, third.id, 'member', cliActor()),
      ]);
      expect(demotions.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(await t.store.db.selectFrom('users').select('id').where('org_id', '=', o.orgId).where('role', '=', 'admin').execute()).toHaveLength(1);
    }
  });
});

describe('throttled forms: 5 attempts a minute per address', () => {
  it('the own-password form refuses the 6th attempt in a minute (429), and takes one again a minute later', async () => {
    const o = await orgWithUser(t);
    const v = browser();
    await v.signIn(o.email, o.password);
    for (let i = 0; i < 5; i++) {
      const wrong = await v.submit('/account/password', '/account/password', { current_password: `wrong guess ${i}`, new_password: 'a brand new password' });
      expect(wrong.statusCode).toBe(403);
      expect(wrong.body).toContain('Your current password is not correct.');
    }
    const sixth = await v.submit('/account/password', '/account/password', { current_password: o.password, new_password: 'a brand new password' });
    expect(sixth.statusCode).toBe(429);
    expect(sixth.headers['retry-after']).toBe('60');
    expect(sixth.body).toContain('Too many attempts from your address: wait 60 seconds and try again.');
    // Refused, so not applied: the old password still signs in.
    await browser().signIn(o.email, o.password);
    t.clock.advance(60_000);
    const later = await v.submit('/account/password', '/account/password', { current_password: o.password, new_password: 'a brand new password' });
    expect(later.statusCode).toBe(303);
  });
});

describe('first run: the setup form', () => {
  const fresh = useDashboardApp({ fresh: true });
  const OWNER = { organization_name: 'Acme Freight', name: 'Ada Owner', email: `ada-${process.pid}@acme.example`, password: 'a long enough password' };

  it('checks the code before hashing anything, and refuses the 6th attempt in a minute', async () => {
    const v = new Visitor(fresh, '10.45.1.1');
    const form = await v.get('/');
    expect(form.statusCode).toBe(200);
    const hashes = vi.mocked(hashPassword).mock.calls.length;
    for (let i = 0; i < 5; i++) {
      const wrong = await v.post('/', { ...OWNER, setup_code: 'AAAA-BBBB-CCCC-DDDD', _csrf: csrfOf(form.body) });
      expect(wrong.statusCode).toBe(403);
      expect(wrong.body).toContain('This setup code is not right');
    }
    // Five wrong codes, no password hashed (each would cost a scrypt).
    expect(vi.mocked(hashPassword).mock.calls.length).toBe(hashes);
    const code = (await fresh.services.accounts.setupCode())!;
    const sixth = await v.post('/', { ...OWNER, setup_code: code, _csrf: csrfOf(form.body) });
    expect(sixth.statusCode).toBe(429);
    expect(sixth.body).toContain('Too many attempts from your address: wait 60 seconds and try again.');
    expect(await fresh.services.accounts.countOrganizations()).toBe(0);
    fresh.clock.advance(60_000);
    const created = await v.post('/', { ...OWNER, setup_code: code, _csrf: csrfOf(form.body) });
    expect(created.statusCode).toBe(303);
    expect(vi.mocked(hashPassword).mock.calls.length).toBe(hashes + 1);
  });
});
