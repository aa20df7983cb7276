import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant, type TestApp } from '../../helpers.js';

const t = useApp();

const batch = '/v2/tms-api/batch/loads';

async function seeded(app: TestApp = t): Promise<Tenant> {
  const a = await newTenant(app);
  await a.post('/v2/tms-api/customers', { external_reference_id: 'CUST-1', name: 'Acme' });
  await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-1', name: 'Swift' });
  // One by one: the deadline test's app gives every batch request 1 ms (D6a: one deadline on every batch endpoint).
  for (const location of [
    { external_reference_id: 'DAL', name: 'Dallas', postal_code: '75201', state: 'TX' },
    { external_reference_id: 'HOU', name: 'Houston', postal_code: '77002', state: 'TX' },
  ]) {
    expect((await a.post('/v2/tms-api/locations', location)).statusCode).toBe(201);
  }
  return a;
}

const stops = [
  { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
  { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00Z', late_arrival: '2026-03-03T12:00:00Z' },
];
const load = (extra: Record<string, unknown> = {}) => ({
  equipment_type: 'DRY_VAN',
  transport_mode: 'FTL',
  customer_external_reference_id: 'CUST-1',
  stops,
  ...extra,
});

describe('batch loads', () => {
  it('upserts 100 loads with two stops each in one request', async () => {
    const a = await seeded();
    const items = Array.from({ length: 100 }, (_, i) => ({
      operation: 'upsert',
      external_reference_id: `L-${String(i).padStart(3, '0')}`,
      load: load({ financial_rates: [{ rate_entity: 'CARRIER', amount: 1000 + i }] }),
    }));
    const body = json(await a.post(batch, { items }));
    expect(body).toMatchObject({ success_count: 100, error_count: 0 });
    expect(body.results.every((r: any, i: number) => r.index === i && r.success && /^load_/.test(r.id))).toBe(true);
    const page = json(await a.get('/v2/tms-api/loads?page_size=100&sort=external_reference_id'));
    expect(page.pagination.total).toBe(100);
    expect(page.items[42]).toMatchObject({ external_reference_id: 'L-042', financial_rates: [expect.objectContaining({ amount: 1042 })] });
    expect(page.items[42].stops).toHaveLength(2);
    // Upserting again updates instead of duplicating.
    const again = json(await a.post(batch, { items: items.map((it) => ({ ...it, load: { status: 'DELIVERED' } })) }));
    expect(again.success_count).toBe(100);
    expect(json(await a.get('/v2/tms-api/loads?status=DELIVERED')).pagination.total).toBe(100);
  });

  it('mixes successes and each kind of failure; failed items leave nothing, successes stay', async () => {
    const a = await seeded();
    await a.post('/v2/tms-api/loads', { external_reference_id: 'EXISTS', ...load() });
    await a.post('/v2/tms-api/loads', { external_reference_id: 'DOOMED', ...load() });
    const res = await a.post(batch, {
      items: [
        { operation: 'create', load: { external_reference_id: 'NEW-1', ...load() } },
        { operation: 'create', external_reference_id: 'EXISTS', load: load() },
        { operation: 'update', external_reference_id: 'GHOST', load: { status: 'SPOT' } },
        {
          operation: 'create',
          external_reference_id: 'BAD-LOC',
          load: load({ stops: [stops[0], { ...stops[1], location_external_reference_id: 'NOWHERE' }] }),
        },
        { operation: 'upsert', external_reference_id: 'HALF', load: { status: 'SPOT' } },
        { operation: 'delete', external_reference_id: 'DOOMED' },
        { operation: 'delete', external_reference_id: 'NEVER' },
        { operation: 'update', external_reference_id: 'EXISTS', load: { carrier_external_reference_id: 'CAR-1', status: 'covered' } },
        {
          operation: 'create',
          external_reference_id: 'BAD-CUST',
          load: load({ customer_external_reference_id: 'NOPE', financial_rates: [{ rate_entity: 'CARRIER', amount: 5 }] }),
        },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    const summary = body.results.map((r: any) => [r.external_reference_id, r.operation, r.success, r.error?.status ?? null]);
    expect(summary).toEqual([
      ['NEW-1', 'create', true, null],
      ['EXISTS', 'create', false, 409],
      ['GHOST', 'update', false, 404],
      ['BAD-LOC', 'create', false, 422],
      ['HALF', 'upsert', false, 422],
      ['DOOMED', 'delete', true, null],
      ['NEVER', 'delete', false, 404],
      ['EXISTS', 'update', true, null],
      ['BAD-CUST', 'create', false, 422],
    ]);
    expect(body).toMatchObject({ success_count: 3, error_count: 6 });
    expect(body.results[3].error.detail[0].loc).toEqual(['body', 'items', 3, 'load', 'stops', 1, 'location_external_reference_id']);
    expect(body.results[4].error.detail.map((d: any) => d.loc.join('.'))).toEqual([
      'body.items.4.load.equipment_type',
      'body.items.4.load.transport_mode',
      'body.items.4.load.customer_external_reference_id',
      'body.items.4.load.stops',
    ]);
    expect(body.results[6].error).toEqual({ status: 404, detail: "Load with external_reference_id 'NEVER' not found" });
    expect(body.results[5].id).toMatch(/^load_/);
    const refs = json(await a.get('/v2/tms-api/loads?sort=external_reference_id')).items.map((l: any) => [
      l.external_reference_id,
      l.status,
      l.carrier_external_reference_id,
    ]);
    expect(refs).toEqual([
      ['EXISTS', 'COVERED', 'CAR-1'],
      ['NEW-1', 'ACTIVE', null],
    ]);
    const orphans = await t.store.db.selectFrom('load_rates').select('id').where('org_id', '=', a.orgId).execute();
    expect(orphans).toEqual([]);
  });

  it('refuses 101 items and an unknown operation for the whole request', async () => {
    const a = await seeded();
    const many = await a.post(batch, { items: Array.from({ length: 101 }, () => ({ operation: 'delete', external_reference_id: 'x' })) });
    expect(json(many).detail).toEqual([{ type: 'too_long', loc: ['body', 'items'], msg: 'List should have at most 100 items after validation, not 101' }]);
    const op = await a.post(batch, { items: [{ operation: 'merge', external_reference_id: 'x' }] });
    expect(json(op).detail).toEqual([
      { type: 'enum', loc: ['body', 'items', 0, 'operation'], msg: "Input should be 'create', 'update', 'upsert' or 'delete'" },
    ]);
  });

  it('concurrent upserts of one load make one record and no 5xx', async () => {
    const a = await seeded();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        a.post(batch, { items: [{ operation: 'upsert', external_reference_id: 'RACE', load: load({ description: `writer ${i}` }) }] }),
      ),
    );
    for (const r of results) {
      expect(r.statusCode).toBe(200);
      expect(json(r).results[0]).toMatchObject({ success: true });
    }
    const singles = await Promise.all(Array.from({ length: 4 }, () => a.put('/v2/tms-api/loads/RACE', { status: 'SPOT' })));
    expect(singles.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    const page = json(await a.get('/v2/tms-api/loads'));
    expect(page.pagination.total).toBe(1);
    const stopsLeft = await t.store.db.selectFrom('load_stops').select('id').where('org_id', '=', a.orgId).execute();
    expect(stopsLeft).toHaveLength(2);
  });

  it('concurrent single creates of one load: one 201, the others the D1 409, no 5xx', async () => {
    const a = await seeded();
    const results = await Promise.all(Array.from({ length: 6 }, () => a.post('/v2/tms-api/loads', load({ external_reference_id: 'RACE-CREATE' }))));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.statusCode === 409))
      expect(json(r)).toEqual({ detail: "Load with external_reference_id 'RACE-CREATE' already exists" });
    expect(json(await a.get('/v2/tms-api/loads')).pagination.total).toBe(1);
  });

  it('reports items not started by the deadline as failed (503) instead of hanging', async () => {
    const { startApp: start } = await import('../../helpers.js');
    const quick = await start({ loadBatchDeadlineMs: 1 });
    try {
      const a = await seeded(quick);
      const items = Array.from({ length: 40 }, (_, i) => ({ operation: 'create', external_reference_id: `D${i}`, load: load() }));
      const body = json(await a.post(batch, { items }));
      expect(body.results).toHaveLength(40);
      const late = body.results.filter((r: any) => r.error?.status === 503);
      expect(late.length).toBeGreaterThan(0);
      expect(late[0].error).toEqual({ status: 503, detail: 'The batch ran out of time before this item' });
      expect(body.success_count + late.length).toBe(40);
      const total = json(await a.get('/v2/tms-api/loads?page_size=100')).pagination.total;
      expect(total).toBe(body.success_count);
    } finally {
      await quick.close();
    }
  });
});
