import { haversineMiles, type Coordinates } from '../geo/index.js';

/** D7's settings; the distances are configurable, the weights are the decision's. */
export interface LaneRules {
  /** Origins within this many miles of each other, and destinations likewise, share a lane (D7: 100). */
  radiusMiles: number;
}

export const HALF_LIFE_DAYS = 90;
const DAY_MS = 86_400_000;

/** Proximity weight from the larger of the origin and destination distances (D7). */
export function proximityWeight(miles: number, rules: LaneRules): number {
  if (miles <= 25) return 1.0;
  if (miles <= 50) return 0.7;
  if (miles <= rules.radiusMiles) return 0.4;
  return 0;
}

/** 0.5^(age/90 days); a delivery date in the future counts as age 0. */
export function recencyWeight(deliveredAt: string, now: Date, deliveredAtMs = Date.parse(deliveredAt)): number {
  const ageDays = Math.max(0, (now.getTime() - deliveredAtMs) / DAY_MS);
  return Math.pow(0.5, ageDays / HALF_LIFE_DAYS);
}

export interface HistoryLoad {
  carrierId: string;
  origin: Coordinates;
  destination: Coordinates;
  deliveredAt: string;
  /** deliveredAt as epoch milliseconds, when the caller parsed it once for many rankings. */
  deliveredAtMs?: number;
  /** Sum of the load's CARRIER financial rates; null when it has none. */
  carrierRateTotal: number | null;
}

export interface CarrierScore {
  carrierId: string;
  laneLoadCount: number;
  lastDeliveredAt: string;
  score: number;
  averageCarrierRate: number | null;
}

export const MAX_RECOMMENDATIONS = 10;

/** Scores are compared and returned at 1e-6, so the order never hangs on floating-point noise. */
export const roundScore = (s: number) => Math.round(s * 1e6) / 1e6;

/**
 * D7 ranking over candidate history loads (already narrowed to the lane's cells and equipment):
 * exact distance filter, proximity × recency per load, summed per carrier; ties by the latest
 * delivery, then the carrier's external reference (`refOf`). The assigned carrier is left out.
 */
export function rankCarriers(
  lane: { origin: Coordinates; destination: Coordinates; assignedCarrierId: string | null },
  history: Iterable<HistoryLoad>,
  now: Date,
  rules: LaneRules,
  refOf: (carrierId: string) => string,
): CarrierScore[] {
  const byCarrier = new Map<string, { count: number; last: string; score: number; rateSum: number; rateCount: number }>();
  for (const h of history) {
    if (h.carrierId === lane.assignedCarrierId) continue;
    const farther = Math.max(haversineMiles(lane.origin, h.origin), haversineMiles(lane.destination, h.destination));
    const weight = proximityWeight(farther, rules);
    if (weight === 0) continue;
    const acc = byCarrier.get(h.carrierId) ?? { count: 0, last: h.deliveredAt, score: 0, rateSum: 0, rateCount: 0 };
    acc.count += 1;
    if (h.deliveredAt > acc.last) acc.last = h.deliveredAt;
    acc.score += weight * recencyWeight(h.deliveredAt, now, h.deliveredAtMs ?? Date.parse(h.deliveredAt));
    if (h.carrierRateTotal !== null) {
      acc.rateSum += h.carrierRateTotal;
      acc.rateCount += 1;
    }
    byCarrier.set(h.carrierId, acc);
  }
  return [...byCarrier.entries()]
    .map(([carrierId, a]) => ({
      carrierId,
      laneLoadCount: a.count,
      lastDeliveredAt: a.last,
      score: roundScore(a.score),
      averageCarrierRate: a.rateCount > 0 ? Math.round((a.rateSum / a.rateCount) * 100) / 100 : null,
    }))
    .sort(
      (x, y) =>
        y.score - x.score ||
        (x.lastDeliveredAt < y.lastDeliveredAt ? 1 : x.lastDeliveredAt > y.lastDeliveredAt ? -1 : 0) ||
        (refOf(x.carrierId) < refOf(y.carrierId) ? -1 : refOf(x.carrierId) > refOf(y.carrierId) ? 1 : 0),
    )
    .slice(0, MAX_RECOMMENDATIONS);
}
