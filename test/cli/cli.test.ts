import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDataStore, type DataStore } from '../../src/lib/db/index.js';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { json } from '../helpers.js';

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin/lanebridge');

let dir: string;
let databaseUrl: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-cli-'));
  databaseUrl = inject('databaseUrl') ?? join(dir, 'cli.db');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number; out: any }> {
  try {
    const { stdout, stderr } = await run(BIN, args, { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' } });
    return { stdout, stderr, code: 0, out: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code, out: null };
  }
}

async function withApp<T>(work: (app: Awaited<ReturnType<typeof buildApp>>['app']) => Promise<T>): Promise<T> {
  const store: DataStore = openDataStore(databaseUrl);
  const { app } = await buildApp({ config: { ...loadConfig({}), databaseUrl }, store, logger: false });
  try {
    return await work(app);
  } finally {
    await app.close();
    await store.close();
  }
}

describe('bin/lanebridge', () => {
  it('creates an organization, a user and keys, each printing one JSON object, and manages keys', async () => {
    const org = await cli('org', 'create', '--name', 'Acme Freight');
    expect(org.code).toBe(0);
    expect(Object.keys(org.out).sort()).toEqual(['id', 'name']);
    expect(org.out).toMatchObject({ id: expect.stringMatching(/^org_/), name: 'Acme Freight' });
    expect(org.stdout.trim().split('\n')).toHaveLength(1);

    // A member as the first user would leave the organization with no admin: refused, nothing made.
    const memberFirst = await cli('user', 'create', '--org', org.out.id, '--email', 'early@acme.test', '--name', 'Early', '--role', 'member');
    expect(memberFirst.code).toBe(2);
    expect(memberFirst.stderr).toContain('the first user of an organization is its admin (it has none yet): make this user an admin, or create an admin first');
    const user = await cli('user', 'create', '--org', org.out.id, '--email', 'ops@acme.test', '--name', 'Olive Ops', '--password', 'pw-1234567890');
    // D17: an organization's first user is its admin; the next ones are members unless --role says otherwise.
    expect(user.out).toEqual({ id: expect.stringMatching(/^user_/), email: 'ops@acme.test', name: 'Olive Ops', role: 'admin' });
    const member = await cli('user', 'create', '--org', org.out.id, '--email', 'mo@acme.test', '--name', 'Mo Member');
    expect(member.out).toMatchObject({ email: 'mo@acme.test', role: 'member' });

    const all = await cli('key', 'create', '--org', org.out.id, '--name', 'McLeod prod', '--system', 'McLeod', '--scopes', 'all');
    expect(all.out).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^lbk_[0-9a-f]{64}$/),
      scopes: [...SCOPES],
      per_minute: 100,
      per_day: 10000,
    });
    const expiring = await cli(
      'key',
      'create',
      '--org',
      org.out.id,
      '--name',
      'temp',
      '--system',
      'BI',
      '--scopes',
      'read:audit',
      '--expires-at',
      '2099-01-31',
    );
    expect(expiring.out).toMatchObject({ scopes: ['read:audit'], expires_at: '2099-01-31T00:00:00.000Z' });

    const narrow = await cli(
      'key',
      'create',
      '--org',
      org.out.id,
      '--name',
      'reader',
      '--system',
      'BI',
      '--scopes',
      'read:customers,read:carriers',
      '--per-minute',
      '20',
      '--per-day',
      '500',
    );
    expect(narrow.out).toMatchObject({ scopes: ['read:customers', 'read:carriers'], per_minute: 20, per_day: 500 });

    await withApp(async (app) => {
      const created = await app.inject({
        method: 'POST',
        url: '/v2/tms-api/customers',
        headers: { 'x-api-key': all.out.key },
        payload: { external_reference_id: 'C1', name: 'Acme' },
      });
      expect(created.statusCode).toBe(201);
      const denied = await app.inject({
        method: 'POST',
        url: '/v2/tms-api/customers',
        headers: { 'x-api-key': narrow.out.key },
        payload: { external_reference_id: 'C2', name: 'x' },
      });
      expect(json(denied).error.message).toBe('API key does not have the required scope: write:customers');
    });

    const rotated = await cli('key', 'rotate', '--org', org.out.id, '--id', all.out.id);
    expect(rotated.out).toEqual({
      id: expect.stringMatching(/^key_/),
      key: expect.stringMatching(/^lbk_[0-9a-f]{64}$/),
      old_key: { id: all.out.id, works_until: null, revoked_at: expect.any(String) },
    });
    const revoked = await cli('key', 'revoke', '--org', org.out.id, '--id', narrow.out.id);
    expect(revoked.out).toMatchObject({ id: narrow.out.id, status: 'revoked', revoked_at: expect.any(String) });

    const list = await cli('key', 'list', '--org', org.out.id);
    expect(list.out.items.map((k: any) => [k.name, k.status])).toEqual([
      ['McLeod prod', 'revoked'],
      ['temp', 'active'],
      ['reader', 'revoked'],
      ['McLeod prod', 'active'],
    ]);
    expect(list.stdout).not.toContain(all.out.key);
    expect(list.out.items[3]).toMatchObject({ id: rotated.out.id, key_prefix: rotated.out.key.slice(0, 12), per_minute: 100 });

    await withApp(async (app) => {
      const old = await app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': all.out.key } });
      expect(old.statusCode).toBe(401);
      const fresh = await app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': rotated.out.key } });
      expect(json(fresh).items.map((c: any) => c.external_reference_id)).toEqual(['C1']);
    });
  }, 120_000);

  it('explains bad input on stderr with a non-zero exit and nothing on stdout', async () => {
    const noName = await cli('org', 'create');
    expect(noName.code).toBe(2);
    expect(noName.stdout).toBe('');
    expect(noName.stderr).toContain('--name is required');
    const badScope = await cli('key', 'create', '--org', 'org_x', '--name', 'n', '--system', 's', '--scopes', 'read:everything');
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toContain("Unknown scope 'read:everything'");
    const unknownOrg = await cli('key', 'create', '--org', 'org_missing', '--name', 'n', '--system', 's', '--scopes', 'all');
    expect(unknownOrg.code).toBe(1);
    expect(unknownOrg.stderr).toContain("Organization with id 'org_missing' not found");
    const badLimit = await cli('key', 'create', '--org', 'org_x', '--name', 'n', '--system', 's', '--scopes', 'all', '--per-minute', 'lots');
    expect(badLimit.stderr).toContain('--per-minute must be a whole number');
    const past = await cli('key', 'create', '--org', 'org_x', '--name', 'n', '--system', 's', '--scopes', 'all', '--expires-at', '2001-01-01');
    expect(past.code).toBe(2);
    expect(past.stderr).toContain('expires-at must be in the future');
    const badGrace = await cli('key', 'rotate', '--org', 'org_x', '--id', 'key_x', '--grace-hours', 'soon');
    expect(badGrace.code).toBe(2);
    expect(badGrace.stderr).toContain('--grace-hours must be a whole number from 0 to 720');
    // The first run is over in this database (the test above made an organization): no code to print.
    const setupCode = await cli('setup-code');
    expect(setupCode.code).toBe(2);
    expect(setupCode.stdout).toBe('');
    expect(setupCode.stderr).toContain('already has an organization');
    const unknown = await cli('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Usage: lanebridge');
  }, 120_000);

  it('serve prints the one-time setup code on a fresh database, and setup-code prints the same (D17)', async () => {
    const fresh = join(dir, 'first-run.db');
    const server = spawn(BIN, ['serve'], { env: { ...process.env, DATABASE_URL: fresh, PORT: '0', LOG_LEVEL: 'silent' }, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      let stderr = '';
      const printed = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no setup code printed: ${stderr}`)), 90_000);
        server.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString('utf8');
          const m = /enter the setup code ([0-9A-Z]{4}(?:-[0-9A-Z]{4}){3})/.exec(stderr);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        server.on('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
      });
      expect(stderr).toContain('bin/lanebridge setup-code prints it again');
      const again = await run(BIN, ['setup-code'], { env: { ...process.env, DATABASE_URL: fresh, LOG_LEVEL: 'silent' } });
      expect(JSON.parse(again.stdout)).toEqual({ setup_code: printed });
    } finally {
      server.kill('SIGTERM');
    }
  }, 120_000);

  it('serve and worker on a port already taken: one line naming the setting, exit 1, no stack trace', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    const start = (command: string, env: Record<string, string>) =>
      run(BIN, [command], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
    try {
      const serve = await start('serve', { PORT: String(port) });
      expect(serve).toEqual({
        code: 1,
        stderr: `lanebridge: cannot listen on 127.0.0.1:${port} (listen EADDRINUSE: address already in use 127.0.0.1:${port}): set PORT to a free port, or HOST to an address of this machine\n`,
      });
      const worker = await start('worker', { WORKER_PORT: String(port) });
      expect(worker.code).toBe(1);
      expect(worker.stderr).toBe(
        `lanebridge: cannot listen on 127.0.0.1:${port} for /healthz, /readyz and /metrics (listen EADDRINUSE: address already in use 127.0.0.1:${port}): set WORKER_PORT to a free port (0: any)\n`,
      );
    } finally {
      await new Promise((r) => taken.close(r));
    }
  }, 90_000);
});
