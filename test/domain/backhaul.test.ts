import { describe, expect, it } from 'vitest';
import { backhaulFor, backhaulWindow, underwayByCarrier, type UnderwayLoad } from '../../src/domain/backhaul.js';

// Distances along one meridian: a degree of latitude is 3,958.76 × π / 180 = 69.09 miles.
const PICKUP = { loadId: 'L0', origin: { latitude: 40, longitude: -90 }, pickupAt: '2026-06-10T12:00:00.000Z' };
const load = (id: string, ref: string, latitude: number, deadline: string): UnderwayLoad => ({
  id,
  ref,
  destination: { latitude, longitude: -90 },
  deadlineMs: Date.parse(deadline),
});

describe('backhaul', () => {
  it('is the load due latest within 100 miles, 0–48 h before the pickup; miles and hours to a tenth', () => {
    const found = backhaulFor(PICKUP, [
      load('a', 'A', 41, '2026-06-10T00:00:00.000Z'), // 69.1 mi, 12 h before: a backhaul
      load('b', 'B', 40.5, '2026-06-08T11:00:00.000Z'), // 34.5 mi but 49 h before: too early
      load('c', 'C', 41.5, '2026-06-10T06:00:00.000Z'), // 103.6 mi: too far
      load('d', 'D', 40.1, '2026-06-10T13:00:00.000Z'), // due after the pickup
      load('L0', 'SELF', 40, '2026-06-10T11:00:00.000Z'), // the load itself
      load('e', 'E', 40.2, '2026-06-09T00:00:00.000Z'), // 13.8 mi, 36 h before: older than A's
    ]);
    expect(found).toEqual({ load_external_reference_id: 'A', miles_to_origin: 69.1, hours_before_pickup: 12 });
  });

  it('takes the lower reference when two are due at once, and the 48 h edge counts', () => {
    const edge = '2026-06-08T12:00:00.000Z';
    expect(backhaulFor(PICKUP, [load('y', 'Y', 40, edge), load('x', 'X', 40, edge)])).toEqual({
      load_external_reference_id: 'X',
      miles_to_origin: 0,
      hours_before_pickup: 48,
    });
  });

  it('is none without a pickup time or a load in the window', () => {
    expect(backhaulFor({ ...PICKUP, pickupAt: null }, [load('a', 'A', 41, '2026-06-10T00:00:00.000Z')])).toBeNull();
    expect(backhaulFor(PICKUP, [])).toBeNull();
  });

  it('window: from 48 h before the earliest pickup to the latest', () => {
    expect(backhaulWindow(['2026-06-12T00:00:00.000Z', '2026-06-10T12:00:00.000Z'])).toEqual({
      from: '2026-06-08T12:00:00.000Z',
      to: '2026-06-12T00:00:00.000Z',
    });
  });

  it('a load on its way is its last delivery stop (late_arrival, else early_arrival), by carrier', () => {
    const stop = (load_id: string, stop_number: number, stop_type: string, latitude: number, late_arrival: string | null) => ({
      load_id,
      external_reference_id: `R-${load_id}`,
      carrier_id: 'c1',
      stop_number,
      stop_type,
      early_arrival: '2026-06-01T00:00:00.000Z',
      late_arrival,
      latitude,
      longitude: -90,
    });
    const byCarrier = underwayByCarrier([
      stop('x', 3, 'Delivery', 42, null),
      stop('x', 1, 'Pickup', 40, '2026-05-30T00:00:00.000Z'),
      stop('x', 2, 'Delivery', 41, '2026-06-02T00:00:00.000Z'),
      stop('y', 1, 'Pickup', 40, '2026-06-01T00:00:00.000Z'),
    ]);
    expect(byCarrier.get('c1')).toEqual([
      { id: 'x', ref: 'R-x', destination: { latitude: 42, longitude: -90 }, deadlineMs: Date.parse('2026-06-01T00:00:00.000Z') },
    ]);
  });
});
