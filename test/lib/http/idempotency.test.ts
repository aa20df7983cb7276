import { request as httpRequest } from 'node:http';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { claimIdempotencyKey, findIdempotencyKey, pruneIdempotencyKeys } from '../../../src/lib/db/idempotency-keys.js';
import { readVersions } from '../../../src/lib/db/versions.js';
import { canonicalJson, requestFingerprint } from '../../../src/lib/http/idempotency.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { letTimePass, useApp, isPostgres, json, newTenant, startApp, uid, type Tenant, type TestApp } from '../../helpers.js';

// D13: Idempotency-Key on every write (src/lib/http/idempotency.ts), on both engines.

const CUSTOMERS = '/v2/tms-api/customers';
const LOADS = '/v2/tms-api/loads';
const BATCH_LOADS = '/v2/tms-api/batch/loads';
const HOUR = 3_600_000;
const IN_PROGRESS = { detail: 'A request with this Idempotency-Key is still being processed' };
const REUSED = {
  detail: [
    {
      type: 'idempotency_key_reused',
      loc: ['header', 'idempotency-key'],
      msg: 'This Idempotency-Key was already used for a request with another method, path or body; use a new key for a new operation',
    },
  ],
};

const t = useApp();

const newKey = () => `op-${uid()}-${Date.now()}`;

/** A request of `a` carrying `key` as its Idempotency-Key. */
function keyed(a: Tenant, key: string, method: InjectOptions['method'], url: string, body?: unknown): Promise<LightMyRequestResponse> {
  return a.request({ method, url, headers: { 'idempotency-key': key }, ...(body === undefined ? {} : { payload: body as never }) });
}

async function analyticsRuns(app: Pick<TestApp, 'metrics'> = t): Promise<number> {
  const { values } = await app.metrics.registry.getSingleMetric('lanebridge_analytics_runs_total')!.get();
  return values.reduce((n, v) => n + v.value, 0);
}

async function rows(table: 'customers' | 'loads' | 'market_rate_snapshots', orgId: string): Promise<number> {
  const r = await t.store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The Idempotency-Keys an organization holds, on `db`. */
async function idempotencyKeys(db: TestApp['store']['db'], orgId: string): Promise<number> {
  const r = await db
    .selectFrom('idempotency_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The organization's events in the change feed (D11), or null where the feed does not exist. */
async function events(orgId: string): Promise<number | null> {
  try {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from events where org_id = ${orgId}`.execute(t.store.db);
    return Number(rows[0]!.n);
  } catch {
    return null;
  }
}

/** The second answer is the first one replayed: same status and body, marked. */
function expectReplay(first: LightMyRequestResponse, again: LightMyRequestResponse) {
  expect(first.headers['idempotent-replayed']).toBeUndefined();
  expect(again.statusCode).toBe(first.statusCode);
  expect(again.body).toBe(first.body);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.headers['content-type']).toBe(first.headers['content-type']);
}

describe('Idempotency-Key: replays', () => {
  it('replays a 201 with the same body and writes nothing again', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const first = await keyed(a, key, 'POST', CUSTOMERS, body);
    expect(first.statusCode, first.body).toBe(201);
    const versions = await readVersions(t.store.db, a.orgId);
    const again = await keyed(a, key, 'POST', CUSTOMERS, body);
    expectReplay(first, again);
    expect(await rows('customers', a.orgId)).toBe(1);
    expect(await readVersions(t.store.db, a.orgId)).toEqual(versions);
    // Without a key nothing changes: the same create is a duplicate.
    expect((await a.post(CUSTOMERS, body)).statusCode).toBe(409);
  });

  it('replays a 200 (update): the stored answer, not the record as it is now', async () => {
    const a = await newTenant(t);
    expect((await a.post(CUSTOMERS, { external_reference_id: 'CUST-1', name: 'Acme Foods' })).statusCode).toBe(201);
    const key = newKey();
    const first = await keyed(a, key, 'PUT', `${CUSTOMERS}/CUST-1`, { name: 'Acme Frozen' });
    expect(first.statusCode).toBe(200);
    expect((await a.put(`${CUSTOMERS}/CUST-1`, { name: 'Acme Chilled' })).statusCode).toBe(200);
    const again = await keyed(a, key, 'PUT', `${CUSTOMERS}/CUST-1`, { name: 'Acme Frozen' });
    expectReplay(first, again);
    expect(json(again).name).toBe('Acme Frozen');
    expect(json(await a.get(`${CUSTOMERS}/CUST-1`)).name).toBe('Acme Chilled');
  });

  it('replays a 204 (delete) where a second delete would be a 404', async () => {
    const a = await newTenant(t);
    expect((await a.post(CUSTOMERS, { external_reference_id: 'CUST-1', name: 'Acme Foods' })).statusCode).toBe(201);
    const key = newKey();
    const first = await keyed(a, key, 'DELETE', `${CUSTOMERS}/CUST-1`);
    expect(first.statusCode).toBe(204);
    const again = await keyed(a, key, 'DELETE', `${CUSTOMERS}/CUST-1`);
    expect(again.statusCode).toBe(204);
    expect(again.body).toBe('');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((await a.del(`${CUSTOMERS}/CUST-1`)).statusCode).toBe(404);
  });

  it('replays a 404, even once the record exists', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const first = await keyed(a, key, 'DELETE', `${CUSTOMERS}/CUST-9`);
    expect(first.statusCode).toBe(404);
    expect((await a.post(CUSTOMERS, { external_reference_id: 'CUST-9', name: 'Late' })).statusCode).toBe(201);
    expectReplay(first, await keyed(a, key, 'DELETE', `${CUSTOMERS}/CUST-9`));
    expect(await rows('customers', a.orgId)).toBe(1);
  });

  it('replays a 409, even once the conflict is gone', async () => {
    const a = await newTenant(t);
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    expect((await a.post(CUSTOMERS, body)).statusCode).toBe(201);
    const key = newKey();
    const first = await keyed(a, key, 'POST', CUSTOMERS, body);
    expect(json(first)).toEqual({ detail: "Customer with external_reference_id 'CUST-1' already exists" });
    expect((await a.del(`${CUSTOMERS}/CUST-1`)).statusCode).toBe(204);
    expectReplay(first, await keyed(a, key, 'POST', CUSTOMERS, body));
    expect(await rows('customers', a.orgId)).toBe(0);
  });

  it('replays a 422 the handler gave, even once its cause is fixed', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const load = dallasToHouston('L-1', { customer_external_reference_id: 'CUST-2' });
    const key = newKey();
    const first = await keyed(a, key, 'POST', LOADS, load);
    expect(first.statusCode).toBe(422);
    expect(json(first).detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'customer_external_reference_id'] });
    expect((await a.post(CUSTOMERS, { external_reference_id: 'CUST-2', name: 'Other' })).statusCode).toBe(201);
    expectReplay(first, await keyed(a, key, 'POST', LOADS, load));
    expect(await rows('loads', a.orgId)).toBe(0);
  });

  it('a batch replayed creates nothing twice and runs no analytics', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const items = ['B-1', 'B-2', 'B-3'].map((ref) => ({
      operation: 'upsert',
      load: dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }),
    }));
    const key = newKey();
    const runs = await analyticsRuns();
    const first = await keyed(a, key, 'POST', BATCH_LOADS, { items });
    expect(json(first)).toMatchObject({ success_count: 3, error_count: 0 });
    expect(await analyticsRuns()).toBe(runs + 1);
    const versions = await readVersions(t.store.db, a.orgId);
    const history = await t.store.db.selectFrom('lane_history').select('load_id').where('org_id', '=', a.orgId).execute();
    const feed = await events(a.orgId);
    expect(feed === null || feed >= 3, String(feed)).toBe(true);
    const again = await keyed(a, key, 'POST', BATCH_LOADS, { items });
    expectReplay(first, again);
    expect(await analyticsRuns()).toBe(runs + 1);
    expect(await rows('loads', a.orgId)).toBe(3);
    expect(await readVersions(t.store.db, a.orgId)).toEqual(versions);
    expect(await t.store.db.selectFrom('lane_history').select('load_id').where('org_id', '=', a.orgId).execute()).toEqual(history);
    // Nor an event (D11), where the change feed exists.
    expect(await events(a.orgId)).toBe(feed);
  });

  it('a market rate snapshot replayed is not recorded twice', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const body = {
      origin: { location_external_reference_id: 'DAL' },
      destination: { location_external_reference_id: 'HOU' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.5,
    };
    const key = newKey();
    const first = await keyed(a, key, 'POST', '/v2/tms-api/market-rates', body);
    expect(first.statusCode).toBe(201);
    expectReplay(first, await keyed(a, key, 'POST', '/v2/tms-api/market-rates', body));
    expect(await rows('market_rate_snapshots', a.orgId)).toBe(1);
  });

  it('compares bodies in canonical form: key order does not matter, values do', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const first = await keyed(a, key, 'POST', '/v2/tms-api/carriers', {
      external_reference_id: 'CAR-1',
      name: 'Swift',
      address: { city: 'Dallas', state: 'US-TX', country: 'US' },
      contacts: [{ first_name: 'Ann', primary_email: 'ann@example.com' }],
    });
    expect(first.statusCode, first.body).toBe(201);
    // The same body sent as other text: keys in another order, at every level, other spacing.
    const reordered =
      '{ "contacts": [ { "primary_email": "ann@example.com", "first_name": "Ann" } ], "address": {"country":"US","state":"US-TX","city":"Dallas"}, "name": "Swift", "external_reference_id": "CAR-1" }';
    const again = await a.request({
      method: 'POST',
      url: '/v2/tms-api/carriers',
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
      payload: reordered,
    });
    expectReplay(first, again);
    expect(canonicalJson({ b: [1, { d: 2, c: null }], a: 'x' })).toBe('{"a":"x","b":[1,{"c":null,"d":2}]}');
    expect(requestFingerprint('POST', '/p', { a: 1, b: 2 })).toBe(requestFingerprint('POST', '/p', { b: 2, a: 1 }));
    // Array order is part of the body.
    const swapped = await keyed(a, key, 'POST', '/v2/tms-api/carriers', {
      external_reference_id: 'CAR-1',
      name: 'Swift',
      address: { city: 'Dallas', state: 'US-TX', country: 'US' },
      contacts: [{ first_name: 'Ann', primary_email: 'ann@example.com' }, { first_name: 'Bob' }],
    });
    expect(swapped.statusCode).toBe(422);
  });

  it('compares the body as validated: the same instant written another way is the same body', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const key = newKey();
    const load = dallasToHouston('L-1');
    const first = await keyed(a, key, 'POST', LOADS, load);
    expect(first.statusCode, first.body).toBe(201);
    const rewritten = { ...load, stops: load.stops.map((s) => ({ ...s, early_arrival: s.early_arrival.replace('.000Z', 'Z') })) };
    expectReplay(first, await keyed(a, key, 'POST', LOADS, rewritten));
  });

  it('a request without a key is untouched', async () => {
    const a = await newTenant(t);
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    expect((await a.post(CUSTOMERS, body)).statusCode).toBe(201);
    const dup = await a.post(CUSTOMERS, body);
    expect(dup.statusCode).toBe(409);
    expect(dup.headers['idempotent-replayed']).toBeUndefined();
    expect(await idempotencyKeys(t.store.db, a.orgId)).toBe(0);
  });
});

describe('Idempotency-Key: refusals', () => {
  it('the same key with another body, path or method is 422 idempotency_key_reused; the first answer stays', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const first = await keyed(a, key, 'POST', CUSTOMERS, { external_reference_id: 'CUST-1', name: 'Acme Foods' });
    expect(first.statusCode).toBe(201);
    for (const [method, url, body] of [
      ['POST', CUSTOMERS, { external_reference_id: 'CUST-1', name: 'Acme Frozen' }],
      ['POST', CUSTOMERS, { external_reference_id: 'CUST-2', name: 'Acme Foods' }],
      ['POST', '/v2/tms-api/carriers', { external_reference_id: 'CUST-1', name: 'Acme Foods' }],
      ['PUT', `${CUSTOMERS}/CUST-1`, { external_reference_id: 'CUST-1', name: 'Acme Foods' }],
      ['DELETE', `${CUSTOMERS}/CUST-1`, undefined],
    ] as const) {
      const res = await keyed(a, key, method, url, body);
      expect(res.statusCode, `${method} ${url}`).toBe(422);
      expect(json(res)).toEqual(REUSED);
    }
    expect(await rows('customers', a.orgId)).toBe(1);
    expectReplay(first, await keyed(a, key, 'POST', CUSTOMERS, { external_reference_id: 'CUST-1', name: 'Acme Foods' }));
  });

  it('a malformed key is 422 on ["header","idempotency-key"] and nothing runs', async () => {
    const a = await newTenant(t);
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    for (const [key, type] of [
      ['', 'string_too_short'],
      ['k'.repeat(256), 'string_too_long'],
      ['clé-1', 'string_pattern_mismatch'],
      ['tab\there', 'string_pattern_mismatch'],
    ] as const) {
      const res = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(res.statusCode, JSON.stringify(key)).toBe(422);
      expect(json(res)).toEqual({ detail: [{ type, loc: ['header', 'idempotency-key'], msg: expect.any(String) }] });
    }
    expect(await rows('customers', a.orgId)).toBe(0);
    // The limits themselves are fine: 255 printable characters, spaces and symbols included.
    const longest = `${'k'.repeat(250)} ~!@#`;
    expect((await keyed(a, longest, 'POST', CUSTOMERS, body)).statusCode).toBe(201);
    expect((await keyed(a, longest, 'POST', CUSTOMERS, body)).headers['idempotent-replayed']).toBe('true');
    // Reads ignore the header.
    expect((await keyed(a, '', 'GET', CUSTOMERS)).statusCode).toBe(200);
  });

  it('keys are per organization: another organization with the same key runs its own request', async () => {
    const a = await newTenant(t);
    const b = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const mine = await keyed(a, key, 'POST', CUSTOMERS, body);
    const theirs = await keyed(b, key, 'POST', CUSTOMERS, body);
    expect(mine.statusCode).toBe(201);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(json(theirs).id).not.toBe(json(mine).id);
    // With another body too: no 422 across organizations.
    expect((await keyed(b, newKey(), 'POST', CUSTOMERS, { external_reference_id: 'CUST-2', name: 'X' })).statusCode).toBe(201);
    expect(await rows('customers', b.orgId)).toBe(2);
  });

  it('authentication and scopes still apply to a replay; another key of the organization gets it', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const first = await keyed(a, key, 'POST', CUSTOMERS, body);
    expect(first.statusCode).toBe(201);
    const readOnly = await t.services.accounts.createKey(a.orgId, { name: 'ro', externalSystem: 'vitest', scopes: ['read:customers'] });
    const other = await t.services.accounts.createKey(a.orgId, { name: 'rw', externalSystem: 'vitest', scopes: ['write:customers'] });
    const as = (apiKey: string) => t.app.inject({ method: 'POST', url: CUSTOMERS, headers: { 'x-api-key': apiKey, 'idempotency-key': key }, payload: body });
    const forbidden = await as(readOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(json(forbidden)).toEqual({ error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: write:customers' } });
    expect((await t.app.inject({ method: 'POST', url: CUSTOMERS, headers: { 'idempotency-key': key }, payload: body })).statusCode).toBe(401);
    expectReplay(first, await as(other.key));
  });

  it('a replay counts against the rate limit', async () => {
    const a = await newTenant(t, undefined, { perMinute: 3 });
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await keyed(a, key, 'POST', CUSTOMERS, body));
    expect(answers.map((r) => r.statusCode)).toEqual([201, 201, 201, 429]);
    expect(answers.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
    expect(answers.map((r) => r.headers['idempotent-replayed'])).toEqual([undefined, 'true', 'true', undefined]);
  });
});

describe('Idempotency-Key: what is not stored, and requests still running', () => {
  it('a 500 is not stored: the retry runs', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const spy = vi.spyOn(t.services.customers, 'create').mockRejectedValueOnce(new Error('boom'));
    try {
      const failed = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(failed.statusCode).toBe(500);
      expect(await findIdempotencyKey(t.store.db, a.orgId, key)).toBeUndefined();
      const retried = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(retried.statusCode).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });

  it('a database failure (503) is not stored: the retry runs', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const unreachable = Object.assign(new Error('Connection terminated unexpectedly'), { code: isPostgres() ? '57P01' : 'SQLITE_IOERR' });
    const spy = vi.spyOn(t.services.customers, 'create').mockRejectedValueOnce(unreachable);
    try {
      const failed = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(failed.statusCode).toBe(503);
      const retried = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(retried.statusCode).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(await rows('customers', a.orgId)).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('the same key while the first request runs is 409 with Retry-After: 1; then the answer replays', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const svc = t.services.customers;
    const original = svc.create.bind(svc);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const spy = vi.spyOn(svc, 'create').mockImplementationOnce(async (...args) => {
      await gate;
      return original(...args);
    });
    try {
      const running = keyed(a, key, 'POST', CUSTOMERS, body);
      await vi.waitFor(async () => expect(await findIdempotencyKey(t.store.db, a.orgId, key)).toBeDefined());
      const busy = await keyed(a, key, 'POST', CUSTOMERS, body);
      expect(busy.statusCode).toBe(409);
      expect(json(busy)).toEqual(IN_PROGRESS);
      expect(busy.headers['retry-after']).toBe('1');
      // Another body is a misuse whatever the first request's state.
      expect(json(await keyed(a, key, 'POST', CUSTOMERS, { ...body, name: 'Other' }))).toEqual(REUSED);
      release();
      const first = await running;
      expect(first.statusCode).toBe(201);
      expectReplay(first, await keyed(a, key, 'POST', CUSTOMERS, body));
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('a client that timed out and went away: the answer is recorded all the same, and its retry gets it', async () => {
    const app = await startApp();
    try {
      const a = await newTenant(app);
      await app.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.app.server.address() as { port: number };
      const svc = app.services.customers;
      const original = svc.create.bind(svc);
      let entered!: () => void;
      const createRunning = new Promise<void>((resolve) => (entered = resolve));
      const spy = vi.spyOn(svc, 'create').mockImplementationOnce(async (...args) => {
        entered();
        await letTimePass(300);
        return original(...args);
      });
      const key = newKey();
      const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
      // The client gives up once the create is running (and before it ends).
      await new Promise<void>((resolve) => {
        const req = httpRequest({
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: CUSTOMERS,
          headers: { ...a.headers, 'idempotency-key': key, 'content-type': 'application/json' },
        });
        req.on('error', () => resolve());
        req.end(JSON.stringify(body));
        void createRunning.then(() => {
          req.destroy();
          resolve();
        });
      });
      await vi.waitFor(async () => expect((await findIdempotencyKey(app.store.db, a.orgId, key))?.status).toBe(201), { timeout: 10_000 });
      const retry = await app.app.inject({ method: 'POST', url: CUSTOMERS, headers: { ...a.headers, 'idempotency-key': key }, payload: body });
      expect(retry.statusCode).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      await app.close();
    }
  });

  it('a claim left by a crashed process holds the key until its lease ends, then a retry runs', async () => {
    const a = await newTenant(t);
    const key = newKey();
    const body = { external_reference_id: 'CUST-1', name: 'Acme Foods' };
    const now = t.clock.now();
    const leaseMs = t.config.loadBatchDeadlineMs + 60_000;
    // What a process that died while running the request leaves behind.
    await claimIdempotencyKey(t.store.db, {
      org_id: a.orgId,
      key,
      fingerprint: requestFingerprint('POST', CUSTOMERS, body),
      claim: 'crashed',
      status: null,
      content_type: null,
      body: null,
      created_at: now.toISOString(),
      lease_until: new Date(now.getTime() + leaseMs).toISOString(),
      expires_at: new Date(now.getTime() + 24 * HOUR).toISOString(),
    });
    expect(json(await keyed(a, key, 'POST', CUSTOMERS, body))).toEqual(IN_PROGRESS);
    t.clock.advance(leaseMs);
    const retried = await keyed(a, key, 'POST', CUSTOMERS, body);
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expectReplay(retried, await keyed(a, key, 'POST', CUSTOMERS, body));
  });
});

describe('Idempotency-Key: retention', () => {
  it('a key expires after IDEMPOTENCY_TTL_HOURS (test clock) and is pruned by the instance itself', async () => {
    const app = await startApp({ idempotencyTtlHours: 2 });
    try {
      const a = await newTenant(app);
      const key = newKey();
      const req = (body: unknown) =>
        app.app.inject({ method: 'POST', url: CUSTOMERS, headers: { ...a.headers, 'idempotency-key': key }, payload: body as never });
      expect((await req({ external_reference_id: 'CUST-1', name: 'Acme Foods' })).statusCode).toBe(201);
      app.clock.advance(2 * HOUR - 1000);
      expect((await req({ external_reference_id: 'CUST-1', name: 'Acme Foods' })).headers['idempotent-replayed']).toBe('true');
      expect((await req({ external_reference_id: 'CUST-2', name: 'Other' })).statusCode).toBe(422);
      app.clock.advance(1000);
      // Expired: the key is free again, for any request.
      const fresh = await req({ external_reference_id: 'CUST-2', name: 'Other' });
      expect(fresh.statusCode).toBe(201);
      expect(fresh.headers['idempotent-replayed']).toBeUndefined();
      expect(await idempotencyKeys(app.store.db, a.orgId)).toBe(1);
      // Expired keys nobody reuses are deleted in the background, after a later claim.
      const stale = newKey();
      expect((await app.app.inject({ method: 'DELETE', url: `${CUSTOMERS}/NONE`, headers: { ...a.headers, 'idempotency-key': stale } })).statusCode).toBe(404);
      expect(await idempotencyKeys(app.store.db, a.orgId)).toBe(2);
      app.clock.advance(3 * HOUR);
      expect((await app.app.inject({ method: 'DELETE', url: `${CUSTOMERS}/NONE`, headers: { ...a.headers, 'idempotency-key': newKey() } })).statusCode).toBe(
        404,
      );
      await vi.waitFor(async () => expect(await idempotencyKeys(app.store.db, a.orgId)).toBe(1));
      expect(await findIdempotencyKey(app.store.db, a.orgId, stale)).toBeUndefined();
    } finally {
      await app.close();
    }
  });

  it('pruning deletes a bounded number of expired keys per statement', async () => {
    const a = await newTenant(t);
    const now = t.clock.now();
    const base = {
      org_id: a.orgId,
      fingerprint: 'f',
      claim: 'c',
      status: 204,
      content_type: null,
      body: '',
      created_at: now.toISOString(),
      lease_until: now.toISOString(),
    };
    for (let i = 0; i < 5; i++)
      await claimIdempotencyKey(t.store.db, { ...base, key: `old-${i}`, expires_at: new Date(now.getTime() - 1000 - i).toISOString() });
    await claimIdempotencyKey(t.store.db, { ...base, key: 'kept', expires_at: new Date(now.getTime() + HOUR).toISOString() });
    // Other test files may have expired keys of their own on the shared database: count this tenant's.
    let deleted = 0;
    while ((await idempotencyKeys(t.store.db, a.orgId)) > 1) {
      const n = await pruneIdempotencyKeys(t.store.db, now.toISOString(), 2);
      expect(n).toBeLessThanOrEqual(2);
      deleted += n;
      if (deleted > 1000) break;
    }
    expect(await idempotencyKeys(t.store.db, a.orgId)).toBe(1);
    expect(await findIdempotencyKey(t.store.db, a.orgId, 'kept')).toBeDefined();
  });

  it('IDEMPOTENCY_TTL_HOURS defaults to 24 and is validated', () => {
    expect(loadConfig({}).idempotencyTtlHours).toBe(24);
    expect(loadConfig({ IDEMPOTENCY_TTL_HOURS: '48' }).idempotencyTtlHours).toBe(48);
    for (const bad of ['0', 'day', '721']) expect(() => loadConfig({ IDEMPOTENCY_TTL_HOURS: bad }), bad).toThrow(ConfigError);
  });
});

// Two app instances on one PostgreSQL database, as two processes would be (on SQLite the embedded
// mode is one process; two instances in one test process would wait on each other's SQLite locks
// synchronously, which no deployment does).
describe.skipIf(!isPostgres())('Idempotency-Key: two instances on one database', () => {
  const second = useApp();

  const on = (app: TestApp['app'], a: Tenant, key: string, url: string, body: unknown) =>
    app.inject({ method: 'POST', url, headers: { ...a.headers, 'idempotency-key': key }, payload: body as never });

  it('two concurrent identical requests with one key: exactly one execution, the other answer is the replay or 409', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const outcomes = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const key = newKey();
      const refs = Array.from({ length: 20 }, (_, i) => `R${round}-${i}`);
      const body = {
        items: refs.map((ref) => ({ operation: 'create', load: dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }) })),
      };
      const runs = (await analyticsRuns()) + (await analyticsRuns(second));
      const loadsBefore = await rows('loads', a.orgId);
      // Alternate which instance is asked first.
      const [x, y] = round % 2 === 0 ? [t.app, second.app] : [second.app, t.app];
      const answers = await Promise.all([on(x, a, key, BATCH_LOADS, body), on(y, a, key, BATCH_LOADS, body)]);
      const ran = answers.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === undefined);
      expect(ran).toHaveLength(1);
      expect(json(ran[0]!)).toMatchObject({ success_count: 20, error_count: 0 });
      const other = answers.find((r) => r !== ran[0])!;
      if (other.statusCode === 409) {
        expect(json(other)).toEqual(IN_PROGRESS);
        expect(other.headers['retry-after']).toBe('1');
        outcomes.add('409');
      } else {
        expectReplay(ran[0]!, other);
        outcomes.add('replay');
      }
      expect(await rows('loads', a.orgId)).toBe(loadsBefore + 20);
      expect((await analyticsRuns()) + (await analyticsRuns(second))).toBe(runs + 1);
      // Whichever instance is asked afterwards replays it.
      expectReplay(ran[0]!, await on(y, a, key, BATCH_LOADS, body));
    }
    expect(outcomes.size).toBeGreaterThan(0);
  });

  it('a single create raced on both instances is one load', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    for (let round = 0; round < 6; round++) {
      const key = newKey();
      const body = dallasToHouston(`S-${round}`);
      const answers = await Promise.all([on(t.app, a, key, LOADS, body), on(second.app, a, key, LOADS, body)]);
      const created = answers.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
      expect(created).toHaveLength(1);
      for (const r of answers.filter((r) => r !== created[0])) {
        if (r.statusCode === 409) expect(json(r)).toEqual(IN_PROGRESS);
        else expectReplay(created[0]!, r);
      }
    }
    expect(await rows('loads', a.orgId)).toBe(6);
  });
});
