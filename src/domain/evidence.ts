/**
 * The evidence behind a carrier recommendation
 * (docs/api.md, "Stop actuals, tracking events and recommendation evidence"), pure arithmetic over the
 * lane's history rows (each already weighted by the ranking's proximity × recency), so both engines and
 * both rankings agree.
 */

/** What an on-time outcome needs of a stop. */
export interface OutcomeStop {
  stop_number: number;
  stop_type: string;
  late_arrival: string;
  actual_arrival?: string | null;
  /** The deadline as it stood when actual_arrival was recorded (a later window move changes nothing). */
  arrival_deadline?: string | null;
}

/**
 * A history row's stops as one short text: `p` (Pickup) or `d` (Delivery, Both) per stop in stop order,
 * followed by the arrival's lateness in whole seconds when the stop is scored ("p-1800,d600,d").
 */
export function stopOutcomes(stops: readonly OutcomeStop[]): string {
  return [...stops]
    .sort((a, b) => a.stop_number - b.stop_number)
    .map((s) => {
      const kind = s.stop_type === 'Pickup' ? 'p' : 'd';
      const deadline = s.arrival_deadline ?? s.late_arrival;
      if (!s.actual_arrival || !deadline) return kind;
      return `${kind}${Math.round((Date.parse(s.actual_arrival) - Date.parse(deadline)) / 1000)}`;
    })
    .join(',');
}

/** The outcomes back: per kind, each stop's lateness in seconds, or null when unscored. */
export function parseOutcomes(text: string): { pickups: (number | null)[]; deliveries: (number | null)[] } {
  const pickups: (number | null)[] = [];
  const deliveries: (number | null)[] = [];
  if (text === '') return { pickups, deliveries };
  for (const token of text.split(',')) {
    const value = token.length > 1 ? Number(token.slice(1)) : null;
    (token[0] === 'p' ? pickups : deliveries).push(value);
  }
  return { pickups, deliveries };
}

/** The on-time grace in minutes when neither the organization nor the server sets one (ON_TIME_GRACE_MINUTES' default). */
export const DEFAULT_GRACE_MINUTES = 15;

/** The on-time grace that counts: the organization's own, else the server's (ON_TIME_GRACE_MINUTES), else the default. */
export const graceMinutesFor = (own: number | null | undefined, serverDefault?: number): number => own ?? serverDefault ?? DEFAULT_GRACE_MINUTES;

/** A history row of one carrier on the lane with its weight w (proximity × recency). */
export interface WeightedRow {
  w: number;
  deliveredAt: string;
  deliveredAtMs: number;
  carrierRateTotal: number | null;
  carrierRateCurrency: string | null;
  totalDistance: number | null;
  stopOutcomes: string;
}

/** A history row as the evidence reads it (src/domain/scoring.ts HistoryLoad, with its distance and stop outcomes). */
export interface EvidenceRow {
  carrierId: string;
  deliveredAt: string;
  deliveredAtMs?: number;
  carrierRateTotal: number | null;
  carrierRateCurrency?: string | null;
  totalDistance: number | null;
  stopOutcomes: string;
}

/**
 * Each of `carriers`' history rows on the lane with its weight (proximity × recency, as the ranking
 * weighed them, in the rows' order), by carrier; rows of weight 0 and of the load's own carrier left out.
 */
export function weightedRows(
  history: readonly EvidenceRow[],
  carriers: ReadonlySet<string>,
  assignedCarrierId: string | null,
  weights: { proximity: Float64Array; recency: Float64Array },
): Map<string, WeightedRow[]> {
  const out = new Map<string, WeightedRow[]>();
  const { proximity, recency } = weights;
  for (let i = 0; i < history.length; i++) {
    const h = history[i]!;
    if (!carriers.has(h.carrierId) || h.carrierId === assignedCarrierId) continue;
    const w = proximity[i]!;
    if (w === 0) continue;
    const row: WeightedRow = {
      w: w * recency[i]!,
      deliveredAt: h.deliveredAt,
      deliveredAtMs: h.deliveredAtMs ?? Date.parse(h.deliveredAt),
      carrierRateTotal: h.carrierRateTotal,
      carrierRateCurrency: h.carrierRateCurrency ?? null,
      totalDistance: h.totalDistance,
      stopOutcomes: h.stopOutcomes,
    };
    const list = out.get(h.carrierId);
    if (list) list.push(row);
    else out.set(h.carrierId, [row]);
  }
  return out;
}

export interface OnTime {
  rate: number | null;
  scored: number;
  coverage: number | null;
}

export interface Backhaul {
  load_external_reference_id: string;
  miles_to_origin: number;
  hours_before_pickup: number;
}

export interface Evidence {
  effective_loads: number;
  on_time: { pickup: OnTime; delivery: OnTime; grace_minutes: number };
  price: { rate_vs_market: number | null; priced_loads: number };
  backhaul: Backhaul | null;
  confidence: number;
}

/** What the evidence of one carrier is made of, beside the evidence itself (balanced score, reasons). */
export interface CarrierEvidence {
  evidence: Evidence;
  reasons: string[];
  /** Σw over on-time scored deliveries, and over scored deliveries (the balanced score's p). */
  deliveryOnTimeWeight: number;
  deliveryScoredWeight: number;
}

const round = (x: number, places: number) => {
  const f = 10 ** places;
  return Math.round(x * f) / f;
};

/** Σw over on-time scored stops ÷ Σw over scored; count scored; Σw scored ÷ Σw over every stop of the kind. */
function onTimeOf(rows: readonly { w: number; lateness: readonly (number | null)[] }[], graceSeconds: number) {
  let all = 0;
  let scoredW = 0;
  let onTimeW = 0;
  let scored = 0;
  let onTime = 0;
  for (const r of rows) {
    for (const late of r.lateness) {
      all += r.w;
      if (late === null) continue;
      scored += 1;
      scoredW += r.w;
      if (late <= graceSeconds) {
        onTime += 1;
        onTimeW += r.w;
      }
    }
  }
  return {
    summary: { rate: scoredW > 0 ? round(onTimeW / scoredW, 3) : null, scored, coverage: all > 0 ? round(scoredW / all, 3) : null } satisfies OnTime,
    scoredW,
    onTimeW,
    onTime,
  };
}

/**
 * The weighted median of `values` (ascending by value): the smallest value at which the cumulative weight
 * reaches half of the total.
 */
export function weightedMedian(values: readonly { value: number; w: number }[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a.value - b.value);
  const total = sorted.reduce((s, v) => s + v.w, 0);
  let acc = 0;
  for (const v of sorted) {
    acc += v.w;
    if (acc >= total / 2 - 1e-12) return v.value;
  }
  return sorted[sorted.length - 1]!.value;
}

/** Confidence: round(50 + 50 × density × consistency × (0.5 + 0.5 × cov)), within 50–100. */
export function confidenceOf(effectiveLoads: number, ratesPerMile: readonly number[], pickupCoverage: number | null, deliveryCoverage: number | null): number {
  const density = 1 - Math.exp(-effectiveLoads / 4);
  let cv = 1;
  if (ratesPerMile.length >= 2) {
    const mean = ratesPerMile.reduce((s, x) => s + x, 0) / ratesPerMile.length;
    const variance = ratesPerMile.reduce((s, x) => s + (x - mean) ** 2, 0) / ratesPerMile.length;
    cv = mean > 0 ? Math.sqrt(variance) / mean : 1;
  }
  const consistency = 1 / (1 + cv);
  const coverages = [pickupCoverage, deliveryCoverage].filter((c): c is number => c !== null);
  const cov = coverages.length === 0 ? 0 : coverages.reduce((s, c) => s + c, 0) / coverages.length;
  return Math.min(100, Math.max(50, Math.round(50 + 50 * density * consistency * (0.5 + 0.5 * cov))));
}

const DAY_MS = 86_400_000;

/** A delivery's price against the market, total ÷ (market $/mi × miles); null when it cannot be priced. */
export function priceRatio(total: number | null, miles: number | null, marketPerMile: number | null): number | null {
  if (total === null || !miles || miles <= 0 || marketPerMile === null || marketPerMile <= 0) return null;
  return total / (marketPerMile * miles);
}

/** The evidence's `price`: the weighted median of the priced deliveries' ratios (3 decimals) and how many there were. */
export function priceSummary(ratios: readonly { value: number; w: number }[]): { rate_vs_market: number | null; priced_loads: number } {
  const median = weightedMedian(ratios);
  return { rate_vs_market: median === null ? null : round(median, 3), priced_loads: ratios.length };
}

/**
 * One carrier's evidence on the lane. `marketAt(row)`: the market rate per mile on the lane as of the
 * row's delivery date in the row's rate currency (null: no snapshot then).
 */
export function carrierEvidence(
  rows: readonly WeightedRow[],
  opts: {
    graceMinutes: number;
    now: Date;
    backhaul: Backhaul | null;
    marketAt: (row: WeightedRow) => number | null;
    laneLoadCount: number;
    lastDeliveredAt: string;
  },
): CarrierEvidence {
  const sumW = rows.reduce((s, r) => s + r.w, 0);
  const sumW2 = rows.reduce((s, r) => s + r.w * r.w, 0);
  const effective = sumW2 > 0 ? (sumW * sumW) / sumW2 : 0;
  const parsed = rows.map((r) => ({ w: r.w, ...parseOutcomes(r.stopOutcomes) }));
  const grace = opts.graceMinutes * 60;
  const pickup = onTimeOf(
    parsed.map((p) => ({ w: p.w, lateness: p.pickups })),
    grace,
  );
  const delivery = onTimeOf(
    parsed.map((p) => ({ w: p.w, lateness: p.deliveries })),
    grace,
  );

  const ratios: { value: number; w: number }[] = [];
  const ratesPerMile: number[] = [];
  for (const r of rows) {
    if (r.carrierRateTotal === null || !r.totalDistance || r.totalDistance <= 0) continue;
    const value = priceRatio(r.carrierRateTotal, r.totalDistance, opts.marketAt(r));
    if (value === null) continue;
    ratios.push({ value, w: r.w });
    ratesPerMile.push(r.carrierRateTotal / r.totalDistance);
  }
  const price = priceSummary(ratios);
  const rateVsMarket = price.rate_vs_market;

  const evidence: Evidence = {
    effective_loads: round(effective, 2),
    on_time: { pickup: pickup.summary, delivery: delivery.summary, grace_minutes: opts.graceMinutes },
    price,
    backhaul: opts.backhaul,
    confidence: confidenceOf(effective, ratesPerMile, pickup.summary.coverage, delivery.summary.coverage),
  };

  const reasons: string[] = [];
  const b = opts.backhaul;
  if (b)
    reasons.push(
      `Delivers ${Math.round(b.miles_to_origin)} mi from this pickup ${Math.round(b.hours_before_pickup)} h before it (${b.load_external_reference_id})`,
    );
  const recent = rows.filter((r) => opts.now.getTime() - r.deliveredAtMs <= 90 * DAY_MS).length;
  reasons.push(
    recent > 0
      ? `Ran this lane ${recent} times in the last 90 days`
      : `Ran this lane ${opts.laneLoadCount} times, last on ${opts.lastDeliveredAt.slice(0, 10)}`,
  );
  if (delivery.summary.scored >= 3) reasons.push(`On time at ${delivery.onTime} of ${delivery.summary.scored} deliveries`);
  if (rateVsMarket !== null && ratios.length >= 2) {
    const p = Math.round((rateVsMarket - 1) * 100);
    if (Math.abs(p) >= 3) reasons.push(p < 0 ? `${-p}% under market` : `${p}% over market`);
  }
  return { evidence, reasons: reasons.slice(0, 3), deliveryOnTimeWeight: delivery.onTimeW, deliveryScoredWeight: delivery.scoredW };
}

/**
 * The balanced score: score × (0.5 + 0.5 × p) × clamp(1 ÷ rate_vs_market, 0.8, 1.2) (1 when null) × 1.25
 * with a backhaul, p = (Σw on time + 3 × 0.85) ÷ (Σw scored + 3) over deliveries; 4 decimals.
 */
export function balancedScore(score: number, e: CarrierEvidence): number {
  const p = (e.deliveryOnTimeWeight + 3 * 0.85) / (e.deliveryScoredWeight + 3);
  const rvm = e.evidence.price.rate_vs_market;
  const price = rvm === null || rvm <= 0 ? 1 : Math.min(1.2, Math.max(0.8, 1 / rvm));
  return round(score * (0.5 + 0.5 * p) * price * (e.evidence.backhaul ? 1.25 : 1), 4);
}

/** The balanced ranking's order: balanced score (highest first), then the latest delivery, then the carrier's reference. */
export function byBalancedScore(
  x: { balanced_score?: number; last_delivered_at: string; carrier_external_reference_id: string },
  y: { balanced_score?: number; last_delivered_at: string; carrier_external_reference_id: string },
): number {
  return (
    y.balanced_score! - x.balanced_score! ||
    (x.last_delivered_at < y.last_delivered_at ? 1 : x.last_delivered_at > y.last_delivered_at ? -1 : 0) ||
    (x.carrier_external_reference_id < y.carrier_external_reference_id ? -1 : x.carrier_external_reference_id > y.carrier_external_reference_id ? 1 : 0)
  );
}

/** Below this confidence the dashboard says "thin evidence: get more bids" (docs/dashboard.md, "Recommendation evidence"). */
export const THIN_EVIDENCE_BELOW = 63;
