import { describe, expect, it } from 'vitest';
import { byBalancedScore, DEFAULT_GRACE_MINUTES, graceMinutesFor, weightedRows } from '../../src/domain/evidence.js';
import { cellCentre, cellOf } from '../../src/domain/grid.js';
import { rankLanes } from '../../src/domain/scoring.js';

const NOW = new Date('2026-06-01T00:00:00.000Z');
const O = { latitude: 40, longitude: -90 };
const D = { latitude: 45, longitude: -90 };
const row = (carrierId: string, deliveredAt: string, carrierRateTotal: number | null = null) => ({
  carrierId,
  origin: O,
  destination: D,
  deliveredAt,
  carrierRateTotal,
  totalDistance: 300,
  stopOutcomes: 'p,d',
});

describe('lane rules', () => {
  it("the grace: the organization's own (0 included), else the server's, else 15", () => {
    expect(graceMinutesFor(0, 20)).toBe(0);
    expect(graceMinutesFor(30, 20)).toBe(30);
    expect(graceMinutesFor(null, 20)).toBe(20);
    expect(graceMinutesFor(undefined, undefined)).toBe(DEFAULT_GRACE_MINUTES);
    expect(DEFAULT_GRACE_MINUTES).toBe(15);
  });

  it('ranks each lane once per (places, assigned carrier): score = Σ proximity × 0.5^(age/90 d)', () => {
    // A: today (1) + 90 days ago (0.5) = 1.5; B: today (1) + a day ago (0.5^(1/90) = 0.992328) = 1.992328,
    // average rate (100 + 300) ÷ 2 = 200.
    const history = [
      row('A', '2026-06-01T00:00:00.000Z'),
      row('A', '2026-03-03T00:00:00.000Z'),
      row('B', '2026-05-31T00:00:00.000Z', 100),
      row('B', '2026-06-01T00:00:00.000Z', 300),
    ];
    const lanes = [
      { origin: O, destination: D, assignedCarrierId: null },
      { origin: O, destination: D, assignedCarrierId: null },
      { origin: O, destination: D, assignedCarrierId: 'A' },
    ];
    const ranked = rankLanes(lanes, history, NOW, { radiusMiles: 100 }, (id) => id, 10);
    expect(ranked[0]).toBe(ranked[1]);
    expect(ranked[0]!.ranked.map((r) => [r.carrierId, r.score, r.averageCarrierRate])).toEqual([
      ['B', 1.992328, 200],
      ['A', 1.5, null],
    ]);
    expect(ranked[2]!.ranked.map((r) => r.carrierId)).toEqual(['B']);
    expect([...ranked[0]!.weights.proximity]).toEqual([1, 1, 1, 1]);
  });

  it('weighted rows: proximity × recency per row of the wanted carriers, weight 0 and the assigned carrier left out', () => {
    const history = [
      row('A', '2026-05-01T00:00:00.000Z'),
      row('A', '2026-04-01T00:00:00.000Z'),
      row('A', '2026-03-01T00:00:00.000Z'),
      row('B', '2026-05-01T00:00:00.000Z'),
      row('C', '2026-05-01T00:00:00.000Z'),
    ];
    const weights = { proximity: Float64Array.from([1, 0, 0.4, 1, 1]), recency: Float64Array.from([0.5, 1, 0.25, 1, 1]) };
    const out = weightedRows(history, new Set(['A', 'B']), 'B', weights);
    expect([...out.keys()]).toEqual(['A']);
    expect(out.get('A')!.map((r) => [r.w, r.deliveredAt])).toEqual([
      [0.5, '2026-05-01T00:00:00.000Z'],
      [0.1, '2026-03-01T00:00:00.000Z'],
    ]);
  });

  it('balanced order: score, then the latest delivery, then the reference', () => {
    const e = (ref: string, balanced_score: number, last: string) => ({ carrier_external_reference_id: ref, balanced_score, last_delivered_at: last });
    const sorted = [e('C', 1, '2026-01-01'), e('B', 2, '2026-01-01'), e('A', 1, '2026-01-01'), e('D', 1, '2026-02-01')].sort(byBalancedScore);
    expect(sorted.map((x) => x.carrier_external_reference_id)).toEqual(['B', 'D', 'A', 'C']);
  });

  it("a cell's centre is half a degree into it", () => {
    const cell = cellOf(40.2, -89.7);
    expect(cell).toBe(130 * 360 + 90);
    expect(cellCentre(cell)).toEqual({ latitude: 40.5, longitude: -89.5 });
  });
});
