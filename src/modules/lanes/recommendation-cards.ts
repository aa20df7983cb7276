import { MAX_RECOMMENDATIONS, type rankLanes, type CarrierScore, type LaneRules } from '../../domain/scoring.js';
import { balancedScore, byBalancedScore, carrierEvidence, weightedRows, type Backhaul, type CarrierEvidence, type WeightedRow } from '../../domain/evidence.js';
import { backhaulFor, type underwayByCarrier } from '../../domain/backhaul.js';
import { marketOnLane, marketRateOn, type AreaSnapshot, type LaneMarketRate } from '../../domain/market.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import type { carrierCards } from './lanes.repo.js';
import type { LaneRequest, RankBy } from './lane-requests.js';

/**
 * The recommendation cards: a lane's ranked carriers (domain/scoring.ts) as the answer's entries, each
 * with its evidence (domain/evidence.ts, domain/backhaul.ts, domain/market.ts) worked out from what
 * lane-ranking.ts read.
 */

/** A ranked carrier as an answer's entry, with its evidence (and the balanced score when ranked so). */
function entryOf(
  c: { id: string; external_reference_id: string; name: string; dot_number: string | null },
  r: CarrierScore,
  found: CarrierEvidence,
  rankBy: RankBy,
): CarrierRecommendation {
  return {
    carrier_id: c.id,
    carrier_external_reference_id: c.external_reference_id,
    carrier_name: c.name,
    dot_number: c.dot_number,
    lane_load_count: r.laneLoadCount,
    last_delivered_at: r.lastDeliveredAt,
    score: r.score,
    average_carrier_rate: r.averageCarrierRate,
    average_carrier_rate_currency: r.averageCarrierRateCurrency,
    ...(rankBy === 'balanced' ? { balanced_score: balancedScore(r.score, found) } : {}),
    evidence: found.evidence,
    reasons: found.reasons,
  };
}

export type LaneRanking = ReturnType<typeof rankLanes>[number];

/**
 * Each lane's ranked carriers as entries with their evidence. What the evidence reads of a lane depends
 * only on its two places and assigned carrier (the ranking's key): its weighted rows, market snapshots
 * and, per carrier, the evidence without a backhaul are worked out once per key; only a load's own
 * backhaul (its pickup time) is per load.
 */
export function evidenceOf(c: {
  history: Parameters<typeof weightedRows>[0];
  lanes: readonly LaneRequest[];
  laneRules: LaneRules;
  now: Date;
  cards: Awaited<ReturnType<typeof carrierCards>>;
  market: LaneMarketRate[] | AreaSnapshot[] | null;
  graceMinutes: number;
  underway: ReturnType<typeof underwayByCarrier>;
  rankBy: RankBy;
}) {
  const perLane = new Map<
    LaneRanking,
    { rowsOf: Map<string, WeightedRow[]>; marketAt: (row: WeightedRow) => number | null; plain: Map<string, CarrierEvidence> }
  >();
  const laneWork = (l: LaneRequest, lane: LaneRanking) => {
    let work = perLane.get(lane);
    if (work) return work;
    const rowsOf = weightedRows(c.history, new Set(lane.ranked.map((r) => r.carrierId)), l.load.carrier_id, lane.weights);
    const onLane =
      c.market === null
        ? []
        : c.lanes.length === 1
          ? (c.market as LaneMarketRate[])
          : marketOnLane(c.market as AreaSnapshot[], l.origin, l.destination, c.laneRules.radiusMiles);
    const rateOn = marketRateOn(onLane);
    const marketAt = (row: WeightedRow) => rateOn(row.deliveredAt, row.carrierRateCurrency);
    perLane.set(lane, (work = { rowsOf, marketAt, plain: new Map() }));
    return work;
  };
  return (l: LaneRequest, lane: LaneRanking): CarrierRecommendation[] => {
    const { rowsOf, marketAt, plain } = laneWork(l, lane);
    const entries = lane.ranked.flatMap((r) => {
      const card = c.cards.get(r.carrierId);
      if (!card) return [];
      const backhaul: Backhaul | null = backhaulFor({ loadId: l.load.id, origin: l.origin, pickupAt: l.pickupAt }, c.underway.get(r.carrierId) ?? []);
      let found = backhaul ? undefined : plain.get(r.carrierId);
      if (!found) {
        found = carrierEvidence(rowsOf.get(r.carrierId) ?? [], {
          graceMinutes: c.graceMinutes,
          now: c.now,
          backhaul,
          marketAt,
          laneLoadCount: r.laneLoadCount,
          lastDeliveredAt: r.lastDeliveredAt,
        });
        if (!backhaul) plain.set(r.carrierId, found);
      }
      return [entryOf(card, r, found, c.rankBy)];
    });
    return c.rankBy === 'balanced' ? entries.sort(byBalancedScore).slice(0, MAX_RECOMMENDATIONS) : entries;
  };
}
