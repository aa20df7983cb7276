import { describe, expect, it } from 'vitest';
import type { LaneHistoryRow } from '../../../src/modules/lanes/lane-area.repo.js';
import { ENDS_NOT_KEPT, packedBytes, packLaneRows, unpackLaneRows } from '../../../src/modules/lanes/lane-rows.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { useApp, json, newTenant, type Tenant, type TestApp } from '../../helpers.js';

// An open load's lane rows kept in memory (src/modules/lanes/lane-rows.ts, lanes.service.ts): the same
// answers as a read, every write that changes what the rows hold shows from the next request, and a
// write that changes no history (the open load's own) keeps them.

const NOW = new Date('2026-03-20T00:00:00.000Z');
const t = useApp({}, { clock: { now: () => new Date(NOW) } });
const plain = useApp({ readCache: false }, { clock: { now: () => new Date(NOW) } });

/** lanebridge_cache_lookups_total of the lane rows, by result. */
async function laneLookups(app: TestApp): Promise<{ hit: number; miss: number }> {
  const metric = app.metrics.registry.getSingleMetric('lanebridge_cache_lookups_total')!;
  const values = (await metric.get()).values.filter((v) => v.labels.cache === 'lane');
  return { hit: values.find((v) => v.labels.result === 'hit')?.value ?? 0, miss: values.find((v) => v.labels.result === 'miss')?.value ?? 0 };
}

/** A tenant with three carriers' history Dallas → Houston and an open load on the lane. */
async function lane(app: TestApp): Promise<Tenant> {
  const a = await newTenant(app);
  await seedFreight(a);
  for (const ref of ['CAR-2', 'CAR-3'])
    expect((await a.post('/v2/tms-api/carriers', { external_reference_id: ref, name: `Carrier ${ref}` })).statusCode).toBe(201);
  const history = [
    ['H-1', 'CAR-1', 1500],
    ['H-2', 'CAR-1', 1600],
    ['H-3', 'CAR-2', 1400],
    ['H-4', 'CAR-3', null],
  ] as const;
  for (const [ref, carrier, total] of history) {
    const body = dallasToHouston(ref, {
      status: 'DELIVERED',
      carrier_external_reference_id: carrier,
      financial_rates: total === null ? [] : [{ rate_entity: 'CARRIER', amount: total }],
    });
    body.stops[1] = { ...body.stops[1]!, actual_arrival: '2026-03-03T12:10:00.000Z' } as (typeof body.stops)[1];
    const res = await a.post('/v2/tms-api/loads', body);
    expect(res.statusCode, res.body).toBe(201);
  }
  // The open load ends at a second place at Houston: moving HOU moves the history, not the open load.
  expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'HOU-2', name: 'Houston Yard', postal_code: '77002', state: 'TX' })).statusCode).toBe(
    201,
  );
  const open = dallasToHouston('OPEN', { status: 'ACTIVE' });
  open.stops[1] = { ...open.stops[1]!, location_external_reference_id: 'HOU-2' };
  expect((await a.post('/v2/tms-api/loads', open)).statusCode).toBe(201);
  return a;
}

/** The recommendations without the ids of this database (carrier ids differ between two apps). */
const comparable = (recs: { carrier_id: string }[]) => recs.map(({ carrier_id: _, ...rest }) => rest);

describe('an open load lane rows, kept', () => {
  it('the second GET takes the rows from memory and answers the same bytes; a server without it the same recommendations', async () => {
    const a = await lane(t);
    const before = await laneLookups(t);
    const first = await a.get('/v2/tms-api/loads/OPEN');
    const second = await a.get('/v2/tms-api/loads/OPEN');
    const after = await laneLookups(t);
    expect(after.miss - before.miss).toBe(1);
    expect(after.hit - before.hit).toBe(1);
    expect(second.body).toBe(first.body);
    const recs = json(second).carrier_recommendations;
    expect(recs.map((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id)).toEqual(['CAR-1', 'CAR-2', 'CAR-3']);
    expect(recs[0]).toMatchObject({ lane_load_count: 2, average_carrier_rate: 1550, evidence: { on_time: { delivery: { rate: 1, scored: 2, coverage: 1 } } } });
    // The dedicated endpoint, both rankings, from the same kept rows.
    const balanced = await a.get('/v2/tms-api/loads/OPEN/carrier-recommendations?rank_by=balanced');
    expect(balanced.statusCode, balanced.body).toBe(200);
    expect((await laneLookups(t)).hit - after.hit).toBe(1);

    const b = await lane(plain);
    const uncached = json(await b.get('/v2/tms-api/loads/OPEN')).carrier_recommendations;
    expect(comparable(recs)).toEqual(comparable(uncached));
    expect(comparable(json(balanced).carrier_recommendations)).toEqual(
      comparable(json(await b.get('/v2/tms-api/loads/OPEN/carrier-recommendations?rank_by=balanced')).carrier_recommendations),
    );
    // READ_CACHE=off keeps nothing.
    expect(await laneLookups(plain)).toEqual({ hit: 0, miss: 0 });
  });

  it('is kept per organization: two with the same writes (the same counters) and the same lane never share rows', async () => {
    const a = await lane(t);
    const b = await lane(t);
    const carriersOf = async (tenant: Tenant) => {
      const own = json(await tenant.get('/v2/tms-api/carriers?page_size=100')).items.map((c: { id: string }) => c.id);
      const recs = json(await tenant.get('/v2/tms-api/loads/OPEN')).carrier_recommendations.map((r: { carrier_id: string }) => r.carrier_id);
      return { own, recs };
    };
    const first = await carriersOf(a);
    const before = await laneLookups(t);
    const second = await carriersOf(b);
    expect((await laneLookups(t)).miss - before.miss).toBe(1);
    expect(first.recs).toHaveLength(3);
    expect(second.recs).toHaveLength(3);
    expect(first.recs.every((id: string) => first.own.includes(id))).toBe(true);
    expect(second.recs.every((id: string) => second.own.includes(id))).toBe(true);
  });

  it('a delivered load, a tracking event, a moved place and the grace show from the next request', async () => {
    const a = await lane(t);
    const recs = async () => json(await a.get('/v2/tms-api/loads/OPEN')).carrier_recommendations;
    await recs();
    expect((await recs()).map((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id)).toEqual(['CAR-1', 'CAR-2', 'CAR-3']);

    // A write of the open load itself changes no history: the rows stay kept.
    const kept = await laneLookups(t);
    expect((await a.put('/v2/tms-api/loads/OPEN', { description: 'Frozen peas' })).statusCode).toBe(200);
    expect(json(await a.get('/v2/tms-api/loads/OPEN')).description).toBe('Frozen peas');
    expect(await laneLookups(t)).toEqual({ hit: kept.hit + 1, miss: kept.miss });

    // CAR-3 runs the lane twice more: first now.
    for (const ref of ['H-5', 'H-6']) {
      expect((await a.post('/v2/tms-api/loads', dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: 'CAR-3' }))).statusCode).toBe(201);
    }
    const delivered = await recs();
    expect(delivered[0]).toMatchObject({ carrier_external_reference_id: 'CAR-3', lane_load_count: 3 });

    // A tracking event on a history load: CAR-2's delivery arrives late (12:10 → 13:00 against 12:00 + 15 min).
    const event = await a.post('/v2/tms-api/loads/H-3/tracking-events', {
      event_id: 'ev-1',
      type: 'ARRIVED',
      stop_number: 2,
      occurred_at: '2026-03-03T13:00:00.000Z',
      correction: true,
    });
    expect(event.statusCode, event.body).toBe(201);
    const late = (await recs()).find((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id === 'CAR-2');
    expect(late.evidence.on_time.delivery).toEqual({ rate: 0, scored: 1, coverage: 1 });

    // The grace, set as the dashboard sets it: 60 minutes makes that arrival on time.
    await t.services.accounts.setOnTimeGrace(a.orgId, 60);
    const graced = (await recs()).find((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id === 'CAR-2');
    expect(graced.evidence.on_time).toMatchObject({ delivery: { rate: 1, scored: 1, coverage: 1 }, grace_minutes: 60 });

    // HOU, where the history ends, moves to Los Angeles: no history is on the open load's lane any more.
    const moved = await a.put('/v2/tms-api/locations/HOU', { postal_code: '90012', state: 'CA', country: 'US' });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(await recs()).toEqual([]);
  });
});

describe('packLaneRows / unpackLaneRows', () => {
  const row = (i: number, extra: Partial<LaneHistoryRow> = {}): LaneHistoryRow => ({
    carrierId: `car_${i % 3}`,
    carrierRef: `CAR-${i % 3}`,
    origin: { latitude: 32.7 + i / 1000, longitude: -96.8 },
    destination: { latitude: 29.7, longitude: -95.3 - i / 1000 },
    deliveredAt: new Date(Date.UTC(2026, 0, 1 + i, 7, 5, 3, 120)).toISOString(),
    deliveredAtMs: Date.UTC(2026, 0, 1 + i, 7, 5, 3, 120),
    carrierRateTotal: i % 4 === 0 ? null : 1000 + i / 7,
    carrierRateCurrency: i % 4 === 0 ? null : i % 5 === 0 ? 'CAD' : 'USD',
    totalDistance: i % 6 === 0 ? null : 240.123 + i,
    stopOutcomes: i % 2 === 0 ? 'p,d' : `p-${i * 60},d${i * 37},d`,
    ...extra,
  });

  it('gives back the rows within the radius, field for field and in order, with their weights', () => {
    const rows = Array.from({ length: 40 }, (_, i) => row(i));
    // A delivery date kept as it was read (no milliseconds): given back as it was, not as ISO text.
    rows[6] = row(6, { deliveredAt: '2026-01-07T07:05:03Z', deliveredAtMs: Date.parse('2026-01-07T07:05:03Z') });
    const proximity = Float64Array.from(rows, (_, i) => [1, 0.7, 0.4, 0][i % 4]!);
    const { rows: back, proximity: weights } = unpackLaneRows(packLaneRows(rows, proximity));
    const kept = rows.filter((_, i) => i % 4 !== 3);
    expect(back).toEqual(kept.map((r) => ({ ...r, origin: ENDS_NOT_KEPT, destination: ENDS_NOT_KEPT })));
    expect([...weights]).toEqual(kept.map((_, j) => [1, 0.7, 0.4][j % 3]));
    expect(back[kept.indexOf(rows[6]!)]!.deliveredAt).toBe('2026-01-07T07:05:03Z');
    // New objects each time: a caller changing them changes nothing kept.
    const packed = packLaneRows(rows, proximity);
    unpackLaneRows(packed).rows[0]!.stopOutcomes = 'x';
    expect(unpackLaneRows(packed).rows[0]!.stopOutcomes).toBe('p,d');
  });

  it('weighs what it keeps by its bytes: a row of a hundred stops weighs its outcomes', () => {
    const short = packLaneRows([row(1)], Float64Array.of(1));
    const long = packLaneRows([row(1, { stopOutcomes: Array.from({ length: 100 }, (_, i) => `d-${31_536_000 + i}`).join(',') })], Float64Array.of(1));
    expect(packedBytes(long) - packedBytes(short)).toBeGreaterThan(1_000);
    expect(packedBytes(short)).toBeLessThan(300);
  });

  it('keeps nothing of an empty lane', () => {
    expect(unpackLaneRows(packLaneRows([], new Float64Array(0)))).toEqual({ rows: [], proximity: new Float64Array(0) });
  });
});
