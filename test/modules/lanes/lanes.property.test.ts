import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant } from '../../helpers.js';

/**
 * The service's recommendations against D7 written out plainly here, over random organizations of
 * locations, carriers and history loads: same carriers, same order, same scores.
 */

const NOW = new Date('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;

const t = useApp({}, { clock: { now: () => new Date(NOW) } });

const STATUSES = ['ACTIVE', 'SPOT', 'COVERED', 'EN_ROUTE', 'DELIVERED', 'PAYMENT_PROCESSING', 'ACCOUNTING_REVIEW', 'COMPLETED', 'CANCELLED'];
const HISTORY = new Set(['DELIVERED', 'PAYMENT_PROCESSING', 'ACCOUNTING_REVIEW', 'COMPLETED']);
const EQUIPMENT = ['DRY_VAN', 'REEFER'];

function miles(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 3958.7613 * Math.asin(Math.min(1, Math.sqrt(h)));
}

const point = (lat: number, lon: number, spread: number) =>
  fc.record({ lat: fc.double({ min: lat - spread, max: lat + spread, noNaN: true }), lon: fc.double({ min: lon - spread, max: lon + spread, noNaN: true }) });

const historyLoad = fc.record({
  from: fc.nat(5),
  to: fc.nat(5),
  carrier: fc.option(fc.nat(4), { nil: null }),
  // History statuses half the time, so lanes fill up; the rest must be ignored.
  status: fc.oneof(fc.constantFrom(...[...HISTORY]), fc.constantFrom(...STATUSES)),
  equipment: fc.constantFrom(...EQUIPMENT),
  ageDays: fc.integer({ min: -30, max: 400 }),
  carrierRates: fc.array(fc.integer({ min: 100, max: 3000 }), { maxLength: 2 }),
  extraPickupFirst: fc.boolean(),
});

const organization = fc.record({
  // Six origins around Dallas and six destinations around Houston, about ±60 miles each way: pairs
  // fall in every proximity band (25, 50, 100 miles) and beyond.
  origins: fc.array(point(32.78, -96.8, 0.9), { minLength: 6, maxLength: 6 }),
  destinations: fc.array(point(29.76, -95.37, 0.9), { minLength: 6, maxLength: 6 }),
  history: fc.array(historyLoad, { minLength: 10, maxLength: 35 }),
  open: fc.record({ from: fc.nat(5), to: fc.nat(5), equipment: fc.constantFrom(...EQUIPMENT), assigned: fc.option(fc.nat(4), { nil: null }) }),
});

type Org = typeof organization extends fc.Arbitrary<infer T> ? T : never;

function expected(org: Org) {
  const o = org.origins[org.open.from]!;
  const d = org.destinations[org.open.to]!;
  const byCarrier = new Map<string, { score: number; count: number; last: string; rates: number[] }>();
  for (const h of org.history) {
    if (h.carrier === null || !HISTORY.has(h.status) || h.equipment !== org.open.equipment) continue;
    const carrier = `CAR-${h.carrier}`;
    if (org.open.assigned !== null && carrier === `CAR-${org.open.assigned}`) continue;
    const farther = Math.max(miles(o, org.origins[h.from]!), miles(d, org.destinations[h.to]!));
    const weight = farther <= 25 ? 1 : farther <= 50 ? 0.7 : farther <= 100 ? 0.4 : 0;
    if (weight === 0) continue;
    const delivered = new Date(NOW.getTime() - h.ageDays * DAY);
    const age = Math.max(0, (NOW.getTime() - delivered.getTime()) / DAY);
    const entry = byCarrier.get(carrier) ?? { score: 0, count: 0, last: '', rates: [] };
    entry.score += weight * Math.pow(0.5, age / 90);
    entry.count += 1;
    if (delivered.toISOString() > entry.last) entry.last = delivered.toISOString();
    if (h.carrierRates.length > 0) entry.rates.push(h.carrierRates.reduce((s, x) => s + x, 0));
    byCarrier.set(carrier, entry);
  }
  return [...byCarrier.entries()]
    .map(([carrier, e]) => ({
      carrier,
      score: Math.round(e.score * 1e6) / 1e6,
      count: e.count,
      last: e.last,
      avg: e.rates.length ? Math.round((e.rates.reduce((s, x) => s + x, 0) / e.rates.length) * 100) / 100 : null,
    }))
    .sort((a, b) => b.score - a.score || (a.last < b.last ? 1 : a.last > b.last ? -1 : 0) || (a.carrier < b.carrier ? -1 : 1))
    .slice(0, 10);
}

function stops(from: string, to: string, deliveredAt: string, extraPickupFirst: boolean) {
  const pickups = [{ stop_type: 'Pickup', location_external_reference_id: from, early_arrival: '2025-01-01T00:00:00Z', late_arrival: '2025-01-01T01:00:00Z' }];
  // A Delivery-only stop before the pickup does not change the origin (the first Pickup/Both stop).
  const lead = extraPickupFirst
    ? [{ stop_type: 'Delivery', location_external_reference_id: to, early_arrival: '2024-12-31T00:00:00Z', late_arrival: '2024-12-31T01:00:00Z' }]
    : [];
  return [...lead, ...pickups, { stop_type: 'Delivery', location_external_reference_id: to, early_arrival: '2025-01-01T02:00:00Z', late_arrival: deliveredAt }];
}

describe('recommendations equal a brute-force D7 over random organizations', () => {
  it('holds for random history, lanes, statuses, equipment, ages and assigned carriers', async () => {
    let withRecommendations = 0;
    let withSeveral = 0;
    await fc.assert(
      fc.asyncProperty(organization, async (org) => {
        const a = await newTenant(t);
        const post = async (url: string, body: unknown) => {
          const res = await a.post(url, body);
          expect(res.statusCode, res.body).toBeLessThan(300);
          return json(res);
        };
        await post('/v2/tms-api/customers', { external_reference_id: 'CUST', name: 'c' });
        await post('/v2/tms-api/batch/carriers', {
          items: [0, 1, 2, 3, 4].map((i) => ({ operation: 'create', carrier: { external_reference_id: `CAR-${i}`, name: `Carrier ${i}` } })),
        });
        const locations = [
          ...org.origins.map((p, i) => ({
            operation: 'create',
            location: { external_reference_id: `O${i}`, name: `O${i}`, latitude: p.lat, longitude: p.lon },
          })),
          ...org.destinations.map((p, i) => ({
            operation: 'create',
            location: { external_reference_id: `D${i}`, name: `D${i}`, latitude: p.lat, longitude: p.lon },
          })),
        ];
        expect((await post('/v2/tms-api/batch/locations', { items: locations })).error_count).toBe(0);
        const loads = org.history.map((h, i) => ({
          operation: 'create',
          load: {
            external_reference_id: `H${i}`,
            equipment_type: h.equipment,
            transport_mode: 'FTL',
            customer_external_reference_id: 'CUST',
            status: h.status,
            ...(h.carrier !== null ? { carrier_external_reference_id: `CAR-${h.carrier}` } : {}),
            financial_rates: h.carrierRates.map((amount) => ({ rate_entity: 'CARRIER', amount })),
            stops: stops(`O${h.from}`, `D${h.to}`, new Date(NOW.getTime() - h.ageDays * DAY).toISOString(), h.extraPickupFirst),
          },
        }));
        loads.push({
          operation: 'create',
          load: {
            external_reference_id: 'OPEN',
            equipment_type: org.open.equipment,
            transport_mode: 'FTL',
            customer_external_reference_id: 'CUST',
            status: 'ACTIVE',
            ...(org.open.assigned !== null ? { carrier_external_reference_id: `CAR-${org.open.assigned}` } : {}),
            financial_rates: [],
            stops: stops(`O${org.open.from}`, `D${org.open.to}`, '2026-06-05T00:00:00Z', false),
          },
        });
        expect((await post('/v2/tms-api/batch/loads', { items: loads })).error_count).toBe(0);
        const got = json(await a.get('/v2/tms-api/loads/OPEN')).carrier_recommendations.map((r: any) => ({
          carrier: r.carrier_external_reference_id,
          score: r.score,
          count: r.lane_load_count,
          last: r.last_delivered_at,
          avg: r.average_carrier_rate,
        }));
        expect(got).toEqual(expected(org));
        if (got.length > 0) withRecommendations++;
        if (got.length >= 2) withSeveral++;
      }),
      { numRuns: 30 },
    );
    // The generator must exercise the ranking, not only empty lanes.
    expect(withRecommendations).toBeGreaterThan(10);
    expect(withSeveral).toBeGreaterThan(5);
  }, 180_000);
});
