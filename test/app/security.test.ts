import { beforeAll, describe, expect, it, vi } from 'vitest';
import { SCOPES, type Scope } from '../../src/modules/accounts/scopes.js';
import { openDataStore } from '../../src/lib/db/index.js';
import { accountsService as otherAccounts } from '../../src/modules/accounts/accounts.service.js';
import { useApp, json, newTenant } from '../helpers.js';

const t = useApp();

const UNAUTHORIZED = { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } };

function concreteUrl(url: string): string {
  return url.replace(/:[a-z_]+/g, 'ANY-REF');
}

function sample(method: string) {
  return method === 'POST' || method === 'PUT' ? { payload: {} } : {};
}

// D3's table (and D12's webhook endpoints, D15's imports), written out: a new route cannot ship without its line here
// (and so its auth cases below).
const ROUTE_TABLE = [
  'DELETE /v2/tms-api/carriers/:external_reference_id write:carriers',
  'DELETE /v2/tms-api/customers/:external_reference_id write:customers',
  'DELETE /v2/tms-api/loads/:external_reference_id write:loads',
  'DELETE /v2/tms-api/locations/:external_reference_id write:locations',
  'DELETE /v2/tms-api/webhook-endpoints/:id write:webhooks',
  'GET /v2/tms-api/audit-log read:audit',
  'GET /v2/tms-api/carriers read:carriers',
  'GET /v2/tms-api/carriers/:external_reference_id read:carriers',
  'GET /v2/tms-api/customers read:customers',
  'GET /v2/tms-api/customers/:external_reference_id read:customers',
  'GET /v2/tms-api/events read:loads',
  'GET /v2/tms-api/imports write:imports',
  'GET /v2/tms-api/imports/:id write:imports',
  'GET /v2/tms-api/imports/:id/errors write:imports',
  'GET /v2/tms-api/loads read:loads',
  'GET /v2/tms-api/loads/:external_reference_id read:loads',
  'GET /v2/tms-api/loads/:external_reference_id/carrier-recommendations read:loads',
  'GET /v2/tms-api/locations read:locations',
  'GET /v2/tms-api/locations/:external_reference_id read:locations',
  'GET /v2/tms-api/market-rates write:rates',
  'GET /v2/tms-api/webhook-endpoints write:webhooks',
  'GET /v2/tms-api/webhook-endpoints/:id write:webhooks',
  'GET /v2/tms-api/webhook-endpoints/:id/attempts write:webhooks',
  'GET /v2/tms-api/webhook-endpoints/:id/deliveries write:webhooks',
  'POST /v2/tms-api/batch/carriers write:carriers',
  'POST /v2/tms-api/batch/customers write:customers',
  'POST /v2/tms-api/batch/loads write:loads',
  'POST /v2/tms-api/batch/locations write:locations',
  'POST /v2/tms-api/carriers write:carriers',
  'POST /v2/tms-api/customers write:customers',
  'POST /v2/tms-api/imports write:imports',
  'POST /v2/tms-api/imports/:id/cancel write:imports',
  'POST /v2/tms-api/imports/:id/complete write:imports',
  'POST /v2/tms-api/loads write:loads',
  'POST /v2/tms-api/loads/:external_reference_id/tracking-events write:loads',
  'POST /v2/tms-api/locations write:locations',
  'POST /v2/tms-api/market-rates write:rates',
  'POST /v2/tms-api/webhook-endpoints write:webhooks',
  'POST /v2/tms-api/webhook-endpoints/:id/replay write:webhooks',
  'POST /v2/tms-api/webhook-endpoints/:id/rotate-secret write:webhooks',
  'PUT /v2/tms-api/carriers/:external_reference_id write:carriers',
  'PUT /v2/tms-api/customers/:external_reference_id write:customers',
  'PUT /v2/tms-api/imports/:id/parts/:n write:imports',
  'PUT /v2/tms-api/loads/:external_reference_id write:loads',
  'PUT /v2/tms-api/locations/:external_reference_id write:locations',
  'PUT /v2/tms-api/webhook-endpoints/:id write:webhooks',
];

describe('route table', () => {
  it('is exactly the API routes of D3, each with its scope', () => {
    expect(t.routeTable.map((r) => `${r.method} ${r.url} ${r.scope}`).sort()).toEqual(ROUTE_TABLE);
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
      const tenant = await newTenant(
        t,
        SCOPES.filter((s) => s !== scope),
      );
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
        // A route that any of several scopes opens (the event feed) refuses a key with none of them.
        headers: {
          'x-api-key': route.anyScope
            ? (
                await newTenant(
                  t,
                  SCOPES.filter((s) => !route.anyScope!.includes(s)),
                )
              ).key
            : keysWithout.get(route.scope)!,
        },
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

describe('every API route lets the right key in, and counts it', () => {
  // A fixed clock: every request of the test falls in the same rate-limit minute.
  const fixed = useApp({}, { clock: { now: () => new Date('2026-06-01T12:00:30.000Z') } });

  it('a key with only the route’s scope is neither 401 nor 403', async () => {
    for (const route of fixed.routeTable) {
      const tenant = await newTenant(fixed, [route.scope]);
      const res = await tenant.request({ method: route.method as never, url: concreteUrl(route.url), ...sample(route.method) });
      expect([401, 403], `${route.method} ${route.url}: ${res.body}`).not.toContain(res.statusCode);
      expect(json(res).error, `${route.method} ${route.url}`).toBeUndefined();
    }
  });

  it('answers 429 with the D1 body and Retry-After once the key’s minute is spent', async () => {
    for (const route of fixed.routeTable) {
      const tenant = await newTenant(fixed, [route.scope], { perMinute: 1 });
      const request = () => tenant.request({ method: route.method as never, url: concreteUrl(route.url), ...sample(route.method) });
      const first = await request();
      expect(first.headers['x-ratelimit-remaining'], `${route.method} ${route.url}`).toBe('0');
      const second = await request();
      expect(second.statusCode, `${route.method} ${route.url}`).toBe(429);
      expect(json(second)).toEqual({ error: { code: 'RATE_LIMITED', message: 'Rate limit exceeded. Please retry after 30 seconds.', retry_after: 30 } });
      expect(second.headers['retry-after']).toBe('30');
    }
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
    // Last use is recorded after the answer (off the request's path): wait for it, not for a fixed time.
    await vi.waitFor(async () => {
      const touched = await t.store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', a.keyId).executeTakeFirstOrThrow();
      expect(touched.last_used_at).not.toBeNull();
    });
  });
});
