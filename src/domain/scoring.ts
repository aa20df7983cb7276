import { haversineMiles, type Coordinates } from '../geo/distance.js';

/** The lane's settings (docs/api.md, "Lane history and carrier recommendations"); the distances are configurable, the weights are fixed. */
export interface LaneRules {
  /** Origins within this many miles of each other, and destinations likewise, share a lane (default 100). */
  radiusMiles: number;
  /** `widen=true` (docs/api.md, "Stop actuals, tracking events and recommendation evidence"): the lane widened to 150 or 250 miles (weights 0.25 and 0.1 beyond radiusMiles). */
  widenedToMiles?: number;
  /** The default on-time grace in minutes (ON_TIME_GRACE_MINUTES; an organization may set its own). */
  graceMinutes?: number;
}

/** The radii `widen=true` tries after the lane's own, with the proximity weight of each ring. */
export const WIDENED_RINGS = [
  { miles: 150, weight: 0.25 },
  { miles: 250, weight: 0.1 },
] as const;

export const HALF_LIFE_DAYS = 90;
const DAY_MS = 86_400_000;

/** Proximity weight from the larger of the origin and destination distances. */
export function proximityWeight(miles: number, rules: LaneRules): number {
  if (miles <= 25) return 1.0;
  if (miles <= 50) return 0.7;
  if (miles <= rules.radiusMiles) return 0.4;
  if (rules.widenedToMiles !== undefined) for (const ring of WIDENED_RINGS) if (ring.miles <= rules.widenedToMiles && miles <= ring.miles) return ring.weight;
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
  /** Sum of the load's CARRIER financial rates in carrierRateCurrency; null when it has none. */
  carrierRateTotal: number | null;
  /** The currency of carrierRateTotal (the one most of the load's CARRIER rates use); USD when unknown. */
  carrierRateCurrency?: string | null;
}

export interface CarrierScore {
  carrierId: string;
  laneLoadCount: number;
  lastDeliveredAt: string;
  score: number;
  averageCarrierRate: number | null;
  /** The currency of averageCarrierRate; null when no history load has a carrier rate. */
  averageCarrierRateCurrency: string | null;
}

export const MAX_RECOMMENDATIONS = 10;

/** Scores are compared and returned at 1e-6, so the order never hangs on floating-point noise. */
export const roundScore = (s: number) => Math.round(s * 1e6) / 1e6;

/**
 * The currency of a carrier's average rate (docs/api.md, "Lane history and carrier recommendations"):
 * the one most of its history loads' rates use (ties: USD, then the first by code); null when none has a
 * rate.
 */
export function mostUsedCurrency(rates: ReadonlyMap<string, { count: number }>): string | null {
  let best: string | null = null;
  let bestCount = 0;
  for (const [currency, { count }] of rates) {
    const better = count > bestCount || (count === bestCount && best !== null && best !== 'USD' && (currency === 'USD' || currency < best));
    if (better) {
      best = currency;
      bestCount = count;
    }
  }
  return best;
}

/**
 * The weights of history rows for one lane: each row's proximity weight (0 outside the radius) and
 * recency weight, in the rows' order. The recency of a row is the same for every lane ranked at one
 * moment (`recency`, when the caller worked it out once for several lanes); `proximity`, when the rows
 * came with their weights to this lane (kept rows: src/modules/lanes/lane-rows.ts).
 */
export function laneWeights(
  lane: { origin: Coordinates; destination: Coordinates },
  history: readonly HistoryLoad[],
  now: Date,
  rules: LaneRules,
  recency?: Float64Array,
  proximity?: Float64Array,
): { proximity: Float64Array; recency: Float64Array } {
  return { proximity: proximity ?? proximityWeights(lane, history, rules), recency: recency ?? recencyWeights(history, now) };
}

/** Each row's proximity weight to the lane (0 beyond the radius), in the rows' order. */
export function proximityWeights(lane: { origin: Coordinates; destination: Coordinates }, history: readonly HistoryLoad[], rules: LaneRules): Float64Array {
  const proximity = new Float64Array(history.length);
  for (let i = 0; i < history.length; i++) {
    const h = history[i]!;
    proximity[i] = proximityWeight(Math.max(haversineMiles(lane.origin, h.origin), haversineMiles(lane.destination, h.destination)), rules);
  }
  return proximity;
}

/** Each row's recency weight at `now`, in the rows' order. */
export function recencyWeights(history: readonly HistoryLoad[], now: Date): Float64Array {
  const out = new Float64Array(history.length);
  for (let i = 0; i < history.length; i++) {
    const h = history[i]!;
    out[i] = recencyWeight(h.deliveredAt, now, h.deliveredAtMs ?? Date.parse(h.deliveredAt));
  }
  return out;
}

/**
 * The ranking (docs/api.md, "Lane history and carrier recommendations") over candidate history loads
 * (already narrowed to the lane's cells and equipment): exact distance filter, proximity × recency per
 * load, summed per carrier; ties by the latest delivery, then the carrier's external reference
 * (`refOf`). The assigned carrier is left out. `weights`: the rows' weights for this lane (laneWeights),
 * when the caller needs them again.
 */
export function rankCarriers(
  lane: { origin: Coordinates; destination: Coordinates; assignedCarrierId: string | null },
  history: readonly HistoryLoad[],
  now: Date,
  rules: LaneRules,
  refOf: (carrierId: string) => string,
  limit: number = MAX_RECOMMENDATIONS,
  weights: { proximity: Float64Array; recency: Float64Array } = laneWeights(lane, history, now, rules),
): CarrierScore[] {
  const byCarrier = new Map<string, { count: number; last: string; score: number; rates: Map<string, { sum: number; count: number }> }>();
  const { proximity, recency } = weights;
  for (let i = 0; i < history.length; i++) {
    const h = history[i]!;
    if (h.carrierId === lane.assignedCarrierId) continue;
    const weight = proximity[i]!;
    if (weight === 0) continue;
    let acc = byCarrier.get(h.carrierId);
    if (!acc) byCarrier.set(h.carrierId, (acc = { count: 0, last: h.deliveredAt, score: 0, rates: new Map() }));
    acc.count += 1;
    if (h.deliveredAt > acc.last) acc.last = h.deliveredAt;
    acc.score += weight * recency[i]!;
    if (h.carrierRateTotal !== null) {
      const currency = h.carrierRateCurrency ?? 'USD';
      const r = acc.rates.get(currency);
      if (r) {
        r.sum += h.carrierRateTotal;
        r.count += 1;
      } else acc.rates.set(currency, { sum: h.carrierRateTotal, count: 1 });
    }
  }
  return [...byCarrier.entries()]
    .map(([carrierId, a]) => {
      const currency = mostUsedCurrency(a.rates);
      const r = currency === null ? undefined : a.rates.get(currency);
      return {
        carrierId,
        laneLoadCount: a.count,
        lastDeliveredAt: a.last,
        score: roundScore(a.score),
        averageCarrierRate: r ? Math.round((r.sum / r.count) * 100) / 100 : null,
        averageCarrierRateCurrency: currency,
      };
    })
    .sort(
      (x, y) =>
        y.score - x.score ||
        (x.lastDeliveredAt < y.lastDeliveredAt ? 1 : x.lastDeliveredAt > y.lastDeliveredAt ? -1 : 0) ||
        (refOf(x.carrierId) < refOf(y.carrierId) ? -1 : refOf(x.carrierId) > refOf(y.carrierId) ? 1 : 0),
    )
    .slice(0, limit);
}

/** A lane to rank: its two places and the load's assigned carrier (left out of its ranking). */
export interface RankedLane {
  origin: Coordinates;
  destination: Coordinates;
  assignedCarrierId: string | null;
}

/**
 * The ranking of each of `lanes` over one set of history rows (rankCarriers), with the rows' weights to
 * each. Lanes with the same two places and assigned carrier rank alike (a busy lane's open loads mostly
 * share their facilities): ranked once each. Each row's recency is worked out once for all lanes, its
 * proximity once per lane (or given: `proximity`, the rows' weights to a single lane).
 */
export function rankLanes(
  lanes: readonly RankedLane[],
  history: readonly HistoryLoad[],
  now: Date,
  rules: LaneRules,
  refOf: (carrierId: string) => string,
  limit: number,
  proximity?: Float64Array,
): { ranked: CarrierScore[]; weights: { proximity: Float64Array; recency: Float64Array } }[] {
  const recency = recencyWeights(history, now);
  const byLane = new Map<string, { ranked: CarrierScore[]; weights: { proximity: Float64Array; recency: Float64Array } }>();
  return lanes.map((l) => {
    const key = `${l.origin.latitude},${l.origin.longitude}|${l.destination.latitude},${l.destination.longitude}|${l.assignedCarrierId ?? ''}`;
    let lane = byLane.get(key);
    if (!lane) {
      const weights = laneWeights(l, history, now, rules, recency, proximity);
      byLane.set(key, (lane = { ranked: rankCarriers(l, history, now, rules, refOf, limit, weights), weights }));
    }
    return lane;
  });
}
