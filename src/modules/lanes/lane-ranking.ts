import { unionAreaOf } from './lane-area.repo.js';
import type { Executor } from '../../lib/db/index.js';
import { cellOf } from '../../domain/grid.js';
import { MAX_RECOMMENDATIONS, WIDENED_RINGS, rankLanes, type LaneRules } from '../../domain/scoring.js';
import { graceMinutesFor } from '../../domain/evidence.js';
import { backhaulWindow, underwayByCarrier } from '../../domain/backhaul.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import { carrierCards, graceMinutesOf, laneEnds, marketHistoryOnLane, underwayStops, type LaneStop } from './lanes.repo.js';
import { historyAround, marketHistoryOf } from './lane-reads.js';
import { evidenceOf } from './recommendation-cards.js';
import type { LaneLoad, LaneRequest, Lanes, RankBy, RecommendationAnswer, RecommendOptions } from './lane-requests.js';

/**
 * The ranking of loads' lanes: the history around them read once (lane-reads.ts), ranked by the
 * domain's rules (domain/scoring.ts), the evidence's other inputs read together, and each lane's
 * cards built (recommendation-cards.ts); one lane widened on request, many grouped by their cells.
 */

// Loads whose evidence the follow-up works out between two chances for requests to go first (about 2 ms).
const EVIDENCE_PART = 50;

/** The ranking of each lane's carriers from one read of the history around all of them, with their evidence. */
async function recommendOnLanes(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  equipmentType: string,
  lanes: readonly LaneRequest[],
  opts: { rules: LaneRules; rankBy: RankBy; between?: () => Promise<void>; marketVersion?: number; historyVersion?: string },
): Promise<CarrierRecommendation[][]> {
  const laneRules = opts.rules;
  const { rows: history, graceMinutes: readGrace, proximity } = await historyAround(ctx, tx, orgId, equipmentType, lanes, laneRules, opts.historyVersion);
  const refs = new Map(history.map((h) => [h.carrierId, h.carrierRef]));
  const now = ctx.clock.now();
  // Balanced ranks every carrier before it keeps ten.
  const limit = opts.rankBy === 'balanced' ? Number.MAX_SAFE_INTEGER : MAX_RECOMMENDATIONS;
  const rankings = rankLanes(
    lanes.map((l) => ({ origin: l.origin, destination: l.destination, assignedCarrierId: l.load.carrier_id })),
    history,
    now,
    laneRules,
    (id) => refs.get(id) ?? '',
    limit,
    proximity,
  );
  const wanted = [...new Set(rankings.flatMap((r) => r.ranked.map((x) => x.carrierId)))];
  if (wanted.length === 0) return rankings.map(() => []);
  // The evidence's inputs beyond the history rows: the grace, the lane's market history (only when a
  // history row has a carrier total to price), the wanted carriers' loads on their way (only with a
  // pickup).
  const anyPriced = history.some((h) => h.carrierRateTotal !== null && h.totalDistance);
  const pickups = lanes.flatMap((l) => (l.pickupAt ? [l.pickupAt] : []));
  const [cards, grace, market, underway] = await Promise.all([
    carrierCards(tx, orgId, wanted),
    readGrace !== undefined ? readGrace : graceMinutesOf(tx, orgId),
    // One lane (a GET): its snapshots on the lane, kept; several (the follow-up): the union's, filtered per lane below.
    !anyPriced
      ? Promise.resolve(null)
      : lanes.length === 1
        ? marketHistoryOf(ctx, tx, orgId, equipmentType, lanes[0]!, opts.marketVersion)
        : marketHistoryOnLane(tx, unionAreaOf(orgId, equipmentType, lanes, laneRules.radiusMiles)),
    pickups.length > 0 ? underwayStops(tx, orgId, wanted, backhaulWindow(pickups)) : Promise.resolve([]),
  ]);
  const evidence = evidenceOf({
    history,
    lanes,
    laneRules,
    now,
    cards,
    market,
    graceMinutes: graceMinutesFor(grace, laneRules.graceMinutes),
    underway: underwayByCarrier(underway),
    rankBy: opts.rankBy,
  });
  if (!opts.between) return lanes.map((l, i) => evidence(l, rankings[i]!));
  // The follow-up ranks hundreds of loads of a lane at once: requests go first between parts of them.
  const out: CarrierRecommendation[][] = [];
  for (let i = 0; i < lanes.length; i++) {
    if (i > 0 && i % EVIDENCE_PART === 0) await opts.between();
    out.push(evidence(lanes[i]!, rankings[i]!));
  }
  return out;
}

/** One lane's recommendations, widened (`widen=true`) while fewer than 3 carriers are found. */
export async function rankedLane(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  equipmentType: string,
  lane: LaneRequest,
  opts: RecommendOptions,
): Promise<RecommendationAnswer> {
  const { rules } = ctx;
  const rankBy = opts.rankBy ?? 'history';
  let items = (
    await recommendOnLanes(ctx, tx, orgId, equipmentType, [lane], { rules, rankBy, marketVersion: opts.marketVersion, historyVersion: opts.historyVersion })
  )[0]!;
  let radius = rules.radiusMiles;
  if (opts.widen) {
    for (const ring of WIDENED_RINGS) {
      if (items.length >= 3 || ring.miles <= radius) continue;
      items = (
        await recommendOnLanes(ctx, tx, orgId, equipmentType, [lane], {
          rules: Object.assign({}, rules, { widenedToMiles: ring.miles }),
          rankBy,
          marketVersion: opts.marketVersion,
          historyVersion: opts.historyVersion,
        })
      )[0]!;
      radius = ring.miles;
    }
  }
  return { items, lane_radius_miles: radius, ranking: rankBy };
}

/** A stored load's lane (its stops' ends) ranked with the options (rankedLane); no lane, no entries. */
export async function recommendWith(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  load: LaneLoad,
  stops: readonly LaneStop[] | undefined,
  opts: RecommendOptions,
): Promise<RecommendationAnswer> {
  const ends = await laneEnds(tx, orgId, load.id, stops);
  if (!ends.origin || !ends.destination) return { items: [], lane_radius_miles: ctx.rules.radiusMiles, ranking: opts.rankBy ?? 'history' };
  const lane: LaneRequest = {
    load,
    origin: { latitude: ends.origin.latitude, longitude: ends.origin.longitude },
    destination: { latitude: ends.destination.latitude, longitude: ends.destination.longitude },
    pickupAt: ends.origin.earlyArrival,
  };
  return rankedLane(ctx, tx, orgId, load.equipment_type, lane, opts);
}

/** Many loads' recommendations: by equipment type, loads whose lanes share their two cells ranked from one read; requests go first between groups. */
export async function recommendMany(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  loads: readonly LaneRequest[],
  between: () => Promise<void>,
): Promise<CarrierRecommendation[][]> {
  const out: CarrierRecommendation[][] = loads.map(() => []);
  const byEquipment = new Map<string, (LaneRequest & { index: number })[]>();
  loads.forEach(({ load, origin, destination, pickupAt }, index) => {
    const entry = { index, load, origin, destination, pickupAt };
    const list = byEquipment.get(load.equipment_type);
    if (list) list.push(entry);
    else byEquipment.set(load.equipment_type, [entry]);
  });
  for (const [equipment, group] of byEquipment) {
    // Loads whose lanes share their origin and destination cells share one read.
    const byCells = new Map<string, typeof group>();
    for (const g of group) {
      const key = `${cellOf(g.origin.latitude, g.origin.longitude)}|${cellOf(g.destination.latitude, g.destination.longitude)}`;
      const list = byCells.get(key);
      if (list) list.push(g);
      else byCells.set(key, [g]);
    }
    for (const members of byCells.values()) {
      const ranked = await recommendOnLanes(ctx, tx, orgId, equipment, members, { rules: ctx.rules, rankBy: 'history', between });
      members.forEach((m, i) => (out[m.index] = ranked[i]!));
      // Requests go first between groups: on SQLite the reads are synchronous, and thousands of
      // rankings in one go would hold the event loop for seconds (the follow-up waits for quiet).
      await between();
    }
  }
  return out;
}
