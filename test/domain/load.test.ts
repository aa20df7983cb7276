import { describe, expect, it } from 'vitest';
import {
  cleanTeamMember,
  deliveredAt,
  distanceRule,
  estimateMiles,
  estimatedDistance,
  normalizeRates,
  planStops,
  sameRates,
  sameStops,
  teamMemberMatcher,
} from '../../src/domain/load.js';
import { laneEnds, latestOnLane, maxBuyRate } from '../../src/domain/lane.js';

// The freight rules of D4, D7 and D8 as plain functions: no database, no HTTP.

const DAL = { id: 'loc_dal', latitude: 32.7767, longitude: -96.797 };
const HOU = { id: 'loc_hou', latitude: 29.7604, longitude: -95.3698 };
const places = new Map([
  ['DAL', DAL],
  ['HOU', HOU],
]);
const stop = (type: string, ref: string, early: string, late = early, n?: number) => ({
  ...(n !== undefined ? { stop_number: n } : {}),
  stop_type: type,
  location_external_reference_id: ref,
  early_arrival: early,
  late_arrival: late,
});

describe('planStops (D4)', () => {
  it('numbers stops by position, orders them, finds the first pickup and estimates road miles', () => {
    const plan = planStops(
      [
        stop('Delivery', 'HOU', '2026-03-03T08:00:00.000Z', '2026-03-03T12:00:00.000Z', 2),
        stop('Pickup', 'DAL', '2026-03-02T08:00:00.000Z', '2026-03-02T10:00:00.000Z', 1),
      ],
      places,
      1.2,
    );
    expect(plan.issues).toEqual([]);
    expect(plan.stops.map((s) => [s.stop_number, s.stop_type, s.location_id])).toEqual([
      [1, 'Pickup', 'loc_dal'],
      [2, 'Delivery', 'loc_hou'],
    ]);
    expect(plan.pickupAt).toBe('2026-03-02T08:00:00.000Z');
    // Dallas–Houston is about 225 great-circle miles; × 1.2 circuity.
    expect(plan.estimatedMiles).toBeGreaterThan(260);
    expect(plan.estimatedMiles).toBeLessThan(280);
  });

  it('lists every problem at once: a duplicate number, an unknown place, a reversed window, no delivery', () => {
    const plan = planStops(
      [stop('Pickup', 'DAL', '2026-03-02T10:00:00.000Z', '2026-03-02T08:00:00.000Z', 1), stop('Pickup', 'NOWHERE', '2026-03-03T08:00:00.000Z', undefined, 1)],
      places,
      1.2,
    );
    expect(plan.issues.map((i) => i.loc)).toEqual([
      ['body', 'stops', 0, 'late_arrival'],
      ['body', 'stops', 1, 'stop_number'],
      ['body', 'stops', 1, 'location_external_reference_id'],
      ['body', 'stops'],
    ]);
    expect(plan.issues.every((i) => i.type === 'value_error' && i.msg.startsWith('Value error, '))).toBe(true);
    expect(plan.issues[3]!.msg).toBe('Value error, a load needs at least one Delivery (or Both) stop');
  });

  it('a Both stop counts as pickup and delivery', () => {
    expect(planStops([stop('Both', 'DAL', '2026-03-02T08:00:00.000Z'), stop('Both', 'HOU', '2026-03-03T08:00:00.000Z')], places, 1.2).issues).toEqual([]);
  });

  it('an unchanged stop list is recognised (not rewritten)', () => {
    const a = planStops([stop('Pickup', 'DAL', '2026-03-02T08:00:00.000Z'), stop('Delivery', 'HOU', '2026-03-03T08:00:00.000Z')], places, 1.2).stops;
    const b = planStops([stop('Pickup', 'DAL', '2026-03-02T08:00:00.000Z'), stop('Delivery', 'HOU', '2026-03-03T09:00:00.000Z')], places, 1.2).stops;
    expect(
      sameStops(
        a,
        a.map((s) => ({ ...s })),
      ),
    ).toBe(true);
    expect(sameStops(a, b)).toBe(false);
  });
});

describe('distance (D4)', () => {
  it('estimates along the stops in order, null with fewer than two', () => {
    expect(estimateMiles([DAL], 1.2)).toBeNull();
    expect(estimateMiles([DAL, HOU, DAL], 1)).toBeCloseTo(2 * estimateMiles([DAL, HOU], 1)!, 0);
  });

  it("keeps the caller's figure, re-estimates an estimate when stops change, and null hands back to the estimate", () => {
    expect(distanceRule(300, undefined, true)).toBe('caller');
    expect(distanceRule(undefined, undefined, true)).toBe('estimate');
    expect(distanceRule(undefined, 'caller', true)).toBe('unchanged');
    expect(distanceRule(undefined, 'estimated', true)).toBe('estimate');
    expect(distanceRule(undefined, 'estimated', false)).toBe('unchanged');
    expect(distanceRule(null, 'caller', false)).toBe('estimate');
    expect(estimatedDistance(null)).toEqual({ total_distance: null, total_distance_source: null });
    expect(estimatedDistance(12.5)).toEqual({ total_distance: 12.5, total_distance_source: 'estimated' });
  });
});

describe('status (D4, D7)', () => {
  it('keeps the first delivery time through later delivered statuses and clears it otherwise', () => {
    expect(deliveredAt(null, 'ACTIVE', 'T1')).toBeNull();
    expect(deliveredAt(null, 'DELIVERED', 'T1')).toBe('T1');
    expect(deliveredAt({ status: 'DELIVERED', delivered_at: 'T1' }, 'COMPLETED', 'T2')).toBe('T1');
    expect(deliveredAt({ status: 'CANCELLED', delivered_at: null }, 'DELIVERED', 'T3')).toBe('T3');
  });
});

describe('team members (D4)', () => {
  it('trims, turns blanks into null, and needs one field', () => {
    expect(cleanTeamMember({ name: '  Ann  ', email: ' ' }, 'sales_rep')).toEqual({ rep: { name: 'Ann', email: null, external_reference_id: null } });
    expect(cleanTeamMember(null, 'sales_rep')).toEqual({ rep: null });
    expect(cleanTeamMember({ name: '' }, 'dispatcher_rep').issue).toEqual({
      type: 'value_error',
      loc: ['body', 'dispatcher_rep'],
      msg: 'Value error, dispatcher_rep needs at least one of name, email, external_reference_id (or null to clear it)',
    });
  });

  it('matches by email first (any case), else by a name only one user has', () => {
    const match = teamMemberMatcher([
      { id: 'u1', email_lower: 'ann@x.example', name: 'Ann Lee' },
      { id: 'u2', email_lower: 'bob@x.example', name: 'Sam Roe' },
      { id: 'u3', email_lower: 'sam@x.example', name: ' sam roe ' },
    ]);
    expect(match({ name: 'Whoever', email: 'ANN@x.example', external_reference_id: null })).toBe('u1');
    expect(match({ name: 'ann lee', email: null, external_reference_id: null })).toBe('u1');
    expect(match({ name: 'Sam Roe', email: null, external_reference_id: null })).toBeNull();
    expect(match({ name: null, email: null, external_reference_id: 'E-1' })).toBeNull();
  });
});

describe('financial rates (D4)', () => {
  it('defaults USD and LINEHAUL, keeps order, and compares by value', () => {
    const rates = normalizeRates([
      { rate_entity: 'CARRIER', amount: 900, currency: 'cad' },
      { rate_entity: 'CUSTOMER', amount: 1200, rate_type: 'FUEL_SURCHARGE' },
    ]);
    expect(rates).toEqual([
      { position: 0, rate_entity: 'CARRIER', amount: 900, currency: 'CAD', rate_type: 'LINEHAUL', description: null },
      { position: 1, rate_entity: 'CUSTOMER', amount: 1200, currency: 'USD', rate_type: 'FUEL_SURCHARGE', description: null },
    ]);
    expect(
      sameRates(
        rates,
        rates.map((r) => ({ ...r })),
      ),
    ).toBe(true);
    expect(sameRates(rates, [rates[1]!, rates[0]!])).toBe(false);
  });
});

describe('lanes (D7, D8)', () => {
  it('origin is the first pickup by stop_number, destination the last delivery', () => {
    const stops = [
      { stop_number: 3, stop_type: 'Delivery', id: 'c' },
      { stop_number: 1, stop_type: 'Pickup', id: 'a' },
      { stop_number: 2, stop_type: 'Both', id: 'b' },
      { stop_number: 4, stop_type: 'Pickup', id: 'd' },
    ];
    const ends = laneEnds(stops);
    expect(ends.origin?.id).toBe('a');
    expect(ends.destination?.id).toBe('c');
    expect(laneEnds([{ stop_number: 1, stop_type: 'Pickup' }]).destination).toBeUndefined();
  });

  it('max_buy_rate from the newest snapshot within the radius at both ends, high rate first', () => {
    const lane = { origin: DAL, destination: HOU };
    const snap = (o: { latitude: number; longitude: number }, high: number | null) => ({
      origin_latitude: o.latitude,
      origin_longitude: o.longitude,
      destination_latitude: HOU.latitude,
      destination_longitude: HOU.longitude,
      rate_per_mile: 2,
      rate_per_mile_high: high,
    });
    const far = snap({ latitude: 40.7, longitude: -74 }, 9);
    const near = snap({ latitude: 32.9, longitude: -96.9 }, null);
    expect(latestOnLane([far, near], lane, 100)).toBe(near);
    expect(latestOnLane([far], lane, 100)).toBeUndefined();
    expect(maxBuyRate(near, 250.55)).toBe(501.1);
    expect(maxBuyRate(snap(DAL, 2.345), 100)).toBe(234.5);
    // Half a cent goes up, also where the binary product falls just short of it (115.57499999999999).
    expect(maxBuyRate(snap(DAL, 1.15), 100.5)).toBe(115.58);
    expect(maxBuyRate(snap(DAL, 2.55), 965.6)).toBe(2462.28);
  });
});
