// Issue 45 (docs/dashboard.md, "Sessions"): bin/lanebridge user set-password ends every dashboard
// session of the user; user sessions-end and user remove do what the Users page's buttons do; an
// organization's last admin is not removed (exit 2).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers.js';
import { Visitor } from '../dashboard/support.js';

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin/lanebridge');

const t = useApp();

async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number; out: any }> {
  try {
    const { stdout, stderr } = await run(BIN, args, { env: { ...process.env, DATABASE_URL: t.config.databaseUrl, LOG_LEVEL: 'silent' } });
    return { stdout, stderr, code: 0, out: stdout.startsWith('{') ? JSON.parse(stdout) : null };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code, out: null };
  }
}

async function signedIn(v: Visitor): Promise<boolean> {
  return (await v.get('/users')).statusCode === 200;
}

describe('bin/lanebridge user: sessions and removal', () => {
  it('set-password and sessions-end sign the user out everywhere; remove keeps the last admin, removes a member, keeps the keys', async () => {
    const n = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const org = await t.services.accounts.createOrganization(`CLI Org ${n}`);
    const admin = await t.services.accounts.createUser(org.id, { email: `admin-${n}@example.com`, name: 'Ann Admin', password: 'admin password 1' });
    const member = await t.services.accounts.createUser(org.id, { email: `member-${n}@example.com`, name: 'Mo Member', password: 'member password 1' });
    const { key } = await t.services.accounts.createKey(org.id, { name: 'prod', externalSystem: 'vitest', scopes: ['read:customers', 'read:audit'] });
    const phone = new Visitor(t, '10.46.0.1');
    const laptop = new Visitor(t, '10.46.0.2');
    await phone.signIn(member.email, 'member password 1');
    await laptop.signIn(member.email, 'member password 1');

    const reset = await cli('user', 'set-password', '--email', member.email, '--password', 'member password 2');
    expect(reset.code).toBe(0);
    expect(await signedIn(phone)).toBe(false);
    expect(await signedIn(laptop)).toBe(false);

    await phone.signIn(member.email, 'member password 2');
    await laptop.signIn(member.email, 'member password 2');
    const ended = await cli('user', 'sessions-end', '--email', member.email);
    expect(ended.code).toBe(0);
    expect(ended.out).toEqual({ id: member.id, org_id: org.id, email: member.email, sessions_ended: 2 });
    expect(ended.stderr).toContain(`lanebridge: ${member.email} is signed out of the dashboard everywhere (2 sessions ended)`);
    expect(await signedIn(phone)).toBe(false);

    const lastAdmin = await cli('user', 'remove', '--email', admin.email);
    expect(lastAdmin.code).toBe(2);
    expect(lastAdmin.stdout).toBe('');
    expect(lastAdmin.stderr).toBe("lanebridge: Ann Admin is the organization's last admin and cannot be removed: make another user an admin first\n");
    expect((await t.services.accounts.listUsers(org.id)).map((u) => u.email).sort()).toEqual([admin.email, member.email].sort());

    await laptop.signIn(member.email, 'member password 2');
    const removed = await cli('user', 'remove', '--email', member.email);
    expect(removed.code).toBe(0);
    expect(removed.out).toEqual({ id: member.id, org_id: org.id, email: member.email, name: 'Mo Member', removed: true });
    expect(await signedIn(laptop)).toBe(false);
    expect((await t.services.accounts.listUsers(org.id)).map((u) => u.email)).toEqual([admin.email]);
    const unknown = await cli('user', 'remove', '--email', member.email);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`lanebridge: No user with email '${member.email}'\n`);

    // The organization's key still works, and the log names who did what to whom.
    const log = await t.app.inject({ method: 'GET', url: '/v2/tms-api/audit-log?target_id=' + member.id, headers: { 'x-api-key': key } });
    expect(log.statusCode).toBe(200);
    expect(log.json().items.map((e: any) => [e.action, e.actor.type, e.actor.id, e.target])).toEqual([
      ['user.removed', 'cli', null, { type: 'user', id: member.id, name: `Mo Member <${member.email}>` }],
      ['user.sessions_ended', 'cli', null, { type: 'user', id: member.id, name: `Mo Member <${member.email}>` }],
      ['user.password_set', 'cli', null, { type: 'user', id: member.id }],
      ['user.created', 'cli', null, { type: 'user', id: member.id }],
    ]);
  }, 120_000);

  it('documents the commands in help', async () => {
    const help = await cli('help', 'user');
    expect(help.stdout).toContain('user sessions-end --email EMAIL                 sign the user out of the dashboard everywhere');
    expect(help.stdout).toContain("user remove --email EMAIL                       remove the user (not an organization's last admin);");
  }, 60_000);
});
