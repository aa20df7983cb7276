import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, type Scope } from '../src/modules/accounts/scopes.js';
import { openDataStore } from '../src/lib/db/index.js';
import { accountsService as otherAccounts } from '../src/modules/accounts/accounts.service.js';
import { json, newTenant, startApp, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(async () => t.close());

const UNAUTHORIZED = { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key' } };

function concreteUrl(url: string): string {
  return url.replace(/:[a-z_]+/g, 'ANY-REF');
}

function sample(method: string) {
  return method === 'POST' || method === 'PUT' ? { payload: {} } : {};
}

describe('route table', () => {
  it('covers every API route, each with the scope rule of D3', () => {
    const table = t.routeTable.map((r) => `${r.method} ${r.url} ${r.scope}`).sort();
    expect(table).toEqual(
      expect.arrayContaining([
        'GET /v2/tms-api/customers read:customers',
        'POST /v2/tms-api/customers write:customers',
        'GET /v2/tms-api/customers/:external_reference_id read:customers',
        'PUT /v2/tms-api/customers/:external_reference_id write:customers',
        'DELETE /v2/tms-api/customers/:external_reference_id write:customers',
        'POST /v2/tms-api/batch/customers write:customers',
        'GET /v2/tms-api/carriers read:carriers',
        'POST /v2/tms-api/carriers write:carriers',
        'GET /v2/tms-api/carriers/:external_reference_id read:carriers',
        'PUT /v2/tms-api/carriers/:external_reference_id write:carriers',
        'DELETE /v2/tms-api/carriers/:external_reference_id write:carriers',
        'POST /v2/tms-api/batch/carriers write:carriers',
        'GET /v2/tms-api/locations read:locations',
        'POST /v2/tms-api/batch/locations write:locations',
        'GET /v2/tms-api/loads read:loads',
        'POST /v2/tms-api/loads write:loads',
        'GET /v2/tms-api/loads/:external_reference_id read:loads',
        'PUT /v2/tms-api/loads/:external_reference_id write:loads',
        'DELETE /v2/tms-api/loads/:external_reference_id write:loads',
        'POST /v2/tms-api/batch/loads write:loads',
        'GET /v2/tms-api/loads/:external_reference_id/carrier-recommendations read:loads',
        'POST /v2/tms-api/market-rates write:rates',
        'GET /v2/tms-api/market-rates write:rates',
      ]),
    );
    for (const r of t.routeTable) {
      const resource = r.url.split('/')[3] === 'batch' ? r.url.split('/')[4] : r.url.split('/')[3];
      // D3: market rates need write:rates for both reading and writing (the only rates scope).
      const expected = resource === 'market-rates' ? 'write:rates' : `${r.method === 'GET' ? 'read' : 'write'}:${resource}`;
      expect(r.scope, `${r.method} ${r.url}`).toBe(expected);
    }
  });
});

describe('every API route refuses callers without the right key', () => {
  let revokedKey: string;
  const keysWithout = new Map<Scope, string>();

  beforeAll(async () => {
    const victim = await newTenant(t);
    await t.services.accounts.revokeKey(victim.orgId, victim.keyId);
    revokedKey = victim.key;
    for (const scope of SCOPES) {
      const tenant = await newTenant(t, SCOPES.filter((s) => s !== scope));
      keysWithout.set(scope, tenant.key);
    }
  });

  const cases = [
    ['no key', () => ({})],
    ['a malformed key', () => ({ 'x-api-key': 'not-a-key' })],
    ['a well-formed unknown key', () => ({ 'x-api-key': `lbk_${'0'.repeat(64)}` })],
    ['an upper-case hex key', () => ({ 'x-api-key': `lbk_${'A'.repeat(64)}` })],
    ['a revoked key', () => ({ 'x-api-key': revokedKey })],
  ] as const;

  it.each(cases)('answers 401 with the D1 body to %s on every route', async (_label, headersOf) => {
    expect(t.routeTable.length).toBeGreaterThanOrEqual(12);
    for (const route of t.routeTable) {
      const res = await t.app.inject({
        method: route.method as never,
        url: concreteUrl(route.url),
        headers: headersOf() as Record<string, string>,
        ...sample(route.method),
      });
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
      expect(json(res)).toEqual(UNAUTHORIZED);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });

  it('answers 403 naming the missing scope on every route', async () => {
    for (const route of t.routeTable) {
      const res = await t.app.inject({
        method: route.method as never,
        url: concreteUrl(route.url),
        headers: { 'x-api-key': keysWithout.get(route.scope)! },
        ...sample(route.method),
      });
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(403);
      expect(json(res)).toEqual({
        error: { code: 'FORBIDDEN', message: `API key does not have the required scope: ${route.scope}` },
      });
    }
  });

  it('lets a key with only the needed scope through', async () => {
    const reader = await newTenant(t, ['read:customers']);
    const res = await reader.get('/v2/tms-api/customers');
    expect(res.statusCode).toBe(200);
    const write = await reader.post('/v2/tms-api/customers', { external_reference_id: 'C', name: 'n' });
    expect(json(write)).toEqual({
      error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: write:customers' },
    });
  });
});

describe('key lifecycle', () => {
  it('a revoked key fails from the next request on; a rotated key is replaced at once', async () => {
    const a = await newTenant(t);
    expect((await a.get('/v2/tms-api/customers')).statusCode).toBe(200);
    const rotated = await t.services.accounts.rotateKey(a.orgId, a.keyId);
    expect(rotated.key).toMatch(/^lbk_[0-9a-f]{64}$/);
    expect(rotated.id).not.toBe(a.keyId);
    const old = await a.get('/v2/tms-api/customers');
    expect(old.statusCode).toBe(401);
    const fresh = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': rotated.key } });
    expect(fresh.statusCode).toBe(200);
    const keys = await t.services.accounts.listKeys(a.orgId);
    expect(keys.map((k) => [k.id, k.status])).toEqual([
      [a.keyId, 'revoked'],
      [rotated.id, 'active'],
    ]);
    expect(keys[1]).toMatchObject({ scopes: [...SCOPES], per_minute: 100, per_day: 10_000, name: 'test', external_system: 'vitest' });
    await t.services.accounts.revokeKey(a.orgId, rotated.id);
    const after = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': rotated.key } });
    expect(after.statusCode).toBe(401);
  });

  it('a key revoked through another connection to the database (the CLI, another instance) fails on the next request', async () => {
    const a = await newTenant(t);
    // Twice under an unchanged database: the second answer may come from the checked-key cache.
    expect((await a.get('/v2/tms-api/customers')).statusCode).toBe(200);
    expect((await a.get('/v2/tms-api/customers')).statusCode).toBe(200);
    const other = openDataStore(t.config.databaseUrl, { poolSize: 1 });
    try {
      await otherAccounts(other).revokeKey(a.orgId, a.keyId);
    } finally {
      await other.close();
    }
    const after = await a.get('/v2/tms-api/customers');
    expect(after.statusCode).toBe(401);
    expect(json(after)).toEqual(UNAUTHORIZED);
  });

  it('stores keys only as a hash and records last use', async () => {
    const a = await newTenant(t);
    await a.get('/v2/tms-api/customers');
    const row = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', a.keyId).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(a.key.slice(4));
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.key_prefix).toBe(a.key.slice(0, 12));
    await new Promise((r) => setTimeout(r, 50));
    const touched = await t.store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', a.keyId).executeTakeFirstOrThrow();
    expect(touched.last_used_at).not.toBeNull();
  });
});
