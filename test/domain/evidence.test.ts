import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { balancedScore, carrierEvidence, confidenceOf, parseOutcomes, stopOutcomes, weightedMedian, type WeightedRow } from '../../src/domain/evidence.js';

// D14's arithmetic as plain functions: no database, no HTTP.

const row = (x: Partial<WeightedRow> = {}): WeightedRow => ({
  w: 1,
  deliveredAt: '2026-05-01T00:00:00.000Z',
  deliveredAtMs: Date.parse('2026-05-01T00:00:00.000Z'),
  carrierRateTotal: null,
  carrierRateCurrency: null,
  totalDistance: null,
  stopOutcomes: 'p,d',
  ...x,
});
const NOW = new Date('2026-06-01T00:00:00.000Z');
const opts = { graceMinutes: 15, now: NOW, backhaul: null, marketAt: () => 2, laneLoadCount: 1, lastDeliveredAt: '2026-05-01T00:00:00.000Z' };

describe('stop outcomes', () => {
  it("keep each stop's lateness against the deadline recorded with the arrival, in stop order", () => {
    const text = stopOutcomes([
      { stop_number: 2, stop_type: 'Delivery', late_arrival: '2026-03-02T10:00:00.000Z', actual_arrival: '2026-03-02T10:10:00.000Z' },
      { stop_number: 1, stop_type: 'Pickup', late_arrival: '2026-03-01T10:00:00.000Z', actual_arrival: '2026-03-01T07:30:00.000Z' },
      {
        stop_number: 3,
        stop_type: 'Both',
        late_arrival: '2026-03-03T11:00:00.000Z',
        actual_arrival: '2026-03-03T10:16:00.000Z',
        arrival_deadline: '2026-03-03T10:00:00.000Z',
      },
      { stop_number: 4, stop_type: 'Delivery', late_arrival: '2026-03-04T10:00:00.000Z', actual_arrival: null },
    ]);
    expect(text).toBe('p-9000,d600,d960,d');
    expect(parseOutcomes(text)).toEqual({ pickups: [-9000], deliveries: [600, 960, null] });
  });
});

describe('evidence', () => {
  it('effective loads (Σw)²/Σw², on time with grace, coverage', () => {
    const e = carrierEvidence([row({ w: 1, stopOutcomes: 'p0,d600' }), row({ w: 0.5, stopOutcomes: 'p,d960' }), row({ w: 0.25, stopOutcomes: 'p,d' })], opts);
    // (1.75)² / (1 + 0.25 + 0.0625) = 3.0625 / 1.3125 = 2.333
    expect(e.evidence.effective_loads).toBe(2.33);
    // deliveries: on time 1 (600 ≤ 900), late 0.5 (960 > 900): 1 / 1.5; coverage 1.5 / 1.75
    expect(e.evidence.on_time.delivery).toEqual({ rate: 0.667, scored: 2, coverage: 0.857 });
    expect(e.evidence.on_time.pickup).toEqual({ rate: 1, scored: 1, coverage: 0.571 });
    // p = (1 + 2.55) / (1.5 + 3) = 0.78889; score 1 × (0.5 + 0.394444) = 0.8944
    expect(balancedScore(1, e)).toBe(0.8944);
  });

  it('weighted median: the smallest value where the cumulative weight reaches half', () => {
    expect(weightedMedian([{ value: 0.95, w: 1 }])).toBe(0.95);
    expect(
      weightedMedian([
        { value: 1.2, w: 1 },
        { value: 0.8, w: 3 },
      ]),
    ).toBe(0.8);
    expect(
      weightedMedian([
        { value: 1.2, w: 3 },
        { value: 0.8, w: 1 },
      ]),
    ).toBe(1.2);
    expect(weightedMedian([])).toBeNull();
  });

  it('confidence stays within 50–100 and never falls with more effective loads or more coverage, nor rises with more spread', () => {
    const rates = fc.array(fc.double({ min: 0.5, max: 10, noNaN: true }), { maxLength: 6 });
    const cov = fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null });
    fc.assert(
      fc.property(fc.double({ min: 0, max: 200, noNaN: true }), fc.double({ min: 0, max: 50, noNaN: true }), rates, cov, cov, (eff, more, r, p, d) => {
        const c = confidenceOf(eff, r, p, d);
        expect(c).toBeGreaterThanOrEqual(50);
        expect(c).toBeLessThanOrEqual(100);
        expect(Number.isInteger(c)).toBe(true);
        expect(confidenceOf(eff + more, r, p, d)).toBeGreaterThanOrEqual(c);
        expect(confidenceOf(eff, r, p === null ? null : Math.min(1, p + 0.1), d === null ? null : Math.min(1, d + 0.1))).toBeGreaterThanOrEqual(c);
      }),
    );
    // Identical rates (cv 0) beat spread ones (cv > 0).
    expect(confidenceOf(8, [2, 2, 2], 1, 1)).toBeGreaterThan(confidenceOf(8, [1, 2, 3], 1, 1));
    expect(confidenceOf(0, [], null, null)).toBe(50);
  });

  it("reasons: at most three, in D14's order", () => {
    const e = carrierEvidence(
      [
        row({ stopOutcomes: 'p,d0', carrierRateTotal: 1800, totalDistance: 1000 }),
        row({ stopOutcomes: 'p,d0', carrierRateTotal: 1800, totalDistance: 1000 }),
        row({ stopOutcomes: 'p,d9999', carrierRateTotal: 1800, totalDistance: 1000 }),
      ],
      { ...opts, laneLoadCount: 3, backhaul: { load_external_reference_id: 'L-9', miles_to_origin: 12.4, hours_before_pickup: 9.6 } },
    );
    expect(e.reasons).toEqual([
      'Delivers 12 mi from this pickup 10 h before it (L-9)',
      'Ran this lane 3 times in the last 90 days',
      'On time at 2 of 3 deliveries',
    ]);
    expect(e.evidence.price).toEqual({ rate_vs_market: 0.9, priced_loads: 3 });
  });
});
