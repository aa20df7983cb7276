import type { Coordinates } from '../geo/distance.js';
import { withinRadius } from './lane.js';
import { priceRatio } from './evidence.js';

/**
 * Pricing against the market (docs/api.md, "Stop actuals, tracking events and recommendation evidence";
 * the carrier page): a lane's market snapshots, the rate as of a delivery, and a delivery's price ratio.
 * A market max_buy_rate is in lane.ts (latestOnLane, maxBuyRate).
 */

/** A market snapshot as read for a lane's area (newest first). */
export interface AreaSnapshot {
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  rate_per_mile: number | string;
  currency: string;
  as_of: string;
}

/** A market snapshot on a lane as the evidence prices with it. */
export interface LaneMarketRate {
  as_of: string;
  currency: string;
  rate: number;
}

/** Of `market` (an area's snapshots, newest first), those with both ends within the radius of the lane's ends, newest first. */
export function marketOnLane(market: readonly AreaSnapshot[], origin: Coordinates, destination: Coordinates, radiusMiles: number): LaneMarketRate[] {
  return market
    .filter(
      (m) =>
        withinRadius(origin, { latitude: m.origin_latitude, longitude: m.origin_longitude }, radiusMiles) &&
        withinRadius(destination, { latitude: m.destination_latitude, longitude: m.destination_longitude }, radiusMiles),
    )
    .map((m) => ({ as_of: m.as_of, currency: m.currency, rate: Number(m.rate_per_mile) }));
}

/**
 * A lane's market rate per mile as of a delivery date, in a currency (none: USD): of the lane's
 * snapshots (marketOnLane, newest first), the newest as of that date; null when there is none.
 */
export function marketRateOn(onLane: readonly LaneMarketRate[]) {
  return (deliveredAt: string, currency: string | null): number | null => {
    const snap = onLane.find((m) => m.as_of <= deliveredAt && m.currency === (currency ?? 'USD'));
    return snap ? snap.rate : null;
  };
}

/** A delivery as the carrier page prices it against the market. */
export interface PricedDelivery {
  delivered_at: string;
  carrier_rate_total: number | null;
  carrier_rate_currency: string | null;
  total_distance: number | null;
}

/** Whether a delivery can be priced at all: a carrier total and a distance above 0. */
export const isPriceable = (r: PricedDelivery) => r.carrier_rate_total !== null && r.total_distance !== null && r.total_distance > 0;

/**
 * The price against the market of a lane's deliveries: for each with a carrier total, a distance and a
 * snapshot on the lane as of its delivery date in its currency, total ÷ (market $/mi × miles), in order.
 */
export function ratiosAgainstMarket(rows: readonly PricedDelivery[], onLane: readonly LaneMarketRate[]): number[] {
  const rateOn = marketRateOn(onLane);
  return rows.filter(isPriceable).flatMap((r) => {
    const ratio = priceRatio(r.carrier_rate_total, r.total_distance, rateOn(r.delivered_at, r.carrier_rate_currency));
    return ratio === null ? [] : [ratio];
  });
}
