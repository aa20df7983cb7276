import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';
import { DALLAS, HOUSTON, north } from '../../fixtures.js';

// D14: stop actuals, tracking events and the evidence on every recommendation, with numbers worked out by hand.
const NOW = new Date('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;
const HOUR = 3_600_000;

const t = useApp({}, { clock: { now: () => new Date(NOW) } });

// Dallas → Houston (both America/Chicago), and points due north (the distance is the offset).
const ORIGIN = DALLAS;
const DEST = HOUSTON;
const iso = (ms: number) => new Date(ms).toISOString();

interface LoadOptions {
  from?: string;
  to?: string;
  carrier?: string;
  status?: string;
  /** The delivery window's end (D7's delivery date); the window is 2 h before it. */
  deliveryLate?: number;
  deliveryActual?: number | null;
  pickupEarly?: number;
  pickupActual?: number | null;
  total?: number;
  miles?: number;
}

async function world() {
  const a = await newTenant(t);
  expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'CUST', name: 'Acme' })).statusCode).toBe(201);
  let n = 0;
  const location = async (p: { latitude: number; longitude: number }) => {
    const ref = `LOC-${++n}`;
    const res = await a.post('/v2/tms-api/locations', { external_reference_id: ref, name: ref, country: 'US', ...p });
    expect(res.statusCode, res.body).toBe(201);
    return ref;
  };
  const o = await location(ORIGIN);
  const d = await location(DEST);
  const body = (ref: string, x: LoadOptions) => {
    const late = x.deliveryLate ?? NOW.getTime();
    const pickup = x.pickupEarly ?? late - 2 * DAY;
    return {
      external_reference_id: ref,
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'CUST',
      status: x.status ?? 'DELIVERED',
      ...(x.carrier ? { carrier_external_reference_id: x.carrier } : {}),
      ...(x.miles !== undefined ? { total_distance: x.miles } : {}),
      financial_rates: x.total !== undefined ? [{ rate_entity: 'CARRIER', amount: x.total }] : [],
      stops: [
        {
          stop_type: 'Pickup',
          location_external_reference_id: x.from ?? o,
          early_arrival: iso(pickup),
          late_arrival: iso(pickup + HOUR),
          ...(x.pickupActual != null ? { actual_arrival: iso(x.pickupActual) } : {}),
        },
        {
          stop_type: 'Delivery',
          location_external_reference_id: x.to ?? d,
          early_arrival: iso(late - 2 * HOUR),
          late_arrival: iso(late),
          ...(x.deliveryActual != null ? { actual_arrival: iso(x.deliveryActual) } : {}),
        },
      ],
    };
  };
  return {
    a,
    o,
    d,
    location,
    body,
    async carrier(ref: string) {
      expect((await a.post('/v2/tms-api/carriers', { external_reference_id: ref, name: `Carrier ${ref}` })).statusCode).toBe(201);
    },
    async load(ref: string, x: LoadOptions = {}) {
      const res = await a.post('/v2/tms-api/loads', body(ref, x));
      expect(res.statusCode, res.body).toBe(201);
      return json(res);
    },
    async recs(ref: string, query = '') {
      const res = await a.get(`/v2/tms-api/loads/${ref}/carrier-recommendations${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return json(res);
    },
  };
}

// The delivery window of the on-time loads: 08:00–10:00 UTC on the day 30 days before NOW.
const DAY0 = NOW.getTime() - 30 * DAY;
const AT = (h: number, m: number) => DAY0 - 24 * HOUR + h * HOUR + m * 60_000 + 24 * HOUR;
const WINDOW_END = AT(10, 0);

describe('stop actuals (D14)', () => {
  it('are returned on every stop, null when unknown; kept by an update that does not send them; null clears', async () => {
    const w = await world();
    const created = await w.load('A-1', { status: 'EN_ROUTE', deliveryActual: null, pickupActual: AT(9, 0) });
    expect(created.stops.map((s: any) => [s.actual_arrival, s.actual_departure])).toEqual([
      [iso(AT(9, 0)), null],
      [null, null],
    ]);
    // An update whose stops omit the actuals (a TMS that does not know them) keeps them.
    const plain = w.body('A-1', {});
    const kept = json(await w.a.put('/v2/tms-api/loads/A-1', { stops: plain.stops.map((s: any) => ({ ...s, actual_arrival: undefined })) }));
    expect(kept.stops[0].actual_arrival).toBe(iso(AT(9, 0)));
    const departed = json(await w.a.put('/v2/tms-api/loads/A-1', { stops: [{ ...plain.stops[0], actual_departure: iso(AT(9, 30)) }, plain.stops[1]] }));
    expect(departed.stops[0]).toMatchObject({ actual_arrival: iso(AT(9, 0)), actual_departure: iso(AT(9, 30)) });
    const cleared = json(
      await w.a.put('/v2/tms-api/loads/A-1', { stops: [{ ...plain.stops[0], actual_arrival: null, actual_departure: null }, plain.stops[1]] }),
    );
    expect(cleared.stops[0]).toMatchObject({ actual_arrival: null, actual_departure: null });
    expect(json(await w.a.get('/v2/tms-api/loads/A-1')).stops[0]).toMatchObject({ actual_arrival: null, actual_departure: null });
  });

  it('refuses a departure before the arrival on that stop (422, nothing written)', async () => {
    const w = await world();
    const body = w.body('BAD', {});
    body.stops[1] = { ...body.stops[1], actual_arrival: iso(AT(10, 0)), actual_departure: iso(AT(9, 0)) } as any;
    const res = await w.a.post('/v2/tms-api/loads', body);
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'stops', 1, 'actual_departure'],
        msg: `Value error, actual_departure (${iso(AT(9, 0))}) is before actual_arrival (${iso(AT(10, 0))})`,
      },
    ]);
    expect((await w.a.get('/v2/tms-api/loads/BAD')).statusCode).toBe(404);
  });

  it('go through batches: an upsert item sets them', async () => {
    const w = await world();
    const item = { ...w.body('B-1', { deliveryActual: AT(9, 45) }) } as Record<string, unknown>;
    delete item.external_reference_id;
    const res = json(await w.a.post('/v2/tms-api/batch/loads', { items: [{ operation: 'upsert', external_reference_id: 'B-1', load: item }] }));
    expect(res).toMatchObject({ success_count: 1, error_count: 0 });
    expect(json(await w.a.get('/v2/tms-api/loads/B-1')).stops[1].actual_arrival).toBe(iso(AT(9, 45)));
  });
});

describe('evidence on every recommendation (D14)', () => {
  it('on time with grace 15: 10:10 on time, 10:16 late, 07:30 on time; a stop without actual lowers coverage, not the rate', async () => {
    const w = await world();
    await w.carrier('CAR');
    await w.load('H1', { carrier: 'CAR', deliveryLate: WINDOW_END, deliveryActual: AT(10, 10) });
    await w.load('H2', { carrier: 'CAR', deliveryLate: WINDOW_END, deliveryActual: AT(10, 16) });
    await w.load('H3', { carrier: 'CAR', deliveryLate: WINDOW_END, deliveryActual: AT(7, 30) });
    await w.load('H4', { carrier: 'CAR', deliveryLate: WINDOW_END, deliveryActual: null });
    await w.load('OPEN', { status: 'ACTIVE', pickupEarly: NOW.getTime() + DAY });
    const [rec] = json(await w.a.get('/v2/tms-api/loads/OPEN')).carrier_recommendations;
    // Four loads of equal weight: effective loads 4; deliveries 2 on time of 3 scored, 3 of 4 scored;
    // no pickup has an actual (coverage 0, rate null).
    expect(rec.evidence).toEqual({
      effective_loads: 4,
      on_time: { pickup: { rate: null, scored: 0, coverage: 0 }, delivery: { rate: 0.667, scored: 3, coverage: 0.75 }, grace_minutes: 15 },
      price: { rate_vs_market: null, priced_loads: 0 },
      backhaul: null,
      // density 1 − e^−1 = 0.63212, consistency 1/(1+1) (no priced loads), cov (0 + 0.75)/2 = 0.375:
      // round(50 + 50 × 0.63212 × 0.5 × 0.6875) = round(60.86) = 61.
      confidence: 61,
    });
    expect(rec.reasons).toEqual(['Ran this lane 4 times in the last 90 days', 'On time at 2 of 3 deliveries']);
    expect((await w.recs('OPEN')).carrier_recommendations[0].evidence).toEqual(rec.evidence);

    // A window moved after the arrival does not change the outcome: H2 stays late (10:16 against 10:00,
    // not 11:00). Its delivery date moves an hour, so its weight moves by 0.5^(1/24/90): still 0.667.
    const h2 = w.body('H2', { carrier: 'CAR', deliveryLate: WINDOW_END + HOUR });
    const moved = await w.a.put('/v2/tms-api/loads/H2', { stops: h2.stops });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(json(moved).stops[1].actual_arrival).toBe(iso(AT(10, 16)));
    const again = (await w.recs('OPEN')).carrier_recommendations[0];
    expect(again.evidence.on_time.delivery).toEqual({ rate: 0.667, scored: 3, coverage: 0.75 });
    expect(again.reasons).toContain('On time at 2 of 3 deliveries');

    // The organization's own grace (20 min): 10:16 is now on time.
    await t.store.db.updateTable('organizations').set({ on_time_grace_minutes: 20 }).where('id', '=', w.a.orgId).execute();
    const graced = (await w.recs('OPEN')).carrier_recommendations[0];
    expect(graced.evidence.on_time).toMatchObject({ delivery: { rate: 1, scored: 3, coverage: 0.75 }, grace_minutes: 20 });
    expect(graced.reasons).toContain('On time at 3 of 3 deliveries');
  });

  it('price against the market at the time: 1,900 over 1,000 miles at a 2.00 $/mi snapshot is 0.95', async () => {
    const w = await world();
    await w.carrier('CAR');
    const snapshot = async (rate: number, asOf: number) => {
      const res = await w.a.post('/v2/tms-api/market-rates', {
        origin: { location_external_reference_id: w.o },
        destination: { location_external_reference_id: w.d },
        equipment_type: 'DRY_VAN',
        rate_per_mile: rate,
        as_of: iso(asOf),
      });
      expect(res.statusCode, res.body).toBe(201);
    };
    await snapshot(2.0, NOW.getTime() - 60 * DAY);
    // Published after the load was delivered: not the market at the time.
    await snapshot(3.0, NOW.getTime() - 5 * DAY);
    await w.load('H1', { carrier: 'CAR', deliveryLate: NOW.getTime() - 10 * DAY, total: 1900, miles: 1000 });
    await w.load('OPEN', { status: 'ACTIVE', pickupEarly: NOW.getTime() + DAY, miles: 1000 });
    const rec = (await w.recs('OPEN')).carrier_recommendations[0];
    expect(rec.evidence.price).toEqual({ rate_vs_market: 0.95, priced_loads: 1 });
    // One priced load: no price reason (needs 2), and consistency's cv is 1.
    expect(rec.reasons).toEqual(['Ran this lane 1 times in the last 90 days']);
    // A second load at 1,800 (0.90): median of {0.90, 0.95} with equal-ish weights; the reason reads "8% under market" or so.
    await w.load('H2', { carrier: 'CAR', deliveryLate: NOW.getTime() - 10 * DAY, total: 1800, miles: 1000 });
    const two = (await w.recs('OPEN')).carrier_recommendations[0];
    expect(two.evidence.price).toEqual({ rate_vs_market: 0.9, priced_loads: 2 });
    expect(two.reasons).toEqual(['Ran this lane 2 times in the last 90 days', '10% under market']);
    // A snapshot published since (2.50 $/mi as of 20 days ago) is the market at the deliveries now: the
    // lane's market history kept by the service is read again after a market-rate write.
    await snapshot(2.5, NOW.getTime() - 20 * DAY);
    const repriced = (await w.recs('OPEN')).carrier_recommendations[0];
    expect(repriced.evidence.price).toEqual({ rate_vs_market: 0.72, priced_loads: 2 });
    expect(repriced.reasons).toEqual(['Ran this lane 2 times in the last 90 days', '28% under market']);
  });

  /** Carriers HIST and BH with a load each on the lane; BH on its way to 20 miles north of the origin, due 10 h before `pickup`. */
  async function backhaulWorld() {
    const w = await world();
    await w.carrier('HIST');
    await w.carrier('BH');
    const pickup = NOW.getTime() + 2 * DAY;
    await w.load('H-HIST', { carrier: 'HIST', deliveryLate: NOW.getTime() - DAY });
    await w.load('H-BH', { carrier: 'BH', deliveryLate: NOW.getTime() - DAY });
    const near = await w.location(north(ORIGIN, 20));
    await w.load('ON-WAY', { carrier: 'BH', status: 'EN_ROUTE', from: w.d, to: near, deliveryLate: pickup - 10 * HOUR, pickupEarly: pickup - 2 * DAY });
    return { w, pickup, near };
  }

  it('backhaul: present 10 h before the pickup, absent at 60 h, never from another organization', async () => {
    const { w, pickup, near } = await backhaulWorld();
    await w.load('OPEN', { status: 'ACTIVE', pickupEarly: pickup });
    const recs = (await w.recs('OPEN')).carrier_recommendations;
    const bh = recs.find((r: any) => r.carrier_external_reference_id === 'BH');
    expect(bh.evidence.backhaul).toEqual({ load_external_reference_id: 'ON-WAY', miles_to_origin: 20, hours_before_pickup: 10 });
    expect(bh.reasons[0]).toBe('Delivers 20 mi from this pickup 10 h before it (ON-WAY)');
    expect(recs.find((r: any) => r.carrier_external_reference_id === 'HIST').evidence.backhaul).toBeNull();

    // A load on its way whose delivery deadline is not filled yet (written by an older instance during a
    // rolling deploy, or before migration 0021): found by its stops all the same.
    await t.store.db
      .updateTable('loads')
      .set({ delivery_deadline: null })
      .where('org_id', '=', w.a.orgId)
      .where('external_reference_id', '=', 'ON-WAY')
      .execute();
    const unfilled = (await w.recs('OPEN')).carrier_recommendations.find((r: any) => r.carrier_external_reference_id === 'BH');
    expect(unfilled.evidence.backhaul).toEqual({ load_external_reference_id: 'ON-WAY', miles_to_origin: 20, hours_before_pickup: 10 });

    // 60 h before the pickup: outside 0–48 h.
    await w.a.put('/v2/tms-api/loads/ON-WAY', {
      stops: w.body('ON-WAY', { from: w.d, to: near, deliveryLate: pickup - 60 * HOUR, pickupEarly: pickup - 4 * DAY }).stops,
    });
    expect((await w.recs('OPEN')).carrier_recommendations.find((r: any) => r.carrier_external_reference_id === 'BH').evidence.backhaul).toBeNull();

    // Another organization's load of a carrier with the same reference is never this one's backhaul.
    const other = await world();
    await other.carrier('BH');
    const otherNear = await other.location(north(ORIGIN, 20));
    await other.load('THEIRS', {
      carrier: 'BH',
      status: 'EN_ROUTE',
      from: other.d,
      to: otherNear,
      deliveryLate: pickup - 10 * HOUR,
      pickupEarly: pickup - 2 * DAY,
    });
    expect((await w.recs('OPEN')).carrier_recommendations.find((r: any) => r.carrier_external_reference_id === 'BH').evidence.backhaul).toBeNull();
  });

  it('the follow-up ranks several open loads of one lane together as each load alone: backhauls stay per load', async () => {
    const { w, pickup } = await backhaulWorld();
    // Same two places: A's pickup is 10 h after BH's delivery nearby, B's and C's are days later.
    await w.load('OPEN-A', { status: 'ACTIVE', pickupEarly: pickup });
    await w.load('OPEN-B', { status: 'ACTIVE', pickupEarly: pickup + 5 * DAY });
    await w.load('OPEN-C', { status: 'ACTIVE', pickupEarly: pickup + 6 * DAY });
    await t.recommendations.idle();
    const feed = json(await w.a.get('/v2/tms-api/events?limit=500'));
    const start = feed.next_after;
    // One batch of history by a carrier new to the lane: one follow-up ranks the three open loads in one pass.
    await w.carrier('NEW');
    const batch = await w.a.post('/v2/tms-api/batch/loads', {
      items: [{ operation: 'create', load: w.body('H-NEW', { carrier: 'NEW', deliveryLate: NOW.getTime() - 2 * DAY }) }],
    });
    expect(json(batch).success_count).toBe(1);
    await t.recommendations.idle();
    const changed = json(await w.a.get(`/v2/tms-api/events?limit=500&after=${start}`)).items.filter((e: any) => e.type === 'load.recommendations_changed');
    const byRef = new Map(changed.map((e: any) => [e.data.external_reference_id, e.data.carrier_recommendations]));
    expect([...byRef.keys()].sort()).toEqual(['OPEN-A', 'OPEN-B', 'OPEN-C']);
    for (const ref of ['OPEN-A', 'OPEN-B', 'OPEN-C']) {
      expect(byRef.get(ref), ref).toEqual((await w.recs(ref)).carrier_recommendations);
    }
    const bhOf = (ref: string) => (byRef.get(ref) as any[]).find((r) => r.carrier_external_reference_id === 'BH');
    expect(bhOf('OPEN-A').evidence.backhaul).toEqual({ load_external_reference_id: 'ON-WAY', miles_to_origin: 20, hours_before_pickup: 10 });
    expect(bhOf('OPEN-A').reasons[0]).toBe('Delivers 20 mi from this pickup 10 h before it (ON-WAY)');
    expect(bhOf('OPEN-B').evidence.backhaul).toBeNull();
    expect(bhOf('OPEN-C').evidence.backhaul).toBeNull();
    expect(bhOf('OPEN-C')).toEqual(bhOf('OPEN-B'));
  });

  it('balanced lets a recent, on-time, cheaper carrier pass an older, late, dearer one; the default keeps D7', async () => {
    const w = await world();
    await w.carrier('OLD');
    await w.carrier('NEW');
    const res = await w.a.post('/v2/tms-api/market-rates', {
      origin: { location_external_reference_id: w.o },
      destination: { location_external_reference_id: w.d },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
      as_of: iso(NOW.getTime() - 400 * DAY),
    });
    expect(res.statusCode, res.body).toBe(201);
    const old = NOW.getTime() - 120 * DAY;
    for (const ref of ['O1', 'O2', 'O3']) await w.load(ref, { carrier: 'OLD', deliveryLate: old, deliveryActual: old + HOUR, total: 2400, miles: 1000 });
    await w.load('N1', { carrier: 'NEW', deliveryLate: NOW.getTime(), deliveryActual: NOW.getTime() - HOUR, total: 1600, miles: 1000 });
    await w.load('OPEN', { status: 'ACTIVE', pickupEarly: NOW.getTime() + DAY, miles: 1000 });

    // D7: OLD 3 × 0.5^(120/90) = 1.190551 before NEW 1.
    const history = await w.recs('OPEN');
    expect(history).toMatchObject({ ranking: 'history', lane_radius_miles: 100 });
    expect(history.carrier_recommendations.map((r: any) => [r.carrier_external_reference_id, r.score])).toEqual([
      ['OLD', 1.190551],
      ['NEW', 1],
    ]);
    expect(history.carrier_recommendations[0].balanced_score).toBeUndefined();
    // Balanced: OLD p = 2.55 / (1.190551 + 3) = 0.608512, price clamp(1/1.2) = 0.833333:
    //   1.190551 × 0.804256 × 0.833333 = 0.7979; NEW p = 3.55 / 4 = 0.8875, clamp(1/0.8) = 1.2: 1 × 0.94375 × 1.2 = 1.1325.
    const balanced = await w.recs('OPEN', '?rank_by=balanced');
    expect(balanced).toMatchObject({ ranking: 'balanced', lane_radius_miles: 100 });
    expect(balanced.carrier_recommendations.map((r: any) => [r.carrier_external_reference_id, r.score, r.balanced_score])).toEqual([
      ['NEW', 1, 1.1325],
      ['OLD', 1.190551, 0.7979],
    ]);
    expect(balanced.carrier_recommendations[1].evidence.price).toEqual({ rate_vs_market: 1.2, priced_loads: 3 });
    // Three identical priced loads: cv 0, consistency 1; effective loads 3, coverage delivery 1, pickup 0:
    //   round(50 + 50 × (1 − e^−0.75) × 1 × 0.75) = round(50 + 19.79) = 70.
    expect(balanced.carrier_recommendations[1].evidence.confidence).toBe(70);
    expect(balanced.carrier_recommendations[1].reasons).toEqual([
      'Ran this lane 3 times, last on ' + iso(old).slice(0, 10),
      'On time at 0 of 3 deliveries',
      '20% over market',
    ]);
    // The GET of the load stays D7.
    expect(json(await w.a.get('/v2/tms-api/loads/OPEN')).carrier_recommendations.map((r: any) => r.carrier_external_reference_id)).toEqual(['OLD', 'NEW']);
    expect((await w.a.get('/v2/tms-api/loads/OPEN/carrier-recommendations?rank_by=best')).statusCode).toBe(422);
  });

  it('widen only when asked: a lane of fewer than 3 carriers widens to 150 miles (weight 0.25)', async () => {
    const w = await world();
    await w.carrier('NEAR');
    await w.carrier('FAR');
    await w.load('H-NEAR', { carrier: 'NEAR' });
    await w.load('H-FAR', { carrier: 'FAR', from: await w.location(north(ORIGIN, 120)) });
    await w.load('OPEN', { status: 'ACTIVE', pickupEarly: NOW.getTime() + DAY });
    const plain = await w.recs('OPEN');
    expect(plain.lane_radius_miles).toBe(100);
    expect(plain.carrier_recommendations.map((r: any) => r.carrier_external_reference_id)).toEqual(['NEAR']);
    const wide = await w.recs('OPEN', '?widen=true');
    expect(wide.lane_radius_miles).toBe(250);
    expect(wide.carrier_recommendations.map((r: any) => [r.carrier_external_reference_id, r.score])).toEqual([
      ['NEAR', 1],
      ['FAR', 0.25],
    ]);
  });
});

describe('tracking events (D14)', () => {
  async function tracked() {
    const w = await world();
    await w.carrier('CAR');
    // Pickup window 2026-03-02 08:00–10:00 local (America/Chicago, CST −6): 14:00–16:00 UTC.
    const body = w.body('T-1', { carrier: 'CAR', status: 'EN_ROUTE' });
    body.stops[0] = { ...(body.stops[0] as any), early_arrival: '2026-03-02T14:00:00Z', late_arrival: '2026-03-02T16:00:00Z' };
    body.stops[1] = { ...(body.stops[1] as any), early_arrival: '2026-03-03T14:00:00Z', late_arrival: '2026-03-03T18:00:00Z' };
    expect((await w.a.post('/v2/tms-api/loads', body)).statusCode).toBe(201);
    return w;
  }
  const events = async (a: Tenant) => json(await a.get('/v2/tms-api/events?types=load.stop_arrived,load.stop_departed')).items;

  it('sets the actual from the local time at the stop (occurred_at_local), once per event_id, and emits load.stop_arrived', async () => {
    const w = await tracked();
    const ev = { event_id: 'eld-1', type: 'ARRIVED', stop_number: 1, occurred_at_local: '2026-03-02T10:10:00', source: 'ELD' };
    const res = await w.a.post('/v2/tms-api/loads/T-1/tracking-events', ev);
    expect(res.statusCode, res.body).toBe(201);
    const answer = {
      event_id: 'eld-1',
      load_external_reference_id: 'T-1',
      stop_number: 1,
      type: 'ARRIVED',
      occurred_at: '2026-03-02T16:10:00.000Z',
      occurred_at_local: '2026-03-02T10:10:00',
      time_zone: 'America/Chicago',
      source: 'ELD',
    };
    expect(json(res)).toEqual(answer);
    const load = json(await w.a.get('/v2/tms-api/loads/T-1'));
    expect(load.stops[0].actual_arrival).toBe('2026-03-02T16:10:00.000Z');
    const first = await events(w.a);
    expect(first.map((e: any) => e.type)).toEqual(['load.stop_arrived']);
    const { carrier_recommendations: _r, ...withoutRecs } = load;
    expect(first[0].data).toEqual(withoutRecs);

    // The same id again: the same answer, nothing written (even with another body).
    const again = await w.a.post('/v2/tms-api/loads/T-1/tracking-events', { ...ev, occurred_at_local: '2026-03-02T11:00:00' });
    expect(again.statusCode).toBe(201);
    expect(json(again)).toEqual(answer);
    expect(await events(w.a)).toHaveLength(1);
    expect(json(await w.a.get('/v2/tms-api/loads/T-1')).stops[0].actual_arrival).toBe('2026-03-02T16:10:00.000Z');
  });

  it('maps EDI 214 codes, refuses a contradicting type, and needs a correction to replace a time', async () => {
    const w = await tracked();
    const post = (body: Record<string, unknown>) => w.a.post('/v2/tms-api/loads/T-1/tracking-events', body);
    const departed = await post({ event_id: 'edi-1', edi_status_code: 'AF', stop_number: 1, occurred_at: '2026-03-02T16:40:00Z' });
    expect(departed.statusCode, departed.body).toBe(201);
    expect(json(departed)).toMatchObject({
      type: 'DEPARTED',
      source: 'EDI',
      occurred_at: '2026-03-02T16:40:00.000Z',
      occurred_at_local: '2026-03-02T10:40:00',
      time_zone: 'America/Chicago',
    });
    expect(json(await post({ event_id: 'edi-2', edi_status_code: 'x3', stop_number: 1, occurred_at: '2026-03-02T10:05:00-06:00' }))).toMatchObject({
      type: 'ARRIVED',
      occurred_at: '2026-03-02T16:05:00.000Z',
    });

    const contradicting = await post({ event_id: 'edi-3', type: 'ARRIVED', edi_status_code: 'D1', stop_number: 2, occurred_at: '2026-03-03T12:00:00' });
    expect(contradicting.statusCode).toBe(422);
    expect(json(contradicting).detail).toEqual([
      { type: 'value_error', loc: ['body', 'edi_status_code'], msg: 'Value error, edi_status_code D1 means DEPARTED, which contradicts type ARRIVED' },
    ]);
    const neither = await post({ event_id: 'edi-4', stop_number: 2, occurred_at: '2026-03-03T12:00:00' });
    expect(neither.statusCode).toBe(422);
    expect(json(neither).detail[0].loc).toEqual(['body', 'type']);
    const unknownStop = await post({ event_id: 'edi-5', type: 'ARRIVED', stop_number: 9, occurred_at: '2026-03-03T12:00:00' });
    expect(unknownStop.statusCode).toBe(422);
    expect(json(unknownStop).detail[0]).toMatchObject({ loc: ['body', 'stop_number'], msg: "Value error, load 'T-1' has no stop 9 (its stops: 1, 2)" });
    expect((await post({ event_id: 'edi-6', type: 'ARRIVED', stop_number: 1, occurred_at: 'yesterday' })).statusCode).toBe(422);
    expect(
      (await w.a.post('/v2/tms-api/loads/NOPE/tracking-events', { event_id: 'x', type: 'ARRIVED', stop_number: 1, occurred_at: '2026-03-03T12:00:00Z' }))
        .statusCode,
    ).toBe(404);

    // A different arrival at stop 1 without "correction": 409; with it: replaced.
    const conflict = await post({ event_id: 'fix-1', type: 'ARRIVED', stop_number: 1, occurred_at_local: '2026-03-02T10:20:00' });
    expect(conflict.statusCode).toBe(409);
    expect(json(conflict).detail).toBe(
      'Stop 1 of load \'T-1\' already has actual_arrival 2026-03-02T16:05:00.000Z; send "correction": true to replace it with 2026-03-02T16:20:00.000Z',
    );
    const fixed = await post({ event_id: 'fix-1', type: 'ARRIVED', stop_number: 1, occurred_at_local: '2026-03-02T10:20:00', correction: true });
    expect(fixed.statusCode, fixed.body).toBe(201);
    expect(json(await w.a.get('/v2/tms-api/loads/T-1')).stops[0]).toMatchObject({
      actual_arrival: '2026-03-02T16:20:00.000Z',
      actual_departure: '2026-03-02T16:40:00.000Z',
    });
    // A departure before the arrival: 422.
    const early = await post({ event_id: 'bad-dep', type: 'DEPARTED', stop_number: 1, occurred_at: '2026-03-02T16:00:00Z', correction: true });
    expect(early.statusCode).toBe(422);
    expect((await events(w.a)).map((e: any) => e.type)).toEqual(['load.stop_departed', 'load.stop_arrived', 'load.stop_arrived']);
  });
});
