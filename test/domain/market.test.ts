import { describe, expect, it } from 'vitest';
import { isPriceable, marketOnLane, marketRateOn, ratiosAgainstMarket, type AreaSnapshot } from '../../src/domain/market.js';

const O = { latitude: 40, longitude: -90 };
const D = { latitude: 45, longitude: -90 };
const snap = (x: Partial<AreaSnapshot>): AreaSnapshot => ({
  origin_latitude: 40,
  origin_longitude: -90,
  destination_latitude: 45,
  destination_longitude: -90,
  rate_per_mile: 2,
  currency: 'USD',
  as_of: '2026-01-01',
  ...x,
});
const onLane = [
  { as_of: '2026-05-01', currency: 'USD', rate: 3 },
  { as_of: '2026-04-01', currency: 'CAD', rate: 4 },
  { as_of: '2026-03-01', currency: 'USD', rate: 2 },
];

describe('market pricing', () => {
  it("a lane's snapshots: both ends within the radius (69.1 mi in, 103.6 mi out), rates as numbers, order kept", () => {
    const area = [snap({ as_of: '2026-05-01', rate_per_mile: '2.50' }), snap({ origin_latitude: 41.5 }), snap({ destination_latitude: 44 })];
    expect(marketOnLane(area, O, D, 100)).toEqual([
      { as_of: '2026-05-01', currency: 'USD', rate: 2.5 },
      { as_of: '2026-01-01', currency: 'USD', rate: 2 },
    ]);
  });

  it("the rate as of a delivery is the newest snapshot on or before it in the row's currency (none: USD)", () => {
    const rateOn = marketRateOn(onLane);
    expect(rateOn('2026-04-15T10:00:00.000Z', null)).toBe(2);
    expect(rateOn('2026-05-01T00:00:00.000Z', 'USD')).toBe(3);
    expect(rateOn('2026-04-15T10:00:00.000Z', 'CAD')).toBe(4);
    expect(rateOn('2026-02-01T00:00:00.000Z', 'USD')).toBeNull();
  });

  it("a delivery's ratio is total ÷ (market $/mi × miles); rows that cannot be priced are left out", () => {
    const row = { delivered_at: '2026-04-15T10:00:00.000Z', carrier_rate_total: 1000, carrier_rate_currency: 'USD', total_distance: 200 };
    expect(
      ratiosAgainstMarket(
        [
          row, // 1000 ÷ (2 × 200) = 2.5
          { ...row, delivered_at: '2026-06-01T00:00:00.000Z', carrier_rate_total: 600 }, // 600 ÷ (3 × 200) = 1
          { ...row, total_distance: null },
          { ...row, carrier_rate_currency: 'EUR' }, // no EUR snapshot
        ],
        onLane,
      ),
    ).toEqual([2.5, 1]);
    expect(isPriceable({ ...row, total_distance: 0 })).toBe(false);
    expect(isPriceable({ ...row, carrier_rate_total: null })).toBe(false);
  });
});
