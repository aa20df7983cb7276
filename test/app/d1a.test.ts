import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant } from '../helpers.js';
import { dallasToHouston, seedFreight } from '../fixtures.js';

// D1a (DECISIONS.md): every problem in one 422, the batch echo, blank references, a state that
// contradicts the coordinates, and the currency of average_carrier_rate. Runs on both engines.

const t = useApp();

const loads = '/v2/tms-api/loads';
const locs = (body: { detail: { loc: unknown[] }[] }) => body.detail.map((d) => d.loc.join('.')).sort();

async function countOf(a: Tenant, table: 'loads' | 'customers' | 'locations' | 'carriers') {
  const r = await t.store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', a.orgId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

/** A load body with three problems that need the database and one window reversed. */
function troubled(ref: string, extra: Record<string, unknown> = {}) {
  return dallasToHouston(ref, {
    customer_external_reference_id: 'NO-SUCH-CUSTOMER',
    carrier_external_reference_id: 'NO-SUCH-CARRIER',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'NOWHERE', early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T12:00:00Z', late_arrival: '2026-03-03T08:00:00Z' },
    ],
    ...extra,
  });
}

const DB_PROBLEMS = [
  'body.carrier_external_reference_id',
  'body.customer_external_reference_id',
  'body.stops.0.location_external_reference_id',
  'body.stops.1.late_arrival',
];

describe('D1a: one 422 lists every problem', () => {
  it('create: unknown customer, carrier and location and a reversed window, one entry each, nothing written', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const res = await a.post(loads, troubled('L-1'));
    expect(res.statusCode).toBe(422);
    const body = json(res);
    expect(locs(body)).toEqual(DB_PROBLEMS);
    expect(body.detail.every((d: { type: string }) => d.type === 'value_error')).toBe(true);
    expect(body.detail.find((d: { loc: string[] }) => d.loc[1] === 'customer_external_reference_id').msg).toContain("'NO-SUCH-CUSTOMER'");
    expect(body.detail.find((d: { loc: unknown[] }) => d.loc[3] === 'late_arrival').msg).toContain('is before early_arrival');
    expect(await countOf(a, 'loads')).toBe(0);
  });

  it('create: schema problems and the database checks together', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const { equipment_type: _e, ...body } = troubled('L-2', { weight: 'heavy' });
    const res = await a.post(loads, body);
    expect(res.statusCode).toBe(422);
    const detail = json(res).detail as { type: string; loc: unknown[] }[];
    expect(locs({ detail })).toEqual([...DB_PROBLEMS, 'body.equipment_type', 'body.weight'].sort());
    expect(detail.find((d) => d.loc[1] === 'equipment_type')!.type).toBe('missing');
    expect(detail.find((d) => d.loc[1] === 'weight')!.type).toBe('float_parsing');
    // Schema problems come first.
    expect(
      detail
        .slice(0, 2)
        .map((d) => d.loc[1])
        .sort(),
    ).toEqual(['equipment_type', 'weight']);
    expect(await countOf(a, 'loads')).toBe(0);
  });

  it('a field the schema refused is not checked again (one entry per place)', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const res = await a.post(loads, dallasToHouston('L-3', { customer_external_reference_id: 42, carrier_external_reference_id: 'NOPE' }));
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      { type: 'string_type', loc: ['body', 'customer_external_reference_id'], msg: 'Input should be a valid string' },
      expect.objectContaining({ type: 'value_error', loc: ['body', 'carrier_external_reference_id'] }),
    ]);
  });

  it('update: every problem at once, the load unchanged', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    expect((await a.post(loads, dallasToHouston('L-4'))).statusCode).toBe(201);
    const before = json(await a.get(`${loads}/L-4`));
    const { external_reference_id: _r, equipment_type: _e, transport_mode: _m, ...changes } = troubled('L-4', { description: 'changed' });
    const res = await a.put(`${loads}/L-4`, changes);
    expect(res.statusCode).toBe(422);
    expect(locs(json(res))).toEqual(DB_PROBLEMS);
    const after = json(await a.get(`${loads}/L-4`));
    expect(after.description).toBe(before.description);
    expect(after.updated_at).toBe(before.updated_at);
    // With a schema problem too.
    const res2 = await a.put(`${loads}/L-4`, { ...changes, status: 'NOT_A_STATUS' });
    expect(res2.statusCode).toBe(422);
    expect(locs(json(res2))).toEqual([...DB_PROBLEMS, 'body.status'].sort());
  });

  it('a location: a schema problem beside a postal code in another subdivision', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/locations', { external_reference_id: 'X', name: 7, postal_code: '75201', state: 'CA' });
    expect(res.statusCode).toBe(422);
    const detail = json(res).detail as { type: string; loc: string[]; msg: string }[];
    expect(detail.map((d) => d.loc.join('.'))).toEqual(['body.name', 'body.postal_code']);
    expect(detail[1]!.type).toBe('value_error');
    expect(await countOf(a, 'locations')).toBe(0);
  });

  it('batch items list every problem, schema and database, under their item', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const { equipment_type: _e, ...noEquipment } = troubled('B-2');
    const res = await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: troubled('B-1') },
        { operation: 'create', load: noEquipment },
        { operation: 'upsert', external_reference_id: 'B-3', load: { ...troubled('B-3'), equipment_type: undefined } },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.error_count).toBe(3);
    const under = (i: number) => DB_PROBLEMS.map((l) => l.replace(/^body/, `body.items.${i}.load`));
    expect(locs(body.results[0].error)).toEqual(under(0));
    expect(locs(body.results[1].error)).toEqual([...under(1), 'body.items.1.load.equipment_type'].sort());
    // An upsert that creates follows the create rules: the missing field and the database checks.
    expect(locs(body.results[2].error)).toEqual([...DB_PROBLEMS, 'body.equipment_type'].map((l) => l.replace(/^body/, 'body.items.2.load')).sort());
    expect(await countOf(a, 'loads')).toBe(0);
  });
});

describe('D1a: a failed batch entry echoes the item’s own external_reference_id', () => {
  it('the item’s reference when it has one, else the data object’s', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/batch/customers', {
      items: [
        { operation: 'upsert', external_reference_id: 'ITEM-REF', customer: { external_reference_id: 'DATA-REF', name: 'Differs' } },
        { operation: 'update', external_reference_id: 'ITEM-ONLY', customer: { name: 'Nobody' } },
        { operation: 'create', customer: { external_reference_id: 'DATA-ONLY', name: 7 } },
        { operation: 'create', external_reference_id: 'OK-1', customer: { name: 'Fine' } },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.results.map((r: { external_reference_id: string; success: boolean }) => [r.external_reference_id, r.success])).toEqual([
      ['ITEM-REF', false],
      ['ITEM-ONLY', false],
      ['DATA-ONLY', false],
      ['OK-1', true],
    ]);
    expect(body.results[0].error.status).toBe(422);
    expect(body.results[1].error.status).toBe(404);
  });
});

describe('D1a: external_reference_id of only white space is 422', () => {
  it('refused on create for every resource, and by a batch upsert that would create', async () => {
    const a = await newTenant(t);
    for (const [url, body] of [
      ['/v2/tms-api/customers', { external_reference_id: '   ', name: 'Blank' }],
      ['/v2/tms-api/carriers', { external_reference_id: '\t', name: 'Blank' }],
      ['/v2/tms-api/locations', { external_reference_id: ' \n ', name: 'Blank', postal_code: '75201', state: 'TX' }],
    ] as const) {
      const res = await a.post(url, body);
      expect(res.statusCode, url).toBe(422);
      expect(json(res).detail).toEqual([
        { type: 'value_error', loc: ['body', 'external_reference_id'], msg: 'Value error, external_reference_id must not be only white space' },
      ]);
    }
    const batch = await a.post('/v2/tms-api/batch/customers', { items: [{ operation: 'upsert', external_reference_id: '  ', customer: { name: 'Blank' } }] });
    expect(json(batch).results[0]).toMatchObject({
      success: false,
      external_reference_id: '  ',
      error: { status: 422, detail: [{ type: 'value_error', loc: ['body', 'items', 0, 'customer', 'external_reference_id'] }] },
    });
    expect(await countOf(a, 'customers')).toBe(0);
    expect(await countOf(a, 'carriers')).toBe(0);
    expect(await countOf(a, 'locations')).toBe(0);
  });

  it('a load with a blank reference also lists its other problems', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const res = await a.post(loads, troubled(' '));
    expect(res.statusCode).toBe(422);
    expect(locs(json(res))).toEqual(['body.external_reference_id', ...DB_PROBLEMS].sort());
  });
});

describe('D1a: a state that contradicts the coordinates', () => {
  it('Dallas with state CA is 422 on ["body","state"] naming the resolved subdivision', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/locations', { external_reference_id: 'DAL-CA', name: 'Dallas?', latitude: 32.7767, longitude: -96.797, state: 'CA' });
    expect(res.statusCode).toBe(422);
    const [issue, ...rest] = json(res).detail;
    expect(rest).toEqual([]);
    expect(issue.type).toBe('value_error');
    expect(issue.loc).toEqual(['body', 'state']);
    expect(issue.msg).toContain('US-TX');
    expect(await countOf(a, 'locations')).toBe(0);
  });

  it('the right state, a state within the border tolerance, and no state are accepted', async () => {
    const a = await newTenant(t);
    const ok = async (body: Record<string, unknown>) => {
      const res = await a.post('/v2/tms-api/locations', body);
      expect(res.statusCode, res.body).toBe(201);
      return json(res);
    };
    expect((await ok({ external_reference_id: 'DAL-TX', name: 'Dallas', latitude: 32.7767, longitude: -96.797, state: 'TX' })).state).toBe('US-TX');
    expect((await ok({ external_reference_id: 'DAL-NONE', name: 'Dallas', latitude: 32.7767, longitude: -96.797 })).state).toBe('US-TX');
    // Kansas City by State Line Road: in Kansas by the 10m borders, within 1 km of Missouri.
    expect((await ok({ external_reference_id: 'KC-KS', name: 'State Line', latitude: 39.0, longitude: -94.622 })).state).toBe('US-KS');
    const line = await ok({ external_reference_id: 'KC-LINE', name: 'State Line', latitude: 39.0, longitude: -94.622, state: 'MO' });
    expect(line.state).toBe('US-MO');
    // Farther into Kansas (Olathe, ~25 km from Missouri) the same state is a contradiction.
    expect(
      (await a.post('/v2/tms-api/locations', { external_reference_id: 'OLATHE', name: 'Olathe', latitude: 38.8814, longitude: -94.8191, state: 'MO' }))
        .statusCode,
    ).toBe(422);
  });

  it('an update moving the coordinates away from the stored state is refused too', async () => {
    const a = await newTenant(t);
    expect(
      (await a.post('/v2/tms-api/locations', { external_reference_id: 'P', name: 'Dallas', latitude: 32.7767, longitude: -96.797, state: 'TX' })).statusCode,
    ).toBe(201);
    const res = await a.put('/v2/tms-api/locations/P', { latitude: 34.05, longitude: -118.25, state: 'TX' });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail[0]).toMatchObject({ loc: ['body', 'state'], type: 'value_error' });
    expect(json(res).detail[0].msg).toContain('US-CA');
    expect(json(await a.get('/v2/tms-api/locations/P')).latitude).toBe(32.7767);
  });
});

describe('D1a: average_carrier_rate in one currency', () => {
  async function deliveredWithRates(a: Tenant, ref: string, rates: { amount: number; currency?: string }[]) {
    const res = await a.post(
      loads,
      dallasToHouston(ref, {
        status: 'DELIVERED',
        carrier_external_reference_id: 'CAR-1',
        financial_rates: rates.map((r) => ({ rate_entity: 'CARRIER', ...r })),
      }),
    );
    expect(res.statusCode, res.body).toBe(201);
  }

  it('the mean in the currency most used among the loads, with the currency named', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await deliveredWithRates(a, 'H-1', [{ amount: 1000, currency: 'CAD' }]);
    await deliveredWithRates(a, 'H-2', [
      { amount: 1200, currency: 'cad' },
      { amount: 100, currency: 'CAD' },
    ]);
    await deliveredWithRates(a, 'H-3', [{ amount: 900 }]);
    expect((await a.post(loads, dallasToHouston('OPEN-1'))).statusCode).toBe(201);
    const [rec] = json(await a.get(`${loads}/OPEN-1/carrier-recommendations`)).carrier_recommendations;
    expect(rec).toMatchObject({ carrier_external_reference_id: 'CAR-1', lane_load_count: 3, average_carrier_rate: 1150, average_carrier_rate_currency: 'CAD' });
  });

  it('a tie goes to USD; no carrier rate gives null and null', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await deliveredWithRates(a, 'T-1', [{ amount: 1000, currency: 'CAD' }]);
    await deliveredWithRates(a, 'T-2', [{ amount: 800, currency: 'USD' }]);
    expect((await a.post(loads, dallasToHouston('OPEN-2'))).statusCode).toBe(201);
    const [rec] = json(await a.get(`${loads}/OPEN-2`)).carrier_recommendations;
    expect(rec).toMatchObject({ average_carrier_rate: 800, average_carrier_rate_currency: 'USD' });

    const b = await newTenant(t);
    await seedFreight(b);
    await deliveredWithRates(b, 'N-1', []);
    expect((await b.post(loads, dallasToHouston('OPEN-3'))).statusCode).toBe(201);
    const [none] = json(await b.get(`${loads}/OPEN-3`)).carrier_recommendations;
    expect(none).toMatchObject({ lane_load_count: 1, average_carrier_rate: null, average_carrier_rate_currency: null });
  });
});
