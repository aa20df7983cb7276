import { laneAreaOf, newestSnapshotsOnLanes, unionAreaOf } from './lane-area.repo.js';
import { readVersions } from '../../lib/db/versions.js';
import type { Executor } from '../../lib/db/index.js';
import { toIso, type Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import { cellOf } from '../../domain/grid.js';
import { latestOnLane, maxBuyRate, type LaneKey, type LaneSnapshot } from '../../domain/lane.js';
import { MAX_RECOMMENDATIONS, WIDENED_RINGS, proximityWeights, rankLanes, type CarrierScore, type LaneRules } from '../../domain/scoring.js';
import {
  balancedScore,
  byBalancedScore,
  carrierEvidence,
  graceMinutesFor,
  weightedRows,
  type Backhaul,
  type CarrierEvidence,
  type WeightedRow,
} from '../../domain/evidence.js';
import { backhaulFor, backhaulWindow, underwayByCarrier } from '../../domain/backhaul.js';
import {
  isPriceable,
  marketOnLane,
  marketRateOn,
  ratiosAgainstMarket,
  type AreaSnapshot,
  type LaneMarketRate,
  type PricedDelivery,
} from '../../domain/market.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import type { CacheCounters } from '../../lib/http/read-cache.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import { laneCache, laneKeyOf, type LaneCache, type WeighedRows } from './lane-cache.js';
import {
  carrierCards,
  equipmentWithSnapshots,
  graceMinutesOf,
  marketHistoryOnLane,
  underwayStops,
  laneCandidates,
  laneEnds,
  relocateLaneHistory,
  snapshotsOnLane,
  type LaneArea,
  type LaneStop,
} from './lanes.repo.js';

/**
 * The lanes' service orchestrates: it reads through the repos (lanes.repo.ts, lane-area.repo.ts),
 * computes with the domain's rules (src/domain: scoring, evidence, backhaul, market) and keeps what it
 * may through the one cache module (lane-cache.ts, and its one invalidation rule).
 */

export type { LaneStop, PricedDelivery };
export { historyVersionOf } from './lane-cache.js';

export interface LaneLoad {
  id: string;
  equipment_type: string;
  carrier_id: string | null;
}

/** A load's lane as the ranking takes it; `pickupAt`: its first pickup's early_arrival (the backhaul's window). */
export interface LaneRequest {
  load: LaneLoad;
  origin: Coordinates;
  destination: Coordinates;
  pickupAt?: string | null;
}

export type RankBy = 'history' | 'balanced';

export interface RecommendOptions {
  rankBy?: RankBy;
  widen?: boolean;
  /** The organization's market counter when the caller read it with the load (PostgreSQL: a round trip saved). */
  marketVersion?: number;
  /**
   * The organization's counters of what a lane's history rows depend on (historyVersionOf), read before
   * anything else of the request: given, the lane's rows may come from memory (a GET outside any
   * transaction; never inside a writing one, which would keep rows not yet committed).
   */
  historyVersion?: string;
}

/** The entries with the radius the lane was read at and the ranking used (docs/api.md, "Stop actuals, tracking events and recommendation evidence"). */
export interface RecommendationAnswer {
  items: CarrierRecommendation[];
  lane_radius_miles: number;
  ranking: RankBy;
}

// Loads whose evidence the follow-up works out between two chances for requests to go first (about 2 ms).
const EVIDENCE_PART = 50;

// The newest few snapshots on a lane are nearly always the answer; the rest are read only when none is within the radius.
const NEWEST_SNAPSHOTS = 20;

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

type LaneRanking = ReturnType<typeof rankLanes>[number];

/** What the service's steps share: the clock, the lane rules, the cache (lane-cache.ts). */
interface Lanes {
  clock: Clock;
  rules: LaneRules;
  cache: LaneCache;
}

const areaOf = (ctx: Lanes, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates): LaneArea =>
  laneAreaOf(orgId, equipmentType, origin, destination, ctx.rules.radiusMiles);

/** A lane's market snapshots on the lane (its evidence's price), kept under the organization's market counter. */
async function marketHistoryOf(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  equipmentType: string,
  lane: LaneRequest,
  marketVersion?: number,
): Promise<LaneMarketRate[]> {
  // The counter first, the snapshots after it (lane-cache.ts, the rule).
  const version = marketVersion ?? (await readVersions(tx, orgId)).market_rates;
  return ctx.cache.marketHistory(laneKeyOf(orgId, equipmentType, lane.origin, lane.destination), version, async () =>
    marketOnLane(
      await marketHistoryOnLane(tx, areaOf(ctx, orgId, equipmentType, lane.origin, lane.destination)),
      lane.origin,
      lane.destination,
      ctx.rules.radiusMiles,
    ),
  );
}

/**
 * The history rows around the lanes: one lane (a GET) its own, which may be kept with their weights to
 * it (under `historyVersion`); several (the follow-up) the union of their areas.
 */
function historyAround(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  equipmentType: string,
  lanes: readonly LaneRequest[],
  laneRules: LaneRules,
  historyVersion: string | undefined,
): Promise<WeighedRows> {
  const radius = laneRules.widenedToMiles ?? laneRules.radiusMiles;
  if (lanes.length !== 1) return laneCandidates(tx, unionAreaOf(orgId, equipmentType, lanes, radius));
  const lane = lanes[0]!;
  return ctx.cache.laneRows(`${laneKeyOf(orgId, equipmentType, lane.origin, lane.destination)}|${radius}`, historyVersion, async () => {
    const found = await laneCandidates(tx, laneAreaOf(orgId, equipmentType, lane.origin, lane.destination, radius));
    return Object.assign(found, { proximity: proximityWeights(lane, found.rows, laneRules) });
  });
}

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

/**
 * Each lane's ranked carriers as entries with their evidence. What the evidence reads of a lane depends
 * only on its two places and assigned carrier (the ranking's key): its weighted rows, market snapshots
 * and, per carrier, the evidence without a backhaul are worked out once per key; only a load's own
 * backhaul (its pickup time) is per load.
 */
function evidenceOf(c: {
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

/** One lane's recommendations, widened (`widen=true`) while fewer than 3 carriers are found. */
async function rankedLane(
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
async function recommendWith(
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
async function recommendMany(
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

/**
 * A market max_buy_rate for each of `loads`: the latest market snapshot on its lane for its
 * equipment, priced for its `miles`; null when there is none (or no miles, or no lane). The newest
 * snapshots of every distinct lane are read together (one statement on PostgreSQL): a batch's
 * answers and a list page price a hundred loads at once. `marketVersion`: the organization's market
 * counter when the caller read it with the loads (one round trip saved).
 */
async function marketMaxBuyRates(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  loads: readonly { equipment_type: string; origin: Coordinates | null; destination: Coordinates | null; miles: number | null }[],
  marketVersion?: number,
): Promise<(number | null)[]> {
  const { rules, cache } = ctx;
  const keyOf = loads.map(({ equipment_type, origin, destination, miles }) =>
    miles === null || !origin || !destination ? null : laneKeyOf(orgId, equipment_type, origin, destination),
  );
  if (keyOf.every((k) => k === null)) return loads.map(() => null);
  // The organization's market counter first (read here, or by the statement that read the loads), the
  // snapshots after it (lane-cache.ts, the rule).
  const version = String(marketVersion ?? (await readVersions(tx, orgId)).market_rates);
  const latestOf = new Map<string, LaneSnapshot | null>();
  const missing = new Map<string, { area: LaneArea; lane: { origin: Coordinates; destination: Coordinates } }>();
  for (const [i, key] of keyOf.entries()) {
    if (key === null || latestOf.has(key) || missing.has(key)) continue;
    const kept = cache.marketLatest.get(key, version);
    if (kept) {
      latestOf.set(key, kept.value);
      continue;
    }
    const { equipment_type, origin, destination } = loads[i]!;
    missing.set(key, { area: areaOf(ctx, orgId, equipment_type, origin!, destination!), lane: { origin: origin!, destination: destination! } });
  }
  const fetched = [...missing.entries()];
  const newest = await newestSnapshotsOnLanes(
    tx,
    fetched.map(([, m]) => m.area),
    NEWEST_SNAPSHOTS,
  );
  for (const [j, [key, { area, lane }]] of fetched.entries()) {
    let latest = latestOnLane(newest[j]!, lane, rules.radiusMiles);
    // None of the newest within the radius (they lie in the cells' corners): all of the lane's.
    if (!latest && newest[j]!.length === NEWEST_SNAPSHOTS) latest = latestOnLane(await snapshotsOnLane(tx, area, null), lane, rules.radiusMiles);
    latestOf.set(key, latest ?? null);
    cache.marketLatest.set(key, version, latest ?? null);
  }
  return loads.map((load, i) => {
    const key = keyOf[i];
    const latest = key ? latestOf.get(key) : null;
    return latest ? maxBuyRate(latest, load.miles!) : null;
  });
}

/**
 * The price against the market of deliveries, per lane (two places and an equipment type; the carrier
 * page): the ratios of each lane's priceable rows (ratiosAgainstMarket). One read of the lane's snapshots
 * for each lane with a row to price.
 */
function priceAgainstMarket(
  ctx: Lanes,
  tx: Executor,
  orgId: string,
  lanes: readonly { equipmentType: string; origin: Coordinates; destination: Coordinates; rows: readonly PricedDelivery[] }[],
): Promise<number[][]> {
  return Promise.all(
    lanes.map(async (l) => {
      if (!l.rows.some(isPriceable)) return [];
      return ratiosAgainstMarket(
        l.rows,
        marketOnLane(
          await marketHistoryOnLane(tx, areaOf(ctx, orgId, l.equipmentType, l.origin, l.destination)),
          l.origin,
          l.destination,
          ctx.rules.radiusMiles,
        ),
      );
    }),
  );
}

export function lanesService(clock: Clock, rules: LaneRules, opts: { keepLaneRows?: boolean; laneRowsCounters?: CacheCounters } = {}) {
  const ctx: Lanes = { clock, rules, cache: laneCache(opts) };
  return {
    rules,
    priceAgainstMarket: (tx: Executor, orgId: string, lanes: Parameters<typeof priceAgainstMarket>[3]): Promise<number[][]> =>
      priceAgainstMarket(ctx, tx, orgId, lanes),

    /** The recommendations (docs/api.md, "Lane history and carrier recommendations") for a load's lane (origin, destination, equipment), best first, at most 10. */
    async recommend(
      tx: Executor,
      orgId: string,
      load: LaneLoad,
      stops?: readonly LaneStop[],
      versions: Pick<RecommendOptions, 'marketVersion' | 'historyVersion'> = {},
    ): Promise<CarrierRecommendation[]> {
      return (await recommendWith(ctx, tx, orgId, load, stops, versions)).items;
    },

    /** The same with the options of docs/api.md, "Stop actuals, tracking events and recommendation evidence": `rankBy` balanced, `widen`; the answer says the radius and the ranking used. */
    recommendWith: (
      tx: Executor,
      orgId: string,
      load: LaneLoad,
      stops: readonly LaneStop[] | undefined,
      opts: RecommendOptions,
    ): Promise<RecommendationAnswer> => recommendWith(ctx, tx, orgId, load, stops, opts),

    /** A lane between two places, ranked as a load with no carrier and no pickup time on it would be (the dashboard's lane page). */
    recommendLane: (
      tx: Executor,
      orgId: string,
      equipmentType: string,
      origin: Coordinates,
      destination: Coordinates,
      opts: RecommendOptions,
    ): Promise<RecommendationAnswer> =>
      rankedLane(
        ctx,
        tx,
        orgId,
        equipmentType,
        { load: { id: '', equipment_type: equipmentType, carrier_id: null }, origin, destination, pickupAt: null },
        opts,
      ),

    /**
     * The same for many loads of one equipment type (the recommendations follow-up): one read of the
     * history over the union of their areas, then each load ranked exactly as `recommend` ranks it
     * (rows outside a load's radius weigh nothing).
     */
    recommendMany: (
      tx: Executor,
      orgId: string,
      loads: readonly LaneRequest[],
      between: () => Promise<void> = yieldToEventLoop,
    ): Promise<CarrierRecommendation[][]> => recommendMany(ctx, tx, orgId, loads, between),

    /** Equipment types that have any market snapshot in the organization (most loads can skip the lookup). */
    equipmentWithSnapshots,

    /** A market max_buy_rate for each of `loads` (marketMaxBuyRates). */
    marketMaxBuyRates: (tx: Executor, orgId: string, loads: Parameters<typeof marketMaxBuyRates>[3], marketVersion?: number): Promise<(number | null)[]> =>
      marketMaxBuyRates(ctx, tx, orgId, loads, marketVersion),

    /** A re-geocoded location moves the lane history that starts or ends there; the lanes it moved. */
    locationMoved: (tx: Executor, orgId: string, location: { id: string; latitude: number; longitude: number }): Promise<LaneKey[]> =>
      relocateLaneHistory(tx, orgId, location, toIso(clock.now())),
  };
}

export type LanesService = ReturnType<typeof lanesService>;
