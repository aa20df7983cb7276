/**
 * Several instances behave as one service (issue 6, point 5): two real `bin/lanebridge serve` processes
 * on different ports, started at the same moment on one fresh PostgreSQL database (so their migrations
 * race) and one Redis. Data written through one is read through the other, a per-minute limit is
 * shared, and a key revoked or rotated fails on both from the next request on.
 *
 * Runs in both suite runs (SQLite and PostgreSQL): the processes always use PostgreSQL, in a database of
 * their own that is dropped afterwards.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataStore, type DataStore } from '../../src/lib/db/index.js';
import { accountsService, type AccountsService } from '../../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { freePort } from '../fixtures.js';
import { waitFor, letTimePass } from '../helpers.js';

const run = promisify(execFile);
const BIN = join(process.cwd(), 'bin/lanebridge');
const ADMIN_URL = process.env.LANEBRIDGE_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.LANEBRIDGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const DB_NAME = `lanebridge_mi_${process.pid}_${Date.now().toString(36)}`;
const PREFIX = `lanebridge-test-mi:${process.pid}:${Date.now()}:`;
const CUSTOMERS = '/v2/tms-api/customers';

interface Instance {
  base: string;
  proc: ChildProcess;
  output: string[];
}

let databaseUrl: string;
let instances: Instance[] = [];
let store: DataStore | null = null;
let accounts: AccountsService;

function startInstance(port: number): Instance {
  const output: string[] = [];
  const proc = spawn(BIN, ['serve'], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      LANEBRIDGE_INTERNAL: JSON.stringify({ rateLimitKeyPrefix: PREFIX }),
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  return { base: `http://127.0.0.1:${port}`, proc, output };
}

/** Until /readyz answers 200 with the limits counted in Redis (the connection may lag the listener). */
async function waitReady(instance: Instance, timeoutMs = 30_000) {
  let last: { checks: Record<string, string> } | null = null;
  const ready = async () => {
    if (instance.proc.exitCode !== null) throw new Error(`instance exited (${instance.proc.exitCode}): ${instance.output.join('')}`);
    try {
      const res = await fetch(`${instance.base}/readyz`);
      if (res.status === 200) {
        last = (await res.json()) as { checks: Record<string, string> };
        if (last.checks.rate_limits === 'redis') return last;
      }
    } catch {
      // not listening yet
    }
    return null;
  };
  return waitFor(ready, { timeout: timeoutMs, interval: 100 }).catch((err: Error) => {
    if (err.message.startsWith('instance exited')) throw err;
    throw new Error(`instance at ${instance.base} not ready (${JSON.stringify(last)}): ${instance.output.join('')}`);
  });
}

async function stopInstance(instance: Instance) {
  const { proc } = instance;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

async function adminQuery(text: string) {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

function get(instance: Instance, path: string, key: string) {
  return fetch(`${instance.base}${path}`, { headers: { 'x-api-key': key } });
}

async function newKey(perMinute = 100) {
  const org = await accounts.createOrganization(`multi-instance ${Math.random().toString(36).slice(2)}`);
  const key = await accounts.createKey(org.id, { name: 'mi', externalSystem: 'vitest', scopes: [...SCOPES], perMinute });
  return { orgId: org.id, keyId: key.id, key: key.key };
}

beforeAll(async () => {
  await adminQuery(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await adminQuery(`CREATE DATABASE ${DB_NAME}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${DB_NAME}`;
  databaseUrl = url.toString();
  const ports = new Set<number>();
  while (ports.size < 2) ports.add(await freePort());
  // Both at the same moment, on a database with no tables yet: their migrations run concurrently.
  instances = [...ports].map((port) => startInstance(port));
  const ready = await Promise.all(instances.map((i) => waitReady(i)));
  for (const r of ready) expect(r.checks).toEqual({ database: 'ok', rate_limits: 'redis', redis: 'ok' });
  store = openDataStore(databaseUrl, { poolSize: 2 });
  accounts = accountsService(store);
}, 60_000);

afterAll(async () => {
  // Always: processes, connections, the database and the counters go, whatever the tests did.
  await Promise.all(instances.map((i) => stopInstance(i)));
  await store?.close();
  await adminQuery(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`).catch(() => {});
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}, 30_000);

describe('two instances on one PostgreSQL and one Redis', () => {
  it('migrated the fresh database once although both started together', async () => {
    const rows = (await adminQueryOn(`SELECT name, count(*)::int AS n FROM kysely_migration GROUP BY name`)).rows as { name: string; n: number }[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const [a, b] = instances;
    expect(a!.output.join('')).not.toMatch(/"level":(50|60)/);
    expect(b!.output.join('')).not.toMatch(/"level":(50|60)/);
    // Redis was there all along: no instance fell back, not even while starting.
    for (const i of instances) expect(i.output.join('')).not.toContain('Redis unreachable');
  });

  it('reads through one instance what was written through the other', async () => {
    const [a, b] = instances as [Instance, Instance];
    const { key } = await newKey();
    const created = await fetch(`${a.base}${CUSTOMERS}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ external_reference_id: 'MI-1', name: 'Written on A' }),
    });
    expect(created.status).toBe(201);
    const body = await created.json();
    const read = await get(b, `${CUSTOMERS}/MI-1`, key);
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(body);

    const updated = await fetch(`${b.base}${CUSTOMERS}/MI-1`, {
      method: 'PUT',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Changed on B' }),
    });
    expect(updated.status).toBe(200);
    expect(((await (await get(a, `${CUSTOMERS}/MI-1`, key)).json()) as { name: string }).name).toBe('Changed on B');
  });

  it('shares a per-minute limit: successes across both instances add up to the limit', async () => {
    // Stay inside one UTC minute for the burst.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 55_000) await letTimePass(60_000 - intoMinute + 50);
    const [a, b] = instances as [Instance, Instance];
    const { key } = await newKey(20);
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => get(i % 2 === 0 ? a : b, CUSTOMERS, key)));
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(20);
    expect(responses.filter((r) => r.status === 429)).toHaveLength(40);
    // Both instances served some of the 20, and counted from one shared counter.
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const refused = responses.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await Promise.all(responses.map((r) => r.arrayBuffer()));
  });

  it('refuses a key revoked through the CLI on both instances from the next request on', async () => {
    const [a, b] = instances as [Instance, Instance];
    const k = await newKey();
    expect((await get(a, CUSTOMERS, k.key)).status).toBe(200);
    expect((await get(b, CUSTOMERS, k.key)).status).toBe(200);
    const { stdout } = await run(BIN, ['key', 'revoke', '--org', k.orgId, '--id', k.keyId], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    });
    expect(JSON.parse(stdout)).toMatchObject({ id: k.keyId, status: 'revoked' });
    for (const instance of [a, b]) {
      const res = await get(instance, CUSTOMERS, k.key);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
    }
  });

  // The load routes check the key inside their one data statement on PostgreSQL (a key found valid on
  // an instance is not read on its own again): a revocation must still fail them from the next request on.
  it('refuses a revoked key on both instances on the load routes that check the key in their statement, whatever the route would have answered', async () => {
    const [a, b] = instances as [Instance, Instance];
    const k = await newKey();
    const routes = ['/v2/tms-api/loads', '/v2/tms-api/loads/NOPE', '/v2/tms-api/loads/NOPE/carrier-recommendations', '/v2/tms-api/loads?status=BOGUS'];
    const before = [200, 404, 404, 422];
    for (const instance of [a, b]) {
      // Twice: the second request is served with the key kept in memory.
      for (let i = 0; i < 2; i++) expect(await Promise.all(routes.map(async (r) => (await get(instance, r, k.key)).status))).toEqual(before);
    }
    await accounts.revokeKey(k.orgId, k.keyId);
    for (const instance of [a, b]) {
      for (const route of routes) {
        const res = await get(instance, route, k.key);
        expect([route, res.status]).toEqual([route, 401]);
        expect(await res.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
      }
    }
  });

  it('applies new limits of a key on both instances on the load routes (from the request after the change is seen)', async () => {
    const [a, b] = instances as [Instance, Instance];
    const k = await newKey(30);
    for (const instance of [a, b]) expect((await get(instance, '/v2/tms-api/loads', k.key)).headers.get('x-ratelimit-limit')).toBe('30');
    await accounts.updateKeyLimits(k.orgId, k.keyId, { perMinute: 55, perDay: 10_000 });
    for (const instance of [a, b]) {
      await (await get(instance, '/v2/tms-api/loads', k.key)).arrayBuffer();
      expect((await get(instance, '/v2/tms-api/loads', k.key)).headers.get('x-ratelimit-limit')).toBe('55');
    }
  });

  it('refuses a rotated key on both instances and accepts its successor on both', async () => {
    const [a, b] = instances as [Instance, Instance];
    const k = await newKey(42);
    expect((await get(a, CUSTOMERS, k.key)).status).toBe(200);
    expect((await get(b, CUSTOMERS, k.key)).status).toBe(200);
    const rotated = await accounts.rotateKey(k.orgId, k.keyId);
    for (const instance of [a, b]) {
      expect((await get(instance, CUSTOMERS, k.key)).status).toBe(401);
      const res = await get(instance, CUSTOMERS, rotated.key);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('42');
    }
  });
});

async function adminQueryOn(text: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}
