import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

const t = useApp();

const base = '/v2/tms-api/loads';

/** A tenant with a customer, two carriers and three locations (Dallas, Houston, Chicago). */
async function seeded(): Promise<Tenant> {
  const a = await newTenant(t);
  const ok = async (url: string, body: unknown) => {
    const res = await a.post(url, body);
    expect(res.statusCode, res.body).toBe(201);
  };
  await ok('/v2/tms-api/customers', { external_reference_id: 'CUST-1', name: 'Acme Foods' });
  await ok('/v2/tms-api/customers', { external_reference_id: 'CUST-2', name: 'Beta Paper' });
  await ok('/v2/tms-api/carriers', { external_reference_id: 'CAR-1', name: 'Swift Transport', dot_number: 'DOT1' });
  await ok('/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Knight Freight' });
  await ok('/v2/tms-api/locations', { external_reference_id: 'DAL', name: 'Dallas DC', postal_code: '75201', state: 'TX' });
  await ok('/v2/tms-api/locations', { external_reference_id: 'HOU', name: 'Houston Port', postal_code: '77002', state: 'TX' });
  await ok('/v2/tms-api/locations', { external_reference_id: 'CHI', name: 'Chicago Rail', postal_code: '60601', state: 'IL' });
  return a;
}

function load(ref: string, extra: Record<string, unknown> = {}) {
  return {
    external_reference_id: ref,
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'CUST-1',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00Z', late_arrival: '2026-03-03T12:00:00Z' },
    ],
    ...extra,
  };
}

describe('loads: create and get', () => {
  it('creates a load (201) with stops, links, defaults and an estimated distance', async () => {
    const a = await seeded();
    const res = await a.post(base, load('LOAD-001', { description: 'Frozen peas', weight: 42000, weight_uom: 'LBS' }));
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body).toMatchObject({
      external_reference_id: 'LOAD-001',
      status: 'ACTIVE',
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      description: 'Frozen peas',
      customer_external_reference_id: 'CUST-1',
      customer_name: 'Acme Foods',
      carrier_id: null,
      carrier_external_reference_id: null,
      carrier_name: null,
      weight: 42000,
      weight_uom: 'lbs',
      total_distance_source: 'estimated',
      max_buy_rate: null,
      financial_rates: [],
      sales_rep: null,
      dispatcher_rep: null,
      delivered_at: null,
    });
    expect(body.id).toMatch(/^load_/);
    expect(body.customer_id).toMatch(/^cust_/);
    expect(body.status_updated_at).toBe(body.created_at);
    // Dallas → Houston: about 225 great-circle miles × 1.2
    expect(body.total_distance).toBeGreaterThan(260);
    expect(body.total_distance).toBeLessThan(285);
    expect(Math.round(body.total_distance * 10)).toBe(body.total_distance * 10);
    expect(body.stops).toEqual([
      {
        id: expect.stringMatching(/^stop_/),
        stop_number: 1,
        stop_type: 'Pickup',
        location_id: expect.stringMatching(/^loc_/),
        location_external_reference_id: 'DAL',
        location_name: 'Dallas DC',
        early_arrival: '2026-03-02T08:00:00.000Z',
        late_arrival: '2026-03-02T10:00:00.000Z',
        actual_arrival: null,
        actual_departure: null,
      },
      {
        id: expect.stringMatching(/^stop_/),
        stop_number: 2,
        stop_type: 'Delivery',
        location_id: expect.stringMatching(/^loc_/),
        location_external_reference_id: 'HOU',
        location_name: 'Houston Port',
        early_arrival: '2026-03-03T08:00:00.000Z',
        late_arrival: '2026-03-03T12:00:00.000Z',
        actual_arrival: null,
        actual_departure: null,
      },
    ]);
    expect(json(await a.get(`${base}/LOAD-001`))).toEqual({ ...body, carrier_recommendations: [] });
  });

  it('accepts enum values in any case and returns canonical spellings; stops come back by stop_number', async () => {
    const a = await seeded();
    const body = json(
      await a.post(
        base,
        load('L', {
          equipment_type: 'reefer',
          transport_mode: 'ltl',
          status: 'spot',
          stops: [
            {
              stop_number: 3,
              stop_type: 'DELIVERY',
              location_external_reference_id: 'CHI',
              early_arrival: '2026-03-04T08:00:00Z',
              late_arrival: '2026-03-04T09:00:00Z',
            },
            {
              stop_number: 1,
              stop_type: 'pickup',
              location_external_reference_id: 'DAL',
              early_arrival: '2026-03-02T08:00:00Z',
              late_arrival: '2026-03-02T09:00:00Z',
            },
            {
              stop_number: 2,
              stop_type: 'both',
              location_external_reference_id: 'HOU',
              early_arrival: '2026-03-03T08:00:00',
              late_arrival: '2026-03-03T09:00:00+01:00',
            },
          ],
          financial_rates: [
            { rate_entity: 'customer', amount: 1500, rate_type: 'linehaul' },
            { rate_entity: 'Carrier', amount: 1100.5, currency: 'cad', rate_type: 'fuel_surcharge', description: 'FSC' },
          ],
        }),
      ),
    );
    expect(body).toMatchObject({ equipment_type: 'REEFER', transport_mode: 'LTL', status: 'SPOT' });
    expect(body.stops.map((s: any) => [s.stop_number, s.stop_type, s.location_external_reference_id])).toEqual([
      [1, 'Pickup', 'DAL'],
      [2, 'Both', 'HOU'],
      [3, 'Delivery', 'CHI'],
    ]);
    expect(body.stops[1]).toMatchObject({ early_arrival: '2026-03-03T08:00:00.000Z', late_arrival: '2026-03-03T08:00:00.000Z' });
    expect(body.financial_rates).toEqual([
      { id: expect.stringMatching(/^rate_/), rate_entity: 'CUSTOMER', amount: 1500, currency: 'USD', rate_type: 'LINEHAUL', description: null },
      { id: expect.stringMatching(/^rate_/), rate_entity: 'CARRIER', amount: 1100.5, currency: 'CAD', rate_type: 'FUEL_SURCHARGE', description: 'FSC' },
    ]);
  });

  it('keeps total_distance and max_buy_rate as sent by the caller', async () => {
    const a = await seeded();
    const body = json(await a.post(base, load('L', { total_distance: 250, max_buy_rate: 1800.25 })));
    expect(body).toMatchObject({ total_distance: 250, total_distance_source: 'caller', max_buy_rate: 1800.25, max_buy_rate_source: 'caller' });
  });

  it('assigns a carrier by external reference and returns its id and name', async () => {
    const a = await seeded();
    const body = json(await a.post(base, load('L', { carrier_external_reference_id: 'CAR-1' })));
    expect(body).toMatchObject({ carrier_id: expect.stringMatching(/^carrier_/), carrier_external_reference_id: 'CAR-1', carrier_name: 'Swift Transport' });
  });

  it('answers 422 Field required for each missing required field', async () => {
    const a = await seeded();
    const res = await a.post(base, {});
    expect(res.statusCode).toBe(422);
    expect(json(res).detail.map((d: any) => [d.type, d.loc.join('.'), d.msg])).toEqual([
      ['missing', 'body.external_reference_id', 'Field required'],
      ['missing', 'body.equipment_type', 'Field required'],
      ['missing', 'body.transport_mode', 'Field required'],
      ['missing', 'body.customer_external_reference_id', 'Field required'],
      ['missing', 'body.stops', 'Field required'],
    ]);
    const stopFields = await a.post(base, load('L', { stops: [{}, {}] }));
    expect(json(stopFields).detail.map((d: any) => d.loc.join('.'))).toEqual([
      'body.stops.0.stop_type',
      'body.stops.0.location_external_reference_id',
      'body.stops.0.early_arrival',
      'body.stops.0.late_arrival',
      'body.stops.1.stop_type',
      'body.stops.1.location_external_reference_id',
      'body.stops.1.early_arrival',
      'body.stops.1.late_arrival',
    ]);
  });

  it('refuses bad enums, too few stops, bad timestamps and negative numbers', async () => {
    const a = await seeded();
    const res = await a.post(base, load('L', { equipment_type: 'SPACESHIP', status: 'LOST', weight: -1, weight_uom: 'tons', stops: [load('x').stops[0]] }));
    const detail = json(res).detail;
    expect(detail.map((d: any) => [d.type, d.loc.join('.')])).toEqual([
      ['enum', 'body.equipment_type'],
      ['too_short', 'body.stops'],
      ['enum', 'body.status'],
      ['greater_than_equal', 'body.weight'],
      ['enum', 'body.weight_uom'],
    ]);
    expect(detail[0].msg).toMatch(/^Input should be 'DRY_VAN', 'REEFER'/);
    const badTime = await a.post(base, load('L', { stops: [{ ...load('x').stops[0], early_arrival: 'next tuesday' }, load('x').stops[1]] }));
    expect(json(badTime).detail).toEqual([
      { type: 'datetime_parsing', loc: ['body', 'stops', 0, 'early_arrival'], msg: expect.stringContaining('valid datetime') },
    ]);
    // An offset that carries the instant into year 10000 in UTC: refused, saying so (was stored as
    // "+010000-01-01T13:00:00.000Z", which no endpoint accepts back).
    const [p0, d0] = load('x').stops as any[];
    const late = await a.post(
      base,
      load('L', {
        stops: [
          { ...p0, early_arrival: '9999-12-31T22:00:00Z', late_arrival: '9999-12-31T23:00:00-14:00' },
          { ...d0, early_arrival: '9999-12-31T23:00:00Z', late_arrival: '9999-12-31T23:30:00Z' },
        ],
      }),
    );
    expect(late.statusCode).toBe(422);
    expect(json(late).detail).toEqual([
      {
        type: 'datetime_parsing',
        loc: ['body', 'stops', 0, 'late_arrival'],
        msg: 'Input should be a valid datetime between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC (its offset moves it outside)',
      },
    ]);
  });

  it('refuses stops that break the D4 rules: windows, numbers, pickup/delivery, unknown locations', async () => {
    const a = await seeded();
    const [p, d] = load('x').stops as any[];
    const late = await a.post(base, load('L', { stops: [{ ...p, late_arrival: '2026-03-02T07:00:00Z' }, d] }));
    expect(json(late).detail).toEqual([
      { type: 'value_error', loc: ['body', 'stops', 0, 'late_arrival'], msg: expect.stringContaining('before early_arrival') },
    ]);
    const dup = await a.post(
      base,
      load('L', {
        stops: [
          { ...p, stop_number: 1 },
          { ...d, stop_number: 1 },
        ],
      }),
    );
    expect(json(dup).detail).toEqual([{ type: 'value_error', loc: ['body', 'stops', 1, 'stop_number'], msg: expect.stringContaining('used twice') }]);
    const noDelivery = await a.post(base, load('L', { stops: [p, { ...d, stop_type: 'Pickup' }] }));
    expect(json(noDelivery).detail).toEqual([{ type: 'value_error', loc: ['body', 'stops'], msg: expect.stringContaining('Delivery') }]);
    const unknown = await a.post(base, load('L', { stops: [p, { ...d, location_external_reference_id: 'NOWHERE' }] }));
    expect(json(unknown).detail).toEqual([
      { type: 'value_error', loc: ['body', 'stops', 1, 'location_external_reference_id'], msg: expect.stringContaining("'NOWHERE'") },
    ]);
    expect(json(await a.get(base)).pagination.total).toBe(0);
  });

  it('refuses unknown customers and carriers (422 naming the field), and another organization’s records', async () => {
    const a = await seeded();
    const b = await seeded();
    await b.post('/v2/tms-api/customers', { external_reference_id: 'B-ONLY', name: 'b' });
    await b.post('/v2/tms-api/locations', { external_reference_id: 'B-LOC', name: 'b', latitude: 30, longitude: -97 });
    const cust = await a.post(base, load('L', { customer_external_reference_id: 'B-ONLY' }));
    expect(json(cust).detail).toEqual([{ type: 'value_error', loc: ['body', 'customer_external_reference_id'], msg: expect.stringContaining("'B-ONLY'") }]);
    const car = await a.post(base, load('L', { carrier_external_reference_id: 'NOPE' }));
    expect(json(car).detail).toEqual([{ type: 'value_error', loc: ['body', 'carrier_external_reference_id'], msg: expect.stringContaining("'NOPE'") }]);
    const loc = await a.post(base, load('L', { stops: [load('x').stops[0], { ...(load('x').stops[1] as object), location_external_reference_id: 'B-LOC' }] }));
    expect(json(loc).detail[0].loc).toEqual(['body', 'stops', 1, 'location_external_reference_id']);
  });

  it('409 on a duplicate, 404 with the D1 text on unknown', async () => {
    const a = await seeded();
    await a.post(base, load('LOAD-001'));
    expect(json(await a.post(base, load('LOAD-001')))).toEqual({ detail: "Load with external_reference_id 'LOAD-001' already exists" });
    const missing = await a.get(`${base}/LOAD-999`);
    expect(missing.statusCode).toBe(404);
    expect(json(missing)).toEqual({ detail: "Load with external_reference_id 'LOAD-999' not found" });
  });
});

describe('loads: people', () => {
  it('matches reps to workspace users by email, else by a unique name; null otherwise', async () => {
    const a = await seeded();
    const sam = await t.services.accounts.createUser(a.orgId, { email: 'Sam.Sales@Broker.test', name: 'Sam Sales' });
    await t.services.accounts.createUser(a.orgId, { email: 'pat1@broker.test', name: 'Pat Doe' });
    await t.services.accounts.createUser(a.orgId, { email: 'pat2@broker.test', name: 'Pat Doe' });
    const body = json(
      await a.post(
        base,
        load('L', {
          sales_rep: { email: 'sam.sales@broker.test' },
          dispatcher_rep: { name: '  SAM SALES ', external_reference_id: 'EMP-7' },
          assigned_dispatcher: 'dispatch@broker.test',
          actual_dispatcher: 'Dee',
          operation_user: 'ops',
          account_manager: 'Alex',
        }),
      ),
    );
    expect(body.sales_rep).toEqual({ name: null, email: 'sam.sales@broker.test', external_reference_id: null, service_user_id: sam.id });
    expect(body.dispatcher_rep).toEqual({ name: 'SAM SALES', email: null, external_reference_id: 'EMP-7', service_user_id: sam.id });
    expect(body).toMatchObject({ assigned_dispatcher: 'dispatch@broker.test', actual_dispatcher: 'Dee', operation_user: 'ops', account_manager: 'Alex' });
    const ambiguous = json(await a.put(`${base}/L`, { sales_rep: { name: 'pat doe' }, dispatcher_rep: { email: 'nobody@x.test' } }));
    expect(ambiguous.sales_rep.service_user_id).toBeNull();
    expect(ambiguous.dispatcher_rep.service_user_id).toBeNull();
    const cleared = json(await a.put(`${base}/L`, { sales_rep: null }));
    expect(cleared.sales_rep).toBeNull();
  });

  it('refuses a rep with none of name, email, external_reference_id', async () => {
    const a = await seeded();
    const res = await a.post(base, load('L', { sales_rep: {}, dispatcher_rep: { name: '  ', email: null } }));
    expect(res.statusCode).toBe(422);
    expect(json(res).detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'sales_rep'] });
  });
});

describe('loads: update', () => {
  it('changes only the fields sent; stops and financial_rates replace the old arrays', async () => {
    const a = await seeded();
    const created = json(await a.post(base, load('L', { financial_rates: [{ rate_entity: 'CARRIER', amount: 900 }], description: 'keep' })));
    const res = await a.put(`${base}/L`, {
      equipment_type: 'flatbed',
      stops: [
        { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
        { stop_type: 'Delivery', location_external_reference_id: 'CHI', early_arrival: '2026-03-04T08:00:00Z', late_arrival: '2026-03-04T12:00:00Z' },
      ],
      financial_rates: [{ rate_entity: 'CUSTOMER', amount: 2500 }],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body).toMatchObject({ equipment_type: 'FLATBED', description: 'keep', transport_mode: 'FTL' });
    expect(body.stops.map((s: any) => s.location_external_reference_id)).toEqual(['DAL', 'CHI']);
    expect(body.financial_rates.map((r: any) => [r.rate_entity, r.amount])).toEqual([['CUSTOMER', 2500]]);
    // Dallas → Chicago is much further than Dallas → Houston: the estimate followed the stops.
    expect(body.total_distance).toBeGreaterThan(created.total_distance * 2);
    expect(json(await a.get(`${base}/L`))).toEqual({ ...body, carrier_recommendations: [] });
  });

  it('status: every value accepted, every transition allowed, the last change recorded; delivered_at follows', async () => {
    const a = await seeded();
    const created = json(await a.post(base, load('L')));
    t.clock.advance(5);
    const delivered = json(await a.put(`${base}/L`, { status: 'delivered' }));
    expect(delivered.status).toBe('DELIVERED');
    expect(delivered.status_updated_at > created.status_updated_at).toBe(true);
    expect(delivered.delivered_at).toBe(delivered.status_updated_at);
    t.clock.advance(5);
    const completed = json(await a.put(`${base}/L`, { status: 'COMPLETED' }));
    expect(completed.delivered_at).toBe(delivered.delivered_at);
    const same = json(await a.put(`${base}/L`, { status: 'COMPLETED', description: 'x' }));
    expect(same.status_updated_at).toBe(completed.status_updated_at);
    const back = json(await a.put(`${base}/L`, { status: 'ACTIVE' }));
    expect(back.delivered_at).toBeNull();
    for (const s of [
      'TENDERED',
      'TENDER_ACCEPTED',
      'SPOT',
      'COVERED',
      'DISPATCHED',
      'AT_SHIPPER',
      'EN_ROUTE',
      'AT_RECEIVER',
      'DELIVERED',
      'PAYMENT_PROCESSING',
      'ACCOUNTING_REVIEW',
      'COMPLETED',
      'CANCELLED',
      'TENDER_REJECTED',
      'INACTIVE',
      'ON_HOLD',
      'ACTIVE',
    ]) {
      const res = await a.put(`${base}/L`, { status: s.toLowerCase() });
      expect(res.statusCode, s).toBe(200);
      expect(json(res).status).toBe(s);
    }
  });

  it('assigns, changes and unassigns the carrier; 422 for an unknown one', async () => {
    const a = await seeded();
    await a.post(base, load('L'));
    expect(json(await a.put(`${base}/L`, { carrier_external_reference_id: 'CAR-2' }))).toMatchObject({
      carrier_external_reference_id: 'CAR-2',
      carrier_name: 'Knight Freight',
    });
    expect(json(await a.put(`${base}/L`, { carrier_external_reference_id: null }))).toMatchObject({ carrier_id: null, carrier_name: null });
    const bad = await a.put(`${base}/L`, { carrier_external_reference_id: 'GHOST' });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0].loc).toEqual(['body', 'carrier_external_reference_id']);
  });

  it('a caller distance stays through stop changes; null hands it back to the estimate', async () => {
    const a = await seeded();
    await a.post(base, load('L', { total_distance: 999 }));
    const moved = json(await a.put(`${base}/L`, { stops: load('x', {}).stops }));
    expect(moved).toMatchObject({ total_distance: 999, total_distance_source: 'caller' });
    const back = json(await a.put(`${base}/L`, { total_distance: null }));
    expect(back.total_distance_source).toBe('estimated');
    expect(back.total_distance).toBeGreaterThan(260);
  });

  it('a failed update changes nothing (stops, rates, fields)', async () => {
    const a = await seeded();
    const before = json(await a.post(base, load('L', { financial_rates: [{ rate_entity: 'CARRIER', amount: 900 }] })));
    const res = await a.put(`${base}/L`, {
      description: 'new',
      financial_rates: [],
      stops: [load('x').stops[0], { ...(load('x').stops[1] as object), location_external_reference_id: 'NOWHERE' }],
    });
    expect(res.statusCode).toBe(422);
    expect(json(await a.get(`${base}/L`))).toEqual({ ...before, carrier_recommendations: [] });
  });

  it('404 for an unknown load and 422 for a changed external_reference_id', async () => {
    const a = await seeded();
    expect(json(await a.put(`${base}/NOPE`, { status: 'SPOT' }))).toEqual({ detail: "Load with external_reference_id 'NOPE' not found" });
    await a.post(base, load('L'));
    expect((await a.put(`${base}/L`, { external_reference_id: 'M' })).statusCode).toBe(422);
  });
});

describe('loads: delete and references', () => {
  it('deletes by reference or service id, stops and rates with it', async () => {
    const a = await seeded();
    const one = json(await a.post(base, load('L1', { financial_rates: [{ rate_entity: 'CARRIER', amount: 1 }] })));
    await a.post(base, load('L2'));
    expect((await a.del(`${base}/L2`)).statusCode).toBe(204);
    expect((await a.del(`${base}/${one.id}`)).statusCode).toBe(204);
    expect((await a.get(`${base}/L1`)).statusCode).toBe(404);
    const leftovers = await t.store.db.selectFrom('load_stops').select('id').where('load_id', '=', one.id).execute();
    expect(leftovers).toEqual([]);
    const rates = await t.store.db.selectFrom('load_rates').select('id').where('load_id', '=', one.id).execute();
    expect(rates).toEqual([]);
  });

  it('refuses (409) to delete a customer, carrier or location a load uses, naming the loads', async () => {
    const a = await seeded();
    await a.post(base, load('LOAD-A', { carrier_external_reference_id: 'CAR-1' }));
    const cust = await a.del('/v2/tms-api/customers/CUST-1');
    expect(cust.statusCode).toBe(409);
    expect(json(cust).detail).toBe(
      "Customer with external_reference_id 'CUST-1' is used as their customer by 1 load ('LOAD-A'): delete or change those loads first",
    );
    const car = await a.del('/v2/tms-api/carriers/CAR-1');
    expect(json(car).detail).toContain("'LOAD-A'");
    const loc = await a.del('/v2/tms-api/locations/HOU');
    expect(loc.statusCode).toBe(409);
    expect(json(loc).detail).toContain('as a stop');
    expect((await a.del('/v2/tms-api/locations/CHI')).statusCode).toBe(204);
    await a.del(`${base}/LOAD-A`);
    expect((await a.del('/v2/tms-api/customers/CUST-1')).statusCode).toBe(204);
  });
});

describe('loads: list', () => {
  async function listing() {
    const a = await seeded();
    const mk = async (ref: string, extra: Record<string, unknown>) => expect((await a.post(base, load(ref, extra))).statusCode).toBe(201);
    await mk('L1', { status: 'ACTIVE' });
    await mk('L2', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1', equipment_type: 'REEFER' });
    await mk('L3', { status: 'SPOT', customer_external_reference_id: 'CUST-2', transport_mode: 'LTL' });
    await mk('L4', {
      status: 'COVERED',
      carrier_external_reference_id: 'CAR-2',
      stops: [
        { stop_type: 'Pickup', location_external_reference_id: 'CHI', early_arrival: '2026-04-10T08:00:00Z', late_arrival: '2026-04-10T09:00:00Z' },
        { stop_type: 'Delivery', location_external_reference_id: 'DAL', early_arrival: '2026-04-12T08:00:00Z', late_arrival: '2026-04-12T09:00:00Z' },
      ],
    });
    return a;
  }
  const refs = async (a: Tenant, q: string) => json(await a.get(`${base}?${q}`)).items.map((l: any) => l.external_reference_id);

  it('filters by one or several statuses, equipment, mode, customer, carrier and pickup dates', async () => {
    const a = await listing();
    expect(await refs(a, 'status=spot')).toEqual(['L3']);
    expect(await refs(a, 'status=ACTIVE,delivered')).toEqual(['L1', 'L2']);
    expect(await refs(a, 'equipment_type=reefer')).toEqual(['L2']);
    expect(await refs(a, 'transport_mode=LTL')).toEqual(['L3']);
    expect(await refs(a, 'customer_external_reference_id=CUST-2')).toEqual(['L3']);
    const cust2 = json(await a.get('/v2/tms-api/customers/CUST-2')).id;
    expect(await refs(a, `customer_id=${cust2}`)).toEqual(['L3']);
    expect(await refs(a, 'carrier_external_reference_id=CAR-2')).toEqual(['L4']);
    expect(await refs(a, 'customer_external_reference_id=UNKNOWN')).toEqual([]);
    expect(await refs(a, 'pickup_date_from=2026-04-01')).toEqual(['L4']);
    expect(await refs(a, 'pickup_date_to=2026-03-31T23:59:59Z&status=ACTIVE,SPOT')).toEqual(['L1', 'L3']);
    expect(await refs(a, `pickup_date_from=${encodeURIComponent('2026-04-10T03:00:00-05:00')}`)).toEqual(['L4']);
    expect(await refs(a, `pickup_date_from=${encodeURIComponent('2026-04-10T04:00:00-05:00')}`)).toEqual([]);
  });

  it('includes stops in list items and sorts by status, external_reference_id and time', async () => {
    const a = await listing();
    const page = json(await a.get(`${base}?sort=-external_reference_id&page_size=2`));
    expect(page.items.map((l: any) => l.external_reference_id)).toEqual(['L4', 'L3']);
    expect(page.items[0].stops.map((s: any) => s.location_external_reference_id)).toEqual(['CHI', 'DAL']);
    expect(page.pagination).toMatchObject({ total: 4, total_pages: 2, has_next: true });
    expect(await refs(a, 'sort=status')).toEqual(['L1', 'L4', 'L2', 'L3']);
    expect(await refs(a, 'sort=-created_at')).toEqual(['L4', 'L3', 'L2', 'L1']);
  });

  it('keeps list totals exact through creates, status changes, deletes and batches', async () => {
    const a = await listing();
    const total = async (q: string) => json(await a.get(`${base}?${q}`)).pagination.total;
    const truth = async (statuses?: string[]) => {
      let q = t.store.db
        .selectFrom('loads')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('org_id', '=', a.orgId);
      if (statuses) q = q.where('status', 'in', statuses);
      return Number((await q.executeTakeFirst())?.n);
    };
    expect(await total('')).toBe(4);
    await a.put(`${base}/L1`, { status: 'DELIVERED' });
    await a.del(`${base}/L3`);
    await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: load('B1', { status: 'SPOT' }) },
        { operation: 'upsert', external_reference_id: 'L2', load: { status: 'completed' } },
        { operation: 'delete', external_reference_id: 'L4' },
        { operation: 'create', load: load('B2', { customer_external_reference_id: 'NOPE' }) },
      ],
    });
    for (const statuses of [undefined, ['DELIVERED'], ['SPOT', 'COMPLETED'], ['ACTIVE']]) {
      const q = statuses ? `status=${statuses.join(',')}` : '';
      expect(await total(q), q).toBe(await truth(statuses));
    }
    expect(await total('')).toBe(3);
    // Other filters count rows directly.
    expect(await total('status=DELIVERED&equipment_type=DRY_VAN')).toBe(1);
  });

  it('answers 422 for a bad status or enum filter', async () => {
    const a = await listing();
    const res = await a.get(`${base}?status=ACTIVE,LOST&equipment_type=boat&sort=weight`);
    expect(res.statusCode).toBe(422);
    expect(json(res).detail.map((d: any) => [d.type, d.loc.join('.')])).toEqual(
      expect.arrayContaining([
        ['enum', 'query.equipment_type'],
        ['enum', 'query.sort'],
      ]),
    );
    const status = await a.get(`${base}?status=ACTIVE,LOST`);
    expect(json(status).detail).toEqual([{ type: 'enum', loc: ['query', 'status'], msg: expect.stringContaining("'ACTIVE'") }]);
  });
});

describe('loads: analytics runs', () => {
  const runs = async () => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(/^lanebridge_analytics_runs_total (\d+)/m.exec(text)?.[1]);
  };

  it('one run per single write, exactly one per batch however many items, none for reads or failures', async () => {
    const a = await seeded();
    const r0 = await runs();
    await a.post(base, load('L1'));
    await a.put(`${base}/L1`, { status: 'SPOT' });
    await a.get(`${base}/L1`);
    await a.get(base);
    await a.post(base, load('L1'));
    expect(await runs()).toBe(r0 + 2);
    const items = Array.from({ length: 30 }, (_, i) => ({ operation: 'upsert', external_reference_id: `B${i}`, load: load(`B${i}`) }));
    const res = await a.post('/v2/tms-api/batch/loads', { items });
    expect(json(res).success_count).toBe(30);
    expect(await runs()).toBe(r0 + 3);
    await a.del(`${base}/L1`);
    expect(await runs()).toBe(r0 + 4);
  });
});
