import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { openDataStore } from '../../../src/lib/db/index.js';
import { SCOPES } from '../../../src/modules/accounts/scopes.js';
import { letTimePass, useApp, json, newTenant, isPostgres, startApp, testClock, uid, type Tenant, type TestApp } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { sql } from 'kysely';
import { cellOf } from '../../../src/domain/grid.js';
import { laneCellSql, watchOpenLoadsSql } from '../../../src/lib/db/migrations/0010_events.js';

// D11: the change feed. Every committed change writes its event in the same transaction; sequences are
// per organization, in commit order, with no gaps; a key sees the kinds it may read.

interface FeedEvent {
  id: string;
  type: string;
  sequence: number;
  timestamp: string;
  data: Record<string, any>;
}
interface FeedPage {
  items: FeedEvent[];
  next_after: number;
  has_more: boolean;
}

const t = useApp();

async function feed(a: Tenant, query = ''): Promise<FeedPage> {
  const res = await a.get(`/v2/tms-api/events${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return json<FeedPage>(res);
}

/** Every event of the tenant after `after`, paging with limit `limit`. */
async function allEvents(a: Tenant, after = 0, limit = 500): Promise<FeedEvent[]> {
  const out: FeedEvent[] = [];
  for (;;) {
    const page = await feed(a, `?after=${after}&limit=${limit}`);
    out.push(...page.items);
    after = page.next_after;
    if (!page.has_more) return out;
  }
}

const withoutRecommendations = (load: Record<string, unknown>) => {
  const { carrier_recommendations: _r, ...rest } = load;
  return rest;
};

describe('events of every type carry the record as GET returns it', () => {
  it('customers, carriers and locations: created, updated, deleted', async () => {
    const a = await newTenant(t);
    for (const [path, body, change] of [
      ['customers', { external_reference_id: 'C-1', name: 'Acme Foods' }, { name: 'Acme Foods Inc' }],
      [
        'carriers',
        { external_reference_id: 'K-1', name: 'Swift', contacts: [{ first_name: 'Dana', primary_email: 'dana@swift.example', is_primary_contact: true }] },
        { name: 'Swift Transport' },
      ],
      ['locations', { external_reference_id: 'L-1', name: 'Dallas DC', postal_code: '75201', state: 'TX' }, { name: 'Dallas Main DC' }],
    ] as const) {
      const singular = path.slice(0, -1);
      const before = (await allEvents(a)).length;
      expect((await a.post(`/v2/tms-api/${path}`, body)).statusCode).toBe(201);
      const created = json(await a.get(`/v2/tms-api/${path}/${body.external_reference_id}`));
      expect((await a.put(`/v2/tms-api/${path}/${body.external_reference_id}`, change)).statusCode).toBe(200);
      const updated = json(await a.get(`/v2/tms-api/${path}/${body.external_reference_id}`));
      expect((await a.del(`/v2/tms-api/${path}/${body.external_reference_id}`)).statusCode).toBe(204);
      const events = (await allEvents(a)).slice(before);
      expect(events.map((e) => e.type)).toEqual([`${singular}.created`, `${singular}.updated`, `${singular}.deleted`]);
      expect(events[0]!.data).toEqual(created);
      expect(events[1]!.data).toEqual(updated);
      expect(events[2]!.data).toEqual({ id: created.id, external_reference_id: body.external_reference_id });
      for (const e of events) {
        expect(e.id).toMatch(/^evt_[0-9a-z]{26}$/);
        expect(e.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
    }
  });

  it('loads: created, updated with status_changed beside it, deleted; market_rate.created is the snapshot', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const start = (await feed(a, '?limit=500')).next_after;
    expect((await a.post('/v2/tms-api/loads', dallasToHouston('LD-1', { financial_rates: [{ rate_entity: 'CUSTOMER', amount: 1800 }] }))).statusCode).toBe(201);
    const created = json(await a.get('/v2/tms-api/loads/LD-1'));
    expect((await a.put('/v2/tms-api/loads/LD-1', { status: 'COVERED', carrier_external_reference_id: 'CAR-1' })).statusCode).toBe(200);
    const updated = json(await a.get('/v2/tms-api/loads/LD-1'));
    const rate = await a.post('/v2/tms-api/market-rates', {
      origin: { postal_code: '75201', state: 'TX' },
      destination: { postal_code: '77002', state: 'TX' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.1,
    });
    expect(rate.statusCode, rate.body).toBe(201);
    expect((await a.del('/v2/tms-api/loads/LD-1')).statusCode).toBe(204);
    const events = await allEvents(a, start);
    expect(events.map((e) => e.type)).toEqual(['load.created', 'load.updated', 'load.status_changed', 'market_rate.created', 'load.deleted']);
    expect(events[0]!.data).toEqual(withoutRecommendations(created));
    expect(events[1]!.data).toEqual(withoutRecommendations(updated));
    expect(events[2]!.data).toEqual({ id: created.id, external_reference_id: 'LD-1', previous_status: 'ACTIVE', status: 'COVERED' });
    expect(events[3]!.data).toEqual(json(rate));
    expect(events[4]!.data).toEqual({ id: created.id, external_reference_id: 'LD-1' });
    // Sequences: strictly increasing by one, per organization.
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => start + 1 + i));
  });

  it("a batch's load events carry what GET returns, whether the write held the parts (full upserts) or not", async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    for (const [url, body] of [
      ['/v2/tms-api/customers', { external_reference_id: 'CUST-2', name: 'Bravo Goods' }],
      ['/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Northern Haul' }],
      ['/v2/tms-api/locations', { external_reference_id: 'AUS', name: 'Austin Yard', postal_code: '78701', state: 'TX' }],
    ] as const) {
      expect((await a.post(url, body)).statusCode).toBe(201);
    }
    // D8: loads without the caller's max_buy_rate are priced from this snapshot (the lane from the stops' places).
    const snapshot = await a.post('/v2/tms-api/market-rates', {
      origin: { postal_code: '75201', state: 'TX' },
      destination: { postal_code: '77002', state: 'TX' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.4,
    });
    expect(snapshot.statusCode, snapshot.body).toBe(201);
    const rep = { name: 'Dana Rep', email: 'dana@example.com' };
    for (const ref of ['E-1', 'E-2', 'E-3', 'E-4']) {
      expect(
        (
          await a.post(
            '/v2/tms-api/loads',
            dallasToHouston(ref, { carrier_external_reference_id: 'CAR-1', financial_rates: [{ rate_entity: 'CUSTOMER', amount: 1000 }] }),
          )
        ).statusCode,
      ).toBe(201);
    }
    const start = (await feed(a, '?limit=500')).next_after;
    const toAustin = dallasToHouston('x').stops.map((s, i) => (i === 1 ? { ...s, location_external_reference_id: 'AUS' } : s));
    const res = await a.post('/v2/tms-api/batch/loads', {
      items: [
        // New, with reps and a carrier.
        {
          operation: 'create',
          load: dallasToHouston('N-1', {
            carrier_external_reference_id: 'CAR-2',
            sales_rep: rep,
            financial_rates: [{ rate_entity: 'CARRIER', amount: 900, currency: 'CAD' }],
          }),
        },
        // Full upsert: stops, rates, customer and carrier all change.
        {
          operation: 'upsert',
          external_reference_id: 'E-1',
          load: {
            ...dallasToHouston('E-1'),
            stops: toAustin,
            customer_external_reference_id: 'CUST-2',
            carrier_external_reference_id: 'CAR-2',
            financial_rates: [
              { rate_entity: 'CUSTOMER', amount: 1234.56 },
              { rate_entity: 'CARRIER', amount: 1000.1 },
            ],
          },
        },
        // Full upsert with the same stops and rates (only the status changes): the stored ones stand.
        {
          operation: 'upsert',
          external_reference_id: 'E-2',
          load: dallasToHouston('E-2', {
            status: 'COVERED',
            carrier_external_reference_id: 'CAR-1',
            financial_rates: [{ rate_entity: 'CUSTOMER', amount: 1000 }],
          }),
        },
        // Partial upsert (no stops, no customer): read back.
        { operation: 'upsert', external_reference_id: 'E-3', load: { description: 'partial' } },
        // Full, then partial, in one batch: the answer is the load as it stands at commit.
        { operation: 'upsert', external_reference_id: 'E-4', load: { ...dallasToHouston('E-4'), stops: toAustin, carrier_external_reference_id: null } },
        { operation: 'upsert', external_reference_id: 'E-4', load: { description: 'then partial', dispatcher_rep: rep } },
        // Fails after its customer and carrier were looked up: leaves nothing behind.
        {
          operation: 'upsert',
          external_reference_id: 'E-1',
          load: { ...dallasToHouston('E-1'), stops: [{ ...toAustin[0]!, location_external_reference_id: 'NOWHERE' }, toAustin[1]!] },
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res).results.map((r: { success: boolean }) => r.success)).toEqual([true, true, true, true, true, true, false]);
    const events = (await allEvents(a, start)).filter((e) => e.type === 'load.created' || e.type === 'load.updated');
    expect(events.map((e) => e.data.external_reference_id)).toEqual(['N-1', 'E-1', 'E-2', 'E-3', 'E-4', 'E-4']);
    for (const e of events)
      expect(e.data, e.data.external_reference_id).toEqual(withoutRecommendations(json(await a.get(`/v2/tms-api/loads/${e.data.external_reference_id}`))));
    // The parts did differ from what the loads had (the comparison above is not of unchanged loads).
    const byRef = new Map(events.map((e) => [e.data.external_reference_id, e.data]));
    expect(byRef.get('E-1')!.stops.map((s: any) => s.location_name)).toEqual(['Dallas DC', 'Austin Yard']);
    expect(byRef.get('E-1')!.customer_name).toBe('Bravo Goods');
    expect(byRef.get('E-1')!.carrier_name).toBe('Northern Haul');
    expect(byRef.get('E-2')!.max_buy_rate_source).toBe('market');
    expect(byRef.get('N-1')!.sales_rep.email).toBe('dana@example.com');
    expect(byRef.get('E-4')!.carrier_id).toBeNull();

    // A batch of full writes only (every load's parts held: PostgreSQL reads no documents either).
    const next = (await feed(a, '?limit=500')).next_after;
    const full = await a.post('/v2/tms-api/batch/loads', {
      items: [
        {
          operation: 'upsert',
          external_reference_id: 'E-2',
          load: {
            ...dallasToHouston('E-2'),
            stops: toAustin,
            carrier_external_reference_id: 'CAR-2',
            dispatcher_rep: rep,
            financial_rates: [{ rate_entity: 'CARRIER', amount: 777 }],
          },
        },
        { operation: 'create', load: dallasToHouston('N-2', { customer_external_reference_id: 'CUST-2', max_buy_rate: 1500 }) },
      ],
    });
    expect(json(full).success_count, full.body).toBe(2);
    const fullEvents = (await allEvents(a, next)).filter((e) => e.type === 'load.created' || e.type === 'load.updated');
    expect(fullEvents.map((e) => e.data.external_reference_id)).toEqual(['E-2', 'N-2']);
    for (const e of fullEvents)
      expect(e.data, e.data.external_reference_id).toEqual(withoutRecommendations(json(await a.get(`/v2/tms-api/loads/${e.data.external_reference_id}`))));
    expect(fullEvents[0]!.data.stops.map((s: any) => s.location_name)).toEqual(['Dallas DC', 'Austin Yard']);
  });

  it('a load updated without a status change has no status_changed event', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/loads', dallasToHouston('LD-2'));
    const start = (await feed(a, '?limit=500')).next_after;
    expect((await a.put('/v2/tms-api/loads/LD-2', { description: 'fragile' })).statusCode).toBe(200);
    expect((await allEvents(a, start)).map((e) => e.type)).toEqual(['load.updated']);
  });
});

describe('what writes no event', () => {
  it('an unchanged upsert (single or batch) writes none', async () => {
    const a = await newTenant(t);
    const body = { external_reference_id: 'C-U', name: 'Same' };
    expect((await a.post('/v2/tms-api/customers', body)).statusCode).toBe(201);
    const after = (await feed(a)).next_after;
    expect((await a.put('/v2/tms-api/customers/C-U', body)).statusCode).toBe(200);
    const batch = await a.post('/v2/tms-api/batch/customers', { items: [{ operation: 'upsert', external_reference_id: 'C-U', customer: body }] });
    expect(batch.statusCode, batch.body).toBe(200);
    expect(await feed(a, `?after=${after}`)).toEqual({ items: [], next_after: after, has_more: false });
  });

  it('failed batch items write none; the others write theirs, in item order', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const start = (await feed(a, '?limit=500')).next_after;
    const res = await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: dallasToHouston('B-1') },
        { operation: 'create', load: dallasToHouston('B-2', { customer_external_reference_id: 'NOPE' }) },
        { operation: 'create', load: dallasToHouston('B-1') },
        { operation: 'upsert', external_reference_id: 'B-3', load: dallasToHouston('B-3', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }) },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const statuses = json(res).results.map((r: { success: boolean }) => r.success);
    expect(statuses).toEqual([true, false, false, true]);
    const events = (await allEvents(a, start)).filter((e) => e.type !== 'load.recommendations_changed');
    expect(events.map((e) => [e.type, e.data.external_reference_id])).toEqual([
      ['load.created', 'B-1'],
      ['load.created', 'B-3'],
    ]);
    expect(events[1]!.data).toEqual(withoutRecommendations(json(await a.get('/v2/tms-api/loads/B-3'))));
  });
});

describe('the feed', () => {
  it('pages with after, limit, next_after and has_more, and filters by types', async () => {
    const a = await newTenant(t);
    for (let i = 0; i < 5; i++) await a.post('/v2/tms-api/customers', { external_reference_id: `C-${i}`, name: `Customer ${i}` });
    await a.put('/v2/tms-api/customers/C-0', { name: 'Renamed' });
    const first = await feed(a, '?limit=2');
    expect(first.items.map((e) => e.sequence)).toEqual([1, 2]);
    expect(first).toMatchObject({ next_after: 2, has_more: true });
    const second = await feed(a, '?after=2&limit=3');
    expect(second.items.map((e) => e.sequence)).toEqual([3, 4, 5]);
    expect(second).toMatchObject({ next_after: 5, has_more: true });
    const last = await feed(a, '?after=5&limit=3');
    expect(last.items.map((e) => e.type)).toEqual(['customer.updated']);
    expect(last).toMatchObject({ next_after: 6, has_more: false });
    expect(await feed(a, '?after=6')).toEqual({ items: [], next_after: 6, has_more: false });
    const updates = await feed(a, '?types=customer.updated,load.created');
    expect(updates.items.map((e) => [e.type, e.sequence])).toEqual([['customer.updated', 6]]);
    expect(updates).toMatchObject({ next_after: 6, has_more: false });
  });

  it('refuses unknown types, and limits outside 1..500, with the D1 422', async () => {
    const a = await newTenant(t);
    const bad = await a.get('/v2/tms-api/events?types=customer.created,load.exploded');
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail).toEqual([
      expect.objectContaining({ type: 'enum', loc: ['query', 'types'], msg: expect.stringContaining("unknown: 'load.exploded'") }),
    ]);
    for (const q of ['limit=0', 'limit=501', 'after=-1', 'after=x']) {
      const res = await a.get(`/v2/tms-api/events?${q}`);
      expect(res.statusCode, q).toBe(422);
      expect(json(res).detail[0].loc[0], q).toBe('query');
    }
  });

  it('shows a key only the kinds it may read; a key with none gets the D1 403 naming read:loads', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/loads', dallasToHouston('S-1'));
    await a.post('/v2/tms-api/market-rates', {
      origin: { postal_code: '75201', state: 'TX' },
      destination: { postal_code: '77002', state: 'TX' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
    });
    const { accounts } = t.services;
    const keyWith = async (scopes: any[]) => {
      const k = await accounts.createKey(a.orgId, { name: uid('k'), externalSystem: 'vitest', scopes });
      return (url: string) => t.app.inject({ method: 'GET', url, headers: { 'x-api-key': k.key } });
    };
    const customersOnly = await keyWith(['read:customers']);
    const seen = json(await customersOnly('/v2/tms-api/events?limit=500')).items.map((e: FeedEvent) => e.type);
    expect(seen).toEqual(['customer.created']);
    const rates = await keyWith(['write:rates', 'read:locations']);
    expect(json(await rates('/v2/tms-api/events')).items.map((e: FeedEvent) => e.type)).toEqual([
      'location.created',
      'location.created',
      'market_rate.created',
    ]);
    const writer = await keyWith(['write:loads', 'write:customers']);
    const refused = await writer('/v2/tms-api/events');
    expect(refused.statusCode).toBe(403);
    expect(json(refused)).toEqual({ error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: read:loads' } });
  });

  it('never shows another organization’s events', async () => {
    const a = await newTenant(t);
    const b = await newTenant(t);
    await a.post('/v2/tms-api/customers', { external_reference_id: 'SECRET', name: 'Only A' });
    await b.post('/v2/tms-api/customers', { external_reference_id: 'MINE', name: 'Only B' });
    const bs = await allEvents(b);
    expect(bs.map((e) => e.data.external_reference_id)).toEqual(['MINE']);
    expect(bs[0]!.sequence).toBe(1);
  });

  it('is described in the OpenAPI document with its 410', async () => {
    const doc = json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }));
    const op = doc.paths['/v2/tms-api/events'].get;
    expect(op.operationId).toBe('listEvents');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '403', '410', '422']));
    expect(
      op.parameters
        .filter((p: { name?: string }) => p.name)
        .map((p: { name: string }) => p.name)
        .sort(),
    ).toEqual(['after', 'limit', 'types']);
    // D16: every operation takes Prefer (handling=strict), declared once.
    expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/Prefer' });
  });
});

describe('retention', () => {
  it('prunes events past EVENT_RETENTION_DAYS; an after below what is kept is 410 with the D11 body', async () => {
    const clock = testClock(Date.parse('2026-01-01T00:00:00.000Z'));
    const r = await startApp({ eventRetentionDays: 30 }, { clock });
    try {
      const a = await newTenant(r);
      for (let i = 0; i < 3; i++) await a.post('/v2/tms-api/customers', { external_reference_id: `OLD-${i}`, name: 'old' });
      clock.advance(31 * 86_400_000);
      await a.post('/v2/tms-api/customers', { external_reference_id: 'NEW', name: 'new' });
      expect(await r.events.prune(r.store.db, 2)).toBeGreaterThanOrEqual(3);
      for (const after of [0, 2]) {
        const gone = await a.get(`/v2/tms-api/events?after=${after}`);
        expect(gone.statusCode).toBe(410);
        expect(json(gone)).toEqual({ detail: `Events after sequence ${after} are no longer kept; resynchronise with the list endpoints and updated_since` });
        expect(gone.headers['x-events-kept-after']).toBe('3');
      }
      const kept = json(await a.get('/v2/tms-api/events?after=3'));
      expect(kept.items.map((e: FeedEvent) => [e.sequence, e.data.external_reference_id])).toEqual([[4, 'NEW']]);
      // A second pass has nothing left to prune.
      expect(await r.events.prune(r.store.db)).toBe(0);
    } finally {
      await r.close();
    }
  });
});

describe('concurrent writers', () => {
  it('a reader paging while 60 writes run (40 at once) (two app instances on PostgreSQL) sees every event once, in sequence order, without gaps', async () => {
    const second = isPostgres() ? await secondInstance(t) : null;
    try {
      const a = await newTenant(t, SCOPES, { perMinute: 100_000, perDay: 1_000_000 });
      await seedFreight(a);
      const apps = second ? [t.app, second.app] : [t.app];
      const start = (await feed(a, '?limit=500')).next_after;
      let writing = true;
      const seen: FeedEvent[] = [];
      const reader = (async () => {
        let after = start;
        // Bounded: a reader that never catches up fails the test instead of running on.
        const until = Date.now() + 20_000;
        while (Date.now() < until) {
          const done = !writing;
          const page = await feed(a, `?after=${after}&limit=7`);
          seen.push(...page.items);
          after = page.next_after;
          if (done && !page.has_more) return;
          if (!page.has_more) await letTimePass(2);
        }
        throw new Error('the reader never reached the end of the feed');
      })();
      const send = (i: number, method: 'POST' | 'PUT') => {
        const ref = `CW-${i % 20}`;
        const url = method === 'POST' ? '/v2/tms-api/loads' : `/v2/tms-api/loads/${ref}`;
        return apps[i % apps.length]!.inject({ method, url, headers: a.headers, payload: dallasToHouston(ref, { description: `write ${i}` }) });
      };
      // 20 creations at once, then 40 updates of the same loads at once, spread over both instances.
      let results;
      try {
        results = [
          ...(await Promise.all(Array.from({ length: 20 }, (_, i) => send(i, 'POST')))),
          ...(await Promise.all(Array.from({ length: 40 }, (_, i) => send(20 + i, 'PUT')))),
        ];
      } finally {
        writing = false;
      }
      for (const res of results) expect([200, 201], res.body).toContain(res.statusCode);
      await reader;
      const sequences = seen.map((e) => e.sequence);
      expect(sequences).toEqual(sequences.map((_, i) => start + 1 + i));
      expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
      // Every acknowledged write is there: 20 creations and 40 updates (each changes the description).
      expect(seen.filter((e) => e.type === 'load.created')).toHaveLength(20);
      expect(seen.filter((e) => e.type === 'load.updated')).toHaveLength(40);
    } finally {
      await second?.close();
    }
  });
});

/** Another app instance on the same PostgreSQL database (its own pool), as a second process would be. */
async function secondInstance(first: TestApp) {
  const store = openDataStore(first.config.databaseUrl, { poolSize: 5 });
  const built = await buildApp({ logger: false, clock: testClock(), config: first.config, store });
  return {
    app: built.app,
    async close() {
      await built.app.close();
      await store.close();
    },
  };
}

describe('load.recommendations_changed', () => {
  const delivered = (ref: string, carrier: string) => dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: carrier });
  const changes = async (a: Tenant, after: number) => (await allEvents(a, after)).filter((e) => e.type === 'load.recommendations_changed');

  it('is written for an open load when history on its lane changes its ranked carriers, once per change, with what GET shows', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Second Carrier' });
    await a.post('/v2/tms-api/loads', dallasToHouston('OPEN-1'));
    await t.recommendations.idle();
    const start = (await feed(a, '?limit=500')).next_after;
    expect(await changes(a, 0)).toEqual([]); // no history yet: nothing to announce

    await a.post('/v2/tms-api/loads', delivered('H-1', 'CAR-1'));
    await t.recommendations.idle();
    const first = await changes(a, start);
    expect(first).toHaveLength(1);
    const open = json(await a.get('/v2/tms-api/loads/OPEN-1'));
    expect(first[0]!.data).toEqual({ id: open.id, external_reference_id: 'OPEN-1', carrier_recommendations: open.carrier_recommendations });
    expect(open.carrier_recommendations.map((r: any) => r.carrier_external_reference_id)).toEqual(['CAR-1']);

    // The same carriers in the same order: nothing new to announce.
    const mark = (await feed(a, '?limit=500&after=' + start)).next_after;
    await a.post('/v2/tms-api/loads', delivered('H-2', 'CAR-1'));
    await t.recommendations.idle();
    expect(await changes(a, mark)).toEqual([]);

    // Two more deliveries by CAR-2 in one batch: one event for the run, CAR-2 now first.
    const batch = await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: delivered('H-3', 'CAR-2') },
        { operation: 'create', load: delivered('H-4', 'CAR-2') },
        { operation: 'create', load: delivered('H-5', 'CAR-2') },
      ],
    });
    expect(json(batch).success_count).toBe(3);
    await t.recommendations.idle();
    const second = await changes(a, mark);
    expect(second).toHaveLength(1);
    expect(second[0]!.data.carrier_recommendations.map((r: any) => r.carrier_external_reference_id)).toEqual(['CAR-2', 'CAR-1']);
    // Delivered loads are not watched; a load that is no longer open gets no more announcements.
    await a.put('/v2/tms-api/loads/OPEN-1', { status: 'COVERED' });
    const closedMark = (await feed(a, '?limit=500&after=' + mark)).next_after;
    await a.post('/v2/tms-api/loads', delivered('H-6', 'CAR-1'));
    await a.post('/v2/tms-api/loads', delivered('H-7', 'CAR-1'));
    await a.post('/v2/tms-api/loads', delivered('H-8', 'CAR-1'));
    await t.recommendations.idle();
    expect(await changes(a, closedMark)).toEqual([]);
  });

  it('is followed up only for changes that can move recommendations (the outbox marks them)', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/locations', { external_reference_id: 'AUS', name: 'Austin', postal_code: '78701', state: 'TX' });
    await a.post('/v2/tms-api/loads', dallasToHouston('F-1'));
    await a.put('/v2/tms-api/loads/F-1', { description: 'no lane change' });
    const moved = dallasToHouston('F-1').stops.map((s, i) => (i === 1 ? { ...s, location_external_reference_id: 'AUS' } : s));
    await a.put('/v2/tms-api/loads/F-1', { stops: moved });
    const sameEnds = moved.map((s, i) => (i === 1 ? { ...s, late_arrival: '2026-03-03T13:00:00.000Z' } : s));
    await a.put('/v2/tms-api/loads/F-1', { stops: sameEnds });
    await a.put('/v2/tms-api/loads/F-1', { carrier_external_reference_id: 'CAR-1' });
    await t.recommendations.idle();
    const rows = await t.store.db
      .selectFrom('events')
      .select(['type', 'lanes'])
      .where('org_id', '=', a.orgId)
      .where('type', 'like', 'load.%')
      .orderBy('sequence')
      .execute();
    expect(rows.map((r) => [r.type, r.lanes])).toEqual([
      ['load.created', '[]'],
      ['load.updated', null], // description
      ['load.updated', '[]'], // the destination moved
      ['load.updated', null], // a window changed, same places
      ['load.updated', '[]'], // a carrier assigned
    ]);
  });

  it('the migration watches the open loads already stored (not delivered ones), with the lane cells the follow-up computes', async () => {
    const points = [
      [32.7767, -96.797],
      [29.76, -95.37],
      [49.28, -123.12],
      [19.43, -99.13],
      [-33.9, 151.2],
      [0, 0],
      [89.99999, 180],
      [-90, -180],
      [45.5, -73.56],
      [21.3, -157.86],
    ];
    const values = sql.join(
      points.map(([lat, lon]) => sql`select cast(${lat} as double precision) as latitude, cast(${lon} as double precision) as longitude`),
      sql` union all `,
    );
    const dialect = isPostgres() ? 'postgres' : 'sqlite';
    const { rows } = await sql<{ cell: number }>`select ${sql.raw(laneCellSql(dialect, 'p'))} as cell from (${values}) as p`.execute(t.store.db);
    expect(rows.map((r) => Number(r.cell))).toEqual(points.map(([lat, lon]) => cellOf(lat!, lon!)));

    // Open loads written by a process whose follow-up never ran (as loads stored before the migration).
    const quiet = await buildApp({
      logger: false,
      clock: testClock(),
      config: t.config,
      store: openDataStore(t.config.databaseUrl, { poolSize: 2 }),
      recommendationFollowUp: 'manual',
    });
    const a = await newTenant(t);
    try {
      await seedFreight(a);
      for (const [ref, extra] of [
        ['W-1', {}],
        ['W-2', { carrier_external_reference_id: 'CAR-1' }],
        ['W-3', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }],
      ] as const) {
        const res = await quiet.app.inject({ method: 'POST', url: '/v2/tms-api/loads', headers: a.headers, payload: dallasToHouston(ref, extra) });
        expect(res.statusCode, res.body).toBe(201);
      }
    } finally {
      await quiet.app.close();
    }
    const watched = () =>
      t.store.db
        .selectFrom('recommendation_watch')
        .select(['load_id', 'origin_cell', 'destination_cell', 'carrier_id', 'ranked'])
        .where('org_id', '=', a.orgId)
        .orderBy('load_id')
        .execute();
    expect(await watched()).toEqual([]);
    await sql.raw(watchOpenLoadsSql(dialect)).execute(t.store.db);
    const loads = await Promise.all(['W-1', 'W-2'].map(async (ref) => json(await a.get(`/v2/tms-api/loads/${ref}`))));
    const dallas = cellOf(32.7904, -96.8044);
    const houston = json(await a.get('/v2/tms-api/locations/HOU'));
    expect((await watched()).map((w) => ({ ...w, origin_cell: Number(w.origin_cell), destination_cell: Number(w.destination_cell) }))).toEqual(
      loads
        .map((l) => ({
          load_id: l.id,
          origin_cell: dallas,
          destination_cell: cellOf(houston.latitude, houston.longitude),
          carrier_id: l.carrier_id,
          ranked: '[]',
        }))
        .sort((x, y) => (x.load_id < y.load_id ? -1 : 1)),
    );
  });

  it('is not lost when the process that wrote the history stops before following it up: another one catches up from the outbox', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/loads', dallasToHouston('OPEN-2'));
    await t.recommendations.idle();
    // A process whose follow-up never runs (as if killed right after answering the write).
    const stalled = await buildApp({
      logger: false,
      clock: testClock(),
      config: t.config,
      store: openDataStore(t.config.databaseUrl, { poolSize: 2 }),
      recommendationFollowUp: 'manual',
    });
    try {
      const res = await stalled.app.inject({ method: 'POST', url: '/v2/tms-api/loads', headers: a.headers, payload: delivered('H-9', 'CAR-1') });
      expect(res.statusCode, res.body).toBe(201);
    } finally {
      await stalled.app.close();
    }
    expect(await changes(a, 0)).toEqual([]);
    await t.recommendations.sweep();
    const caught = await changes(a, 0);
    expect(caught.map((e) => e.data.external_reference_id)).toEqual(['OPEN-2']);
    // A second sweep finds nothing left.
    await t.recommendations.sweep();
    expect(await changes(a, 0)).toHaveLength(1);
  });

  it('a pass announcing more loads than one transaction writes (100) writes them in slices: every open load once, the cursor at the end; two processes passing at once never announce one twice', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    for (let b = 0; b < 3; b++) {
      const items = Array.from({ length: 85 }, (_, i) => ({ operation: 'create', load: dallasToHouston(`SL-${b * 85 + i}`) }));
      expect(json(await a.post('/v2/tms-api/batch/loads', { items })).success_count).toBe(85);
    }
    await t.recommendations.idle();
    expect(await changes(a, 0)).toEqual([]);
    // History written by a process whose follow-up never runs; then this process and another pass over
    // it at the same moment (on SQLite the second is this one again: one file, one writer).
    const other = await buildApp({
      logger: false,
      clock: testClock(),
      config: t.config,
      store: openDataStore(t.config.databaseUrl, { poolSize: 2 }),
      recommendationFollowUp: 'manual',
    });
    try {
      const res = await other.app.inject({ method: 'POST', url: '/v2/tms-api/loads', headers: a.headers, payload: delivered('SL-H', 'CAR-1') });
      expect(res.statusCode, res.body).toBe(201);
      const passes = [t.recommendations.schedule(a.orgId), (isPostgres() ? other : t).recommendations.schedule(a.orgId)];
      await Promise.all(passes);
    } finally {
      await other.app.close();
    }
    await t.recommendations.idle();
    const announced = await changes(a, 0);
    expect(announced).toHaveLength(255);
    expect(new Set(announced.map((e) => e.data.external_reference_id)).size).toBe(255);
    for (const e of announced) expect(e.data.carrier_recommendations.map((r: any) => r.carrier_external_reference_id)).toEqual(['CAR-1']);
    // Nothing is left to announce, and the cursor reaches the end.
    await t.recommendations.sweep();
    expect(await changes(a, 0)).toHaveLength(255);
    const [cursor] = await t.store.db.selectFrom('org_versions').select(['recommendations_after', 'events']).where('org_id', '=', a.orgId).execute();
    expect(Number(cursor!.recommendations_after)).toBe(Number(cursor!.events));
  });
});
