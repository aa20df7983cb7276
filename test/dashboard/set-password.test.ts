import { describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, csrfOf, orgWithUser } from './support.js';

// The dashboard's path to a password (issue 18): a signed-in user sets one for a user of their own
// organization who has none (made by the CLI without --password) or forgot it.

const t = useDashboardApp();

describe('Users → Set a password', () => {
  it('lets a user made without a password sign in; refuses short passwords and other organizations’ users', async () => {
    const owner = await orgWithUser(t);
    const email = `nopw-${process.pid}-${Date.now()}@example.com`;
    const made = await t.services.accounts.createUser(owner.orgId, { email, name: 'No Password Yet' });
    await expect(new Visitor(t).signIn(email, 'a brand new password')).rejects.toThrow(/401/);

    const v = new Visitor(t);
    await v.signIn(owner.email, owner.password);
    const page = await v.get('/users');
    expect(page.body).toContain('<h2 id="set-password-title">Set a password</h2>');
    expect(page.body).toContain(`<option value="${made.id}">No Password Yet (${email})</option>`);

    const short = await v.post('/users/password', { _csrf: csrfOf(page.body), user_id: made.id, new_password: 'short' });
    expect(short.statusCode).toBe(422);
    expect(short.body).toContain('at least 10 characters');

    const stranger = await orgWithUser(t);
    const foreign = await v.post('/users/password', { _csrf: csrfOf(page.body), user_id: stranger.userId, new_password: 'taken over account' });
    expect(foreign.statusCode).toBe(422);
    expect(foreign.body).toContain('Choose a user of your organization.');
    expect((await new Visitor(t).signIn(stranger.email, stranger.password)).statusCode).toBe(303);

    expect((await v.post('/users/password', { user_id: made.id, new_password: 'a brand new password' })).statusCode).toBe(403);
    const set = await v.post('/users/password', { _csrf: csrfOf(page.body), user_id: made.id, new_password: 'a brand new password' });
    expect(set.statusCode).toBe(303);
    expect(set.headers.location).toBe('/users?done=password');
    expect((await v.get('/users?done=password')).body).toContain('The password is set');
    expect((await new Visitor(t).signIn(email, 'a brand new password')).statusCode).toBe(303);
  });
});
