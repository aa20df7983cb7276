import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, startAppOn, type Tenant, type TestApp } from '../../helpers.js';
import { DALLAS, HOUSTON, north } from '../../fixtures.js';

const NOW = new Date('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;

const t = useApp({}, { clock: { now: () => new Date(NOW) } });

// Dallas → Houston, and points due north of each end (so the distance is exactly the offset).
const ORIGIN = DALLAS;
const DEST = HOUSTON;

interface World {
  a: Tenant;
  n: number;
  location(p: { latitude: number; longitude: number }): Promise<string>;
  carrier(ref: string, extra?: Record<string, unknown>): Promise<void>;
  load(
    ref: string,
    o: { from: string; to: string; carrier?: string | null; status?: string; equipment?: string; deliveredDaysAgo?: number; rates?: unknown[] },
  ): Promise<any>;
  recs(ref: string): Promise<any[]>;
}

async function world(): Promise<World> {
  const a = await newTenant(t);
  expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'CUST', name: 'Acme' })).statusCode).toBe(201);
  const w: World = {
    a,
    n: 0,
    async location(p) {
      const ref = `LOC-${++w.n}`;
      const res = await a.post('/v2/tms-api/locations', { external_reference_id: ref, name: ref, ...p });
      expect(res.statusCode, res.body).toBe(201);
      return ref;
    },
    async carrier(ref, extra = {}) {
      expect((await a.post('/v2/tms-api/carriers', { external_reference_id: ref, name: `Carrier ${ref}`, ...extra })).statusCode).toBe(201);
    },
    async load(ref, o) {
      const delivered = new Date(NOW.getTime() - (o.deliveredDaysAgo ?? 0) * DAY).toISOString();
      const res = await a.post('/v2/tms-api/loads', {
        external_reference_id: ref,
        equipment_type: o.equipment ?? 'DRY_VAN',
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST',
        status: o.status ?? 'DELIVERED',
        ...(o.carrier ? { carrier_external_reference_id: o.carrier } : {}),
        financial_rates: o.rates ?? [],
        stops: [
          { stop_type: 'Pickup', location_external_reference_id: o.from, early_arrival: '2025-01-01T00:00:00Z', late_arrival: '2025-01-01T01:00:00Z' },
          { stop_type: 'Delivery', location_external_reference_id: o.to, early_arrival: '2025-01-01T02:00:00Z', late_arrival: delivered },
        ],
      });
      expect(res.statusCode, res.body).toBe(201);
      return json(res);
    },
    async recs(ref) {
      const res = await a.get(`/v2/tms-api/loads/${ref}/carrier-recommendations`);
      expect(res.statusCode, res.body).toBe(200);
      return json(res).carrier_recommendations;
    },
  };
  return w;
}

describe('carrier recommendations (D7)', () => {
  it('an open load carries the carriers of delivered history on its lane, with every D7 field', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    await w.carrier('CAR-A', { dot_number: 'DOT111' });
    await w.load('H1', {
      from: o,
      to: d,
      carrier: 'CAR-A',
      rates: [
        { rate_entity: 'CARRIER', amount: 900 },
        { rate_entity: 'CARRIER', amount: 100 },
        { rate_entity: 'CUSTOMER', amount: 5000 },
      ],
    });
    await w.load('H2', { from: o, to: d, carrier: 'CAR-A', status: 'COMPLETED', deliveredDaysAgo: 90, rates: [{ rate_entity: 'CARRIER', amount: 1400 }] });
    await w.load('OPEN', { from: o, to: d, status: 'ACTIVE' });
    const got = json(await w.a.get('/v2/tms-api/loads/OPEN'));
    expect(got.carrier_recommendations).toEqual([
      {
        carrier_id: expect.stringMatching(/^carrier_/),
        carrier_external_reference_id: 'CAR-A',
        carrier_name: 'Carrier CAR-A',
        dot_number: 'DOT111',
        lane_load_count: 2,
        last_delivered_at: NOW.toISOString(),
        score: 1.5,
        average_carrier_rate: 1200,
        average_carrier_rate_currency: 'USD',
        // D14 adds these beside every D7 field (test/modules/recommendations/evidence.test.ts checks their numbers).
        evidence: expect.any(Object),
        reasons: expect.any(Array),
      },
    ]);
    expect(await w.recs('OPEN')).toEqual(got.carrier_recommendations);
  });

  it('only loads that name a carrier and reached delivery are history', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    for (const c of ['A', 'B', 'C', 'D', 'E', 'F']) await w.carrier(c);
    await w.load('H-DEL', { from: o, to: d, carrier: 'A', status: 'DELIVERED' });
    await w.load('H-PAY', { from: o, to: d, carrier: 'B', status: 'PAYMENT_PROCESSING' });
    await w.load('H-REV', { from: o, to: d, carrier: 'C', status: 'ACCOUNTING_REVIEW' });
    await w.load('H-ENROUTE', { from: o, to: d, carrier: 'D', status: 'EN_ROUTE' });
    await w.load('H-CANCEL', { from: o, to: d, carrier: 'E', status: 'CANCELLED' });
    await w.load('H-NOCARRIER', { from: o, to: d, carrier: null, status: 'DELIVERED' });
    await w.load('OPEN', { from: o, to: d, status: 'SPOT' });
    expect((await w.recs('OPEN')).map((r) => r.carrier_external_reference_id)).toEqual(['A', 'B', 'C']);
  });

  it('weights proximity by the farther end (25/50/100 miles), drops lanes beyond, and needs the same equipment', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    for (const c of ['NEAR', 'MID', 'FAR', 'OUT', 'REEFER']) await w.carrier(c);
    await w.load('H1', { from: await w.location(north(ORIGIN, 20)), to: d, carrier: 'NEAR' });
    await w.load('H2', { from: o, to: await w.location(north(DEST, 40)), carrier: 'MID' });
    await w.load('H3', { from: await w.location(north(ORIGIN, 10)), to: await w.location(north(DEST, 90)), carrier: 'FAR' });
    await w.load('H4', { from: await w.location(north(ORIGIN, 120)), to: d, carrier: 'OUT' });
    await w.load('H5', { from: o, to: d, carrier: 'REEFER', equipment: 'REEFER' });
    await w.load('OPEN', { from: o, to: d, status: 'ACTIVE' });
    const recs = await w.recs('OPEN');
    expect(recs.map((r) => [r.carrier_external_reference_id, r.score])).toEqual([
      ['NEAR', 1],
      ['MID', 0.7],
      ['FAR', 0.4],
    ]);
  });

  it('decays with age (half-life 90 days; future deliveries count as new) and breaks ties by latest delivery, then reference', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    for (const c of ['OLD', 'FUTURE', 'TIE-B', 'TIE-A', 'TIE-LATE']) await w.carrier(c);
    await w.load('H-OLD', { from: o, to: d, carrier: 'OLD', deliveredDaysAgo: 180 });
    await w.load('H-FUT', { from: o, to: d, carrier: 'FUTURE', deliveredDaysAgo: -10 });
    // Same score 0.5: TIE-LATE by its later delivery? No: equal scores need equal weights; make them so.
    await w.load('H-TB', { from: o, to: d, carrier: 'TIE-B', deliveredDaysAgo: 90 });
    await w.load('H-TA', { from: o, to: d, carrier: 'TIE-A', deliveredDaysAgo: 90 });
    await w.load('H-TL1', { from: o, to: d, carrier: 'TIE-LATE', deliveredDaysAgo: 180 });
    await w.load('H-TL2', { from: o, to: d, carrier: 'TIE-LATE', deliveredDaysAgo: 180 });
    await w.load('OPEN', { from: o, to: d, status: 'TENDERED' });
    const recs = await w.recs('OPEN');
    expect(recs.map((r) => [r.carrier_external_reference_id, r.score, r.lane_load_count])).toEqual([
      ['FUTURE', 1, 1],
      // 0.5 each: TIE-LATE (2 × 0.25) was last delivered 180 days ago, TIE-A and TIE-B 90 days ago.
      ['TIE-A', 0.5, 1],
      ['TIE-B', 0.5, 1],
      ['TIE-LATE', 0.5, 2],
      ['OLD', 0.25, 1],
    ]);
    expect(recs[0].last_delivered_at).toBe(new Date(NOW.getTime() + 10 * DAY).toISOString());
  });

  it('leaves out the carrier already assigned, returns at most 10, and empty lists for loads that are not open', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    for (let i = 0; i < 12; i++) {
      await w.carrier(`C${String(i).padStart(2, '0')}`);
      await w.load(`H${i}`, { from: o, to: d, carrier: `C${String(i).padStart(2, '0')}`, deliveredDaysAgo: i });
    }
    await w.load('OPEN', { from: o, to: d, status: 'ACTIVE', carrier: 'C00' });
    const recs = await w.recs('OPEN');
    expect(recs).toHaveLength(10);
    expect(recs.map((r) => r.carrier_external_reference_id)).toEqual(['C01', 'C02', 'C03', 'C04', 'C05', 'C06', 'C07', 'C08', 'C09', 'C10']);
    await w.load('COVERED', { from: o, to: d, status: 'COVERED' });
    expect(json(await w.a.get('/v2/tms-api/loads/COVERED')).carrier_recommendations).toEqual([]);
    // The dedicated endpoint answers for any load.
    const dedicated = json(await w.a.get('/v2/tms-api/loads/COVERED/carrier-recommendations'));
    expect(dedicated).toMatchObject({ external_reference_id: 'COVERED', status: 'COVERED', open: false });
    expect(dedicated.carrier_recommendations).toHaveLength(10);
    expect(json(await w.a.get('/v2/tms-api/loads/NOPE/carrier-recommendations'))).toEqual({ detail: "Load with external_reference_id 'NOPE' not found" });
  });

  it('reads its writes: status, carrier and stop changes, deleted loads and moved locations show at once', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    const elsewhere = await w.location(north(ORIGIN, 300));
    for (const c of ['A', 'B']) await w.carrier(c);
    await w.load('H', { from: o, to: d, carrier: 'A', status: 'EN_ROUTE' });
    await w.load('OPEN', { from: o, to: d, status: 'ACTIVE' });
    const refs = async () => (await w.recs('OPEN')).map((r) => r.carrier_external_reference_id);
    expect(await refs()).toEqual([]);
    await w.a.put('/v2/tms-api/loads/H', { status: 'DELIVERED' });
    expect(await refs()).toEqual(['A']);
    await w.a.put('/v2/tms-api/loads/H', { carrier_external_reference_id: 'B' });
    expect(await refs()).toEqual(['B']);
    const stopsElsewhere = (await w.a.get('/v2/tms-api/loads/H').then(json)).stops.map((s: any) => ({
      stop_type: s.stop_type,
      location_external_reference_id: s.stop_type === 'Pickup' ? elsewhere : s.location_external_reference_id,
      early_arrival: s.early_arrival,
      late_arrival: s.late_arrival,
    }));
    await w.a.put('/v2/tms-api/loads/H', { stops: stopsElsewhere });
    expect(await refs()).toEqual([]);
    // Move the far location back next to the open load's origin: the history follows the location.
    await w.a.put(`/v2/tms-api/locations/${elsewhere}`, north(ORIGIN, 5));
    expect(await refs()).toEqual(['B']);
    await w.a.del('/v2/tms-api/loads/H');
    expect(await refs()).toEqual([]);
  });
});

describe('market rate snapshots and max_buy_rate (D8)', () => {
  it('creates snapshots from a location, a postal code or coordinates (201), and lists them', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const res = await w.a.post('/v2/tms-api/market-rates', {
      origin: { location_external_reference_id: o },
      destination: { postal_code: '77002', state: 'TX' },
      equipment_type: 'dry_van',
      rate_per_mile: 2.1,
      rate_per_mile_high: 2.6,
      source: 'DAT',
      as_of: '2026-05-30T00:00:00Z',
    });
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body).toMatchObject({
      id: expect.stringMatching(/^mrs_/),
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.1,
      rate_per_mile_low: null,
      rate_per_mile_high: 2.6,
      currency: 'USD',
      source: 'DAT',
      as_of: '2026-05-30T00:00:00.000Z',
      origin: { location_external_reference_id: o, latitude: ORIGIN.latitude, state: 'US-TX' },
      destination: { location_external_reference_id: null, state: 'US-TX' },
    });
    const coords = await w.a.post('/v2/tms-api/market-rates', {
      origin: { latitude: 41.88, longitude: -87.63 },
      destination: { latitude: 33.75, longitude: -84.39 },
      equipment_type: 'REEFER',
      rate_per_mile: 3,
    });
    expect(json(coords)).toMatchObject({ as_of: NOW.toISOString(), origin: { state: 'US-IL' }, destination: { state: 'US-GA' } });
    const list = json(await w.a.get('/v2/tms-api/market-rates?equipment_type=reefer'));
    expect(list.items.map((r: any) => r.equipment_type)).toEqual(['REEFER']);
    expect(list.pagination.total).toBe(1);
  });

  it('refuses snapshots that cannot be placed or priced (422 with the field)', async () => {
    const w = await world();
    const bad = await w.a.post('/v2/tms-api/market-rates', {
      origin: { location_external_reference_id: 'NOPE' },
      destination: { postal_code: '75201', state: 'OK' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 0,
    });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail).toEqual([{ type: 'greater_than', loc: ['body', 'rate_per_mile'], msg: 'Input should be greater than 0' }]);
    const unknownLoc = await w.a.post('/v2/tms-api/market-rates', {
      origin: { location_external_reference_id: 'NOPE' },
      destination: { postal_code: '75201', state: 'TX' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
    });
    expect(json(unknownLoc).detail[0].loc).toEqual(['body', 'origin', 'location_external_reference_id']);
    const mismatch = await w.a.post('/v2/tms-api/market-rates', {
      origin: { latitude: 32, longitude: -97 },
      destination: { postal_code: '75201', state: 'OK' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
    });
    expect(json(mismatch).detail[0].loc).toEqual(['body', 'destination', 'postal_code']);
    const missing = await w.a.post('/v2/tms-api/market-rates', { origin: {}, destination: {} });
    expect(json(missing).detail.map((d: any) => d.loc.join('.'))).toEqual(['body.equipment_type', 'body.rate_per_mile']);
    const band = await w.a.post('/v2/tms-api/market-rates', {
      origin: { latitude: 32, longitude: -97 },
      destination: { latitude: 30, longitude: -95 },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
      rate_per_mile_high: 1.5,
    });
    expect(json(band).detail[0].loc).toEqual(['body', 'rate_per_mile_high']);
  });

  it('max_buy_rate: the caller’s when sent, else the latest snapshot on the lane × distance, else null', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    const open = await w.load('OPEN', { from: o, to: d, status: 'ACTIVE' });
    expect(open).toMatchObject({ max_buy_rate: null, max_buy_rate_source: null });
    const post = (body: Record<string, unknown>) =>
      w.a.post('/v2/tms-api/market-rates', { origin: north(ORIGIN, 30), destination: north(DEST, 10), equipment_type: 'DRY_VAN', ...body });
    expect((await post({ rate_per_mile: 2.0, rate_per_mile_high: 2.5, as_of: '2026-05-01T00:00:00Z' })).statusCode).toBe(201);
    expect((await post({ rate_per_mile: 1.8, as_of: '2026-05-20T00:00:00Z' })).statusCode).toBe(201);
    expect((await post({ rate_per_mile: 9.9, as_of: '2026-05-25T00:00:00Z', equipment_type: 'REEFER' })).statusCode).toBe(201);
    expect(
      (
        await w.a.post('/v2/tms-api/market-rates', {
          origin: north(ORIGIN, 150),
          destination: DEST,
          equipment_type: 'DRY_VAN',
          rate_per_mile: 7,
          as_of: '2026-05-31T00:00:00Z',
        })
      ).statusCode,
    ).toBe(201);
    const got = json(await w.a.get('/v2/tms-api/loads/OPEN'));
    expect(got.max_buy_rate_source).toBe('market');
    expect(got.max_buy_rate).toBe(Math.round(1.8 * got.total_distance * 100) / 100);
    await w.a.put('/v2/tms-api/loads/OPEN', { max_buy_rate: 2000 });
    expect(json(await w.a.get('/v2/tms-api/loads/OPEN'))).toMatchObject({ max_buy_rate: 2000, max_buy_rate_source: 'caller' });
    await w.a.put('/v2/tms-api/loads/OPEN', { max_buy_rate: null });
    expect(json(await w.a.get('/v2/tms-api/loads/OPEN')).max_buy_rate_source).toBe('market');
  });
});

describe('max_buy_rate from the market, kept per lane between requests', () => {
  it('follows a snapshot another instance posted, and a batch prices many loads alike', async () => {
    // A second app on the same database (startAppOn takes a SQLite path as well): another process's
    // writes, with its own memory and its own connection.
    const other = await startAppOn(t.config.databaseUrl, {}, { clock: { now: () => new Date(NOW) } });
    try {
      const w = await world();
      const o = await w.location(ORIGIN);
      const d = await w.location(DEST);
      const post = (app: TestApp, rate: number, asOf: string) =>
        app.app.inject({
          method: 'POST',
          url: '/v2/tms-api/market-rates',
          headers: w.a.headers,
          payload: { origin: ORIGIN, destination: DEST, equipment_type: 'DRY_VAN', rate_per_mile: rate, as_of: asOf },
        });
      expect((await post(t, 2.0, '2026-05-01T00:00:00Z')).statusCode).toBe(201);
      const open = await w.load('MEMO-OPEN', { from: o, to: d, status: 'ACTIVE' });
      const miles = open.total_distance as number;
      expect(open).toMatchObject({ max_buy_rate: Math.round(2.0 * miles * 100) / 100, max_buy_rate_source: 'market' });
      // Read again: the kept price, no snapshot read. Then a newer snapshot through the other instance:
      // the next read reads the lane's snapshots again and shows it.
      const snapshotReads = async (ref: string) => {
        const seen: string[] = [];
        const stop = t.store.statements.watch((sql) => seen.push(sql));
        try {
          const body = json(await w.a.get(`/v2/tms-api/loads/${ref}`));
          // The lane's snapshots (not the probe for whether the equipment has any: `select 1 as one`).
          return { body, reads: seen.filter((sql) => sql.includes('market_rate_snapshots') && sql.includes('rate_per_mile')).length };
        } finally {
          stop();
        }
      };
      const again = await snapshotReads('MEMO-OPEN');
      expect(again.body.max_buy_rate).toBe(Math.round(2.0 * miles * 100) / 100);
      expect(again.reads).toBe(0);
      expect((await post(other, 2.4, '2026-05-20T00:00:00Z')).statusCode).toBe(201);
      const after = await snapshotReads('MEMO-OPEN');
      expect(after.body.max_buy_rate).toBe(Math.round(2.4 * miles * 100) / 100);
      expect(after.reads).toBe(1);
      // A batch of loads on the lane and on a lane without snapshots: each priced as its own read shows it.
      const items = ['MEMO-B1', 'MEMO-B2'].map((ref, i) => ({
        operation: 'upsert',
        external_reference_id: ref,
        load: {
          equipment_type: i === 0 ? 'DRY_VAN' : 'REEFER',
          transport_mode: 'FTL',
          customer_external_reference_id: 'CUST',
          status: 'ACTIVE',
          stops: [
            { stop_type: 'Pickup', location_external_reference_id: o, early_arrival: '2026-06-02T08:00:00Z', late_arrival: '2026-06-02T10:00:00Z' },
            { stop_type: 'Delivery', location_external_reference_id: d, early_arrival: '2026-06-03T08:00:00Z', late_arrival: '2026-06-03T12:00:00Z' },
          ],
        },
      }));
      expect(json(await w.a.post('/v2/tms-api/batch/loads', { items })).success_count).toBe(2);
      expect(json(await w.a.get('/v2/tms-api/loads/MEMO-B1'))).toMatchObject({
        max_buy_rate: Math.round(2.4 * miles * 100) / 100,
        max_buy_rate_source: 'market',
      });
      expect(json(await w.a.get('/v2/tms-api/loads/MEMO-B2'))).toMatchObject({ max_buy_rate: null, max_buy_rate_source: null });
    } finally {
      await other.close();
    }
  });
});

describe('lane stats, refreshed by the analytics run', () => {
  it('counts the lanes a request touched, once per batch', async () => {
    const w = await world();
    const o = await w.location(ORIGIN);
    const d = await w.location(DEST);
    await w.carrier('A');
    await w.carrier('B');
    const items = ['A', 'B', 'A'].map((carrier, i) => ({
      operation: 'create',
      load: {
        external_reference_id: `B${i}`,
        equipment_type: 'DRY_VAN',
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST',
        status: 'DELIVERED',
        carrier_external_reference_id: carrier,
        stops: [
          { stop_type: 'Pickup', location_external_reference_id: o, early_arrival: '2026-05-01T00:00:00Z', late_arrival: '2026-05-01T01:00:00Z' },
          { stop_type: 'Delivery', location_external_reference_id: d, early_arrival: '2026-05-02T00:00:00Z', late_arrival: `2026-05-0${2 + i}T05:00:00Z` },
        ],
      },
    }));
    expect(json(await w.a.post('/v2/tms-api/batch/loads', { items })).success_count).toBe(3);
    const stats = await t.store.db.selectFrom('lane_stats').selectAll().where('org_id', '=', w.a.orgId).execute();
    expect(stats).toEqual([
      expect.objectContaining({ equipment_type: 'DRY_VAN', load_count: 3, carrier_count: 2, last_delivered_at: '2026-05-04T05:00:00.000Z' }),
    ]);
    await w.a.del('/v2/tms-api/loads/B2');
    const after = await t.store.db.selectFrom('lane_stats').selectAll().where('org_id', '=', w.a.orgId).execute();
    expect(after).toEqual([expect.objectContaining({ load_count: 2, carrier_count: 2, last_delivered_at: '2026-05-03T05:00:00.000Z' })]);
  });
});
