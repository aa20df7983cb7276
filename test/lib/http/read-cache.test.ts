import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { openDataStore, type DataSnapshot } from '../../../src/lib/db/index.js';
import { readCache } from '../../../src/lib/http/read-cache.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { useApp, isPostgres, json, newTenant, type Tenant, type TestApp } from '../../helpers.js';

// GET answers kept while what they depend on is unchanged (src/lib/http/read-cache.ts): every write,
// through this app or another instance on the same database, shows from the next request.

const t = useApp();
const plain = useApp({ readCache: false });

async function seeded(app: TestApp = t): Promise<Tenant> {
  const a = await newTenant(app);
  await seedFreight(a);
  const res = await a.post('/v2/tms-api/loads', dallasToHouston('L-1', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }));
  expect(res.statusCode, res.body).toBe(201);
  return a;
}

describe('read cache: answers', () => {
  it('a repeated GET answers the same bytes and headers as the first, and as a server without the cache', async () => {
    const a = await seeded();
    const first = await a.get('/v2/tms-api/loads/L-1');
    await a.get('/v2/tms-api/loads/L-1');
    // The first request recorded the key's last use (a write): the third is the one answered from memory.
    const second = await a.get('/v2/tms-api/loads/L-1');
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.body).toBe(first.body);
    expect(second.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json(second)).toMatchObject({ external_reference_id: 'L-1', status: 'DELIVERED', carrier_name: 'Swift Transport', carrier_recommendations: [] });

    const b = await seeded(plain);
    const uncached = json(await b.get('/v2/tms-api/loads/L-1'));
    const cached = json(second);
    // The same shape field for field (ids and times differ between the two databases).
    expect(Object.keys(cached)).toEqual(Object.keys(uncached));
    expect(cached.stops.map((s: object) => Object.keys(s))).toEqual(uncached.stops.map((s: object) => Object.keys(s)));
  });

  it('shows an update, a rename of a linked record and a delete from the next request', async () => {
    const a = await seeded();
    await a.get('/v2/tms-api/loads/L-1');
    await a.get('/v2/tms-api/loads/L-1');
    expect((await a.put('/v2/tms-api/loads/L-1', { description: 'Frozen peas' })).statusCode).toBe(200);
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBe('Frozen peas');
    expect((await a.put('/v2/tms-api/locations/DAL', { name: 'Dallas Cross-Dock' })).statusCode).toBe(200);
    expect(json(await a.get('/v2/tms-api/loads/L-1')).stops[0].location_name).toBe('Dallas Cross-Dock');
    expect((await a.put('/v2/tms-api/carriers/CAR-1', { name: 'Swift Logistics' })).statusCode).toBe(200);
    expect(json(await a.get('/v2/tms-api/loads/L-1')).carrier_name).toBe('Swift Logistics');
    expect(json(await a.get('/v2/tms-api/carriers/CAR-1')).name).toBe('Swift Logistics');
    expect((await a.del('/v2/tms-api/loads/L-1')).statusCode).toBe(204);
    const gone = await a.get('/v2/tms-api/loads/L-1');
    expect(gone.statusCode).toBe(404);
    expect(json(gone)).toEqual({ detail: "Load with external_reference_id 'L-1' not found" });
  });

  it('lists: a new, changed or deleted record shows in the next page, and each query string has its own answer', async () => {
    const a = await seeded();
    const page = async (q: string) => json(await a.get(`/v2/tms-api/loads${q}`));
    for (let i = 0; i < 3; i++)
      expect((await page('?page_size=10')).items.map((l: { external_reference_id: string }) => l.external_reference_id)).toEqual(['L-1']);
    const copy = { ...(await page('?page_size=10')).items[0] };
    expect(
      (
        await a.post('/v2/tms-api/loads', {
          external_reference_id: 'L-2',
          equipment_type: 'REEFER',
          transport_mode: 'FTL',
          customer_external_reference_id: 'CUST-1',
          stops: copy.stops.map((s: Record<string, unknown>) => ({
            stop_type: s.stop_type,
            location_external_reference_id: s.location_external_reference_id,
            early_arrival: s.early_arrival,
            late_arrival: s.late_arrival,
          })),
        })
      ).statusCode,
    ).toBe(201);
    const after = await page('?page_size=10&sort=external_reference_id');
    expect(after.items.map((l: { external_reference_id: string }) => l.external_reference_id)).toEqual(['L-1', 'L-2']);
    expect(after.pagination).toMatchObject({ total: 2 });
    expect((await page('?page_size=10&equipment_type=REEFER')).items.map((l: { external_reference_id: string }) => l.external_reference_id)).toEqual(['L-2']);
    await page('?page_size=10&sort=external_reference_id');
    expect((await a.del('/v2/tms-api/loads/L-2')).statusCode).toBe(204);
    expect((await page('?page_size=10&sort=external_reference_id')).items.map((l: { external_reference_id: string }) => l.external_reference_id)).toEqual([
      'L-1',
    ]);
    expect((await page('?page_size=10&equipment_type=REEFER')).items).toEqual([]);
  });

  it('never answers one organization with another one’s record under the same reference', async () => {
    const a = await seeded();
    const b = await seeded();
    expect((await b.put('/v2/tms-api/loads/L-1', { description: 'Only B' })).statusCode).toBe(200);
    const fromA = json(await a.get('/v2/tms-api/loads/L-1'));
    const fromB = json(await b.get('/v2/tms-api/loads/L-1'));
    expect(json(await a.get('/v2/tms-api/loads/L-1')).id).toBe(fromA.id);
    expect(json(await b.get('/v2/tms-api/loads/L-1')).id).toBe(fromB.id);
    expect(fromA.id).not.toBe(fromB.id);
    expect(fromA.description).toBeNull();
    expect(fromB.description).toBe('Only B');
  });

  it('a key without the read scope is refused (D1 403) even when the answer is kept', async () => {
    const a = await seeded();
    const writer = await t.services.accounts.createKey(a.orgId, { name: 'w', externalSystem: 'vitest', scopes: ['write:loads'] });
    for (const url of ['/v2/tms-api/loads/L-1', '/v2/tms-api/loads?page_size=10']) {
      await a.get(url);
      const res = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': writer.key } });
      expect(res.statusCode).toBe(403);
      expect(json(res)).toEqual({ error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: read:loads' } });
    }
  });

  it.skipIf(isPostgres())('shows a write made by another process on the same database from the next request (SQLite)', async () => {
    const a = await seeded();
    await a.get('/v2/tms-api/loads/L-1');
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBeNull();
    const hits = await lookups(t, 'hit');
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBeNull();
    expect(await lookups(t, 'hit')).toBe(hits + 1);
    // Another instance: its own connection, its own write pipeline, the same file.
    const store = openDataStore(t.config.databaseUrl, { poolSize: 1 });
    const other = await buildApp({ config: t.config, store, logger: false, warmGeocoder: false });
    try {
      await other.services.loads.update(a.orgId, 'L-1', { description: 'written elsewhere' });
    } finally {
      await other.app.close();
      await store.close();
    }
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBe('written elsewhere');
  });
});

/** lanebridge_cache_lookups_total of the read cache, by result. */
async function lookups(app: TestApp, result: 'hit' | 'miss', cache: 'read' | 'key' = 'read'): Promise<number> {
  const metric = app.metrics.registry.getSingleMetric('lanebridge_cache_lookups_total')!;
  const { values } = await metric.get();
  return values.filter((v) => v.labels.cache === cache && v.labels.result === result).reduce((n, v) => n + v.value, 0);
}

describe.skipIf(isPostgres())('read cache: hits, and what a write evicts (SQLite)', () => {
  it('answers a repeated GET and a repeated page from memory (hits counted in /metrics)', async () => {
    const a = await seeded();
    await a.get('/v2/tms-api/loads/L-1');
    await a.get('/v2/tms-api/loads?page_size=10');
    const hits = await lookups(t, 'hit');
    await a.get('/v2/tms-api/loads/L-1');
    await a.get('/v2/tms-api/loads?page_size=10');
    await a.get('/v2/tms-api/customers/CUST-1');
    await a.get('/v2/tms-api/customers/CUST-1');
    expect(await lookups(t, 'hit')).toBe(hits + 3);
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/lanebridge_cache_lookups_total\{cache="read",result="hit"\} \d+/);
  });

  it('a write in another organization leaves this organization\u2019s kept answers in place', async () => {
    const a = await seeded();
    const b = await seeded();
    await a.get('/v2/tms-api/loads/L-1');
    await a.get('/v2/tms-api/customers/CUST-1');
    expect((await b.put('/v2/tms-api/loads/L-1', { description: 'B writes' })).statusCode).toBe(200);
    expect((await b.put('/v2/tms-api/customers/CUST-1', { name: 'B renames' })).statusCode).toBe(200);
    const hits = await lookups(t, 'hit');
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBeNull();
    expect(json(await a.get('/v2/tms-api/customers/CUST-1')).name).toBe('Acme Foods');
    expect(await lookups(t, 'hit')).toBe(hits + 2);
  });

  it('a load write keeps the kept customers, a customer rename drops the kept loads that show its name', async () => {
    const a = await seeded();
    await a.get('/v2/tms-api/customers/CUST-1');
    await a.get('/v2/tms-api/loads/L-1');
    expect((await a.put('/v2/tms-api/loads/L-1', { description: 'changed' })).statusCode).toBe(200);
    let hits = await lookups(t, 'hit');
    expect(json(await a.get('/v2/tms-api/customers/CUST-1')).name).toBe('Acme Foods');
    expect(await lookups(t, 'hit')).toBe(hits + 1);
    expect(json(await a.get('/v2/tms-api/loads/L-1')).description).toBe('changed');
    expect(await lookups(t, 'hit')).toBe(hits + 1);
    expect((await a.put('/v2/tms-api/customers/CUST-1', { name: 'Acme Frozen' })).statusCode).toBe(200);
    hits = await lookups(t, 'hit');
    expect(json(await a.get('/v2/tms-api/loads/L-1')).customer_name).toBe('Acme Frozen');
    expect(await lookups(t, 'hit')).toBe(hits);
  });

  it('keeps no answer read while something was written (its counters could be newer than its data)', async () => {
    const a = await seeded();
    const original = t.store.snapshot.bind(t.store);
    // Every request sees a write happen while it reads.
    t.store.snapshot = () => {
      const s = original();
      return s && { ...s, unchanged: () => false };
    };
    try {
      await a.get('/v2/tms-api/customers/CUST-1');
      const hits = await lookups(t, 'hit');
      await a.get('/v2/tms-api/customers/CUST-1');
      expect(await lookups(t, 'hit')).toBe(hits);
    } finally {
      t.store.snapshot = original;
    }
    await a.get('/v2/tms-api/customers/CUST-1');
    const hits = await lookups(t, 'hit');
    await a.get('/v2/tms-api/customers/CUST-1');
    expect(await lookups(t, 'hit')).toBe(hits + 1);
  });

  it('a customer and a load with the same reference have their own kept answers', async () => {
    const a = await seeded();
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'L-1', name: 'Named like a load' })).statusCode).toBe(201);
    for (let i = 0; i < 2; i++) {
      expect(json(await a.get('/v2/tms-api/loads/L-1')).customer_name).toBe('Acme Foods');
      expect(json(await a.get('/v2/tms-api/customers/L-1')).name).toBe('Named like a load');
    }
  });
});

describe('read cache: the store', () => {
  const versions = (loads: number, customers = 0) => ({ customers, carriers: 0, locations: 0, loads, market_rates: 0, users: 0, api_keys: 0, lane_history: 0 });
  const snapshot = (token: string, v: ReturnType<typeof versions>): DataSnapshot => ({ token, versions: async () => v, unchanged: () => true });

  it('holds an entry while its kinds\u2019 counters are unchanged, under any token, and stays within its bound', async () => {
    const cache = readCache({ maxChars: 9 });
    const s1 = snapshot('a', versions(1));
    expect(cache.lookup(s1, 'org', 'k')).toBeUndefined();
    cache.keep(s1, versions(1), 'org', 'k', ['loads'], 'body1');
    expect(cache.lookup(s1, 'org', 'k')).toBe('body1');
    // Another token, same counters: still holds (a write elsewhere). Another organization: its own entries.
    expect(await cache.lookup(snapshot('b', versions(1, 7)), 'org', 'k')).toBe('body1');
    expect(await cache.lookup(snapshot('b', versions(1)), 'other-org', 'k')).toBeUndefined();
    // The loads counter moved: the entry is dropped.
    expect(await cache.lookup(snapshot('c', versions(2)), 'org', 'k')).toBeUndefined();
    expect(await cache.lookup(snapshot('c', versions(1)), 'org', 'k')).toBeUndefined();
    cache.keep(s1, versions(1), 'org', 'k', ['loads'], 'body2');
    cache.keep(s1, versions(1), 'org', 'm', ['loads'], 'body3');
    // 10 characters > 9: the cache started again with the last body only.
    expect(cache.lookup(s1, 'org', 'k')).toBeUndefined();
    expect(cache.lookup(s1, 'org', 'm')).toBe('body3');
    const off = readCache({ enabled: false });
    off.keep(s1, versions(1), 'org', 'k', ['loads'], 'x');
    expect(off.enabled).toBe(false);
    expect(off.lookup(s1, 'org', 'k')).toBeUndefined();
  });
});

describe.skipIf(isPostgres())('key check kept in memory (SQLite)', () => {
  it('reuses a checked key across writes to records, and reads it again after any key write of its organization', async () => {
    const a = await seeded();
    await a.get('/v2/tms-api/customers/CUST-1');
    let hits = await lookups(t, 'hit', 'key');
    await a.get('/v2/tms-api/customers/CUST-1');
    expect(await lookups(t, 'hit', 'key')).toBe(hits + 1);
    // A load written in between: the key is still answered from memory.
    expect((await a.put('/v2/tms-api/loads/L-1', { description: 'changed' })).statusCode).toBe(200);
    hits = await lookups(t, 'hit', 'key');
    expect((await a.get('/v2/tms-api/customers/CUST-1')).statusCode).toBe(200);
    expect(await lookups(t, 'hit', 'key')).toBe(hits + 1);
    // Another key of the organization created: this one is read again (a miss), then kept again.
    await t.services.accounts.createKey(a.orgId, { name: 'second', externalSystem: 'vitest', scopes: ['read:loads'] });
    const misses = await lookups(t, 'miss', 'key');
    expect((await a.get('/v2/tms-api/customers/CUST-1')).statusCode).toBe(200);
    expect(await lookups(t, 'miss', 'key')).toBe(misses + 1);
  });

  it('a key revoked through another process fails from the next request', async () => {
    const a = await seeded();
    expect((await a.get('/v2/tms-api/customers/CUST-1')).statusCode).toBe(200);
    expect((await a.get('/v2/tms-api/customers/CUST-1')).statusCode).toBe(200);
    const store = openDataStore(t.config.databaseUrl, { poolSize: 1 });
    const other = await buildApp({ config: t.config, store, logger: false, warmGeocoder: false });
    try {
      await other.services.accounts.revokeKey(a.orgId, a.keyId);
    } finally {
      await other.app.close();
      await store.close();
    }
    const res = await a.get('/v2/tms-api/customers/CUST-1');
    expect(res.statusCode).toBe(401);
    expect(json(res)).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
  });
});
