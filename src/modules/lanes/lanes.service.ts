import { laneAreaOf, newestSnapshotsOnLanes } from '../../lib/db/lane-area.js';
import { readVersions, type OrgVersions } from '../../lib/db/versions.js';
import type { Executor } from '../../lib/db/index.js';
import { toIso, type Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import { cellOf } from '../../domain/grid.js';
import { laneEnds as endsOf, latestOnLane, maxBuyRate, withinRadius, type LaneKey, type LaneSnapshot } from '../../domain/lane.js';
import { MAX_RECOMMENDATIONS, WIDENED_RINGS, laneWeights, proximityWeights, rankCarriers, recencyWeights, type HistoryLoad, type LaneRules } from '../../domain/scoring.js';
import { balancedScore, carrierEvidence, DEFAULT_GRACE_MINUTES, priceRatio, type Backhaul, type WeightedRow } from '../../domain/evidence.js';
import { haversineMiles } from '../../geo/distance.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import { boundedMemo } from '../../lib/memo.js';
import { carrierPairs, packedBytes, packLaneRows, unpackLaneRows, type PackedLaneRows } from './lane-rows.js';
import type { CacheCounters } from '../../lib/http/read-cache.js';

import {
  carrierCards,
  equipmentWithSnapshots,
  graceMinutesOf,
  marketHistoryOnLane,
  underwayStops,
  type UnderwayStop,
  laneCandidates,
  laneEnds,
  relocateLaneHistory,
  snapshotsOnLane,
  type LaneArea,
  type LaneHistoryRow,
  type LaneStop,
} from './lanes.repo.js';

export type { LaneStop };

type LaneWeights = ReturnType<typeof laneWeights>;

/** A turn of the event loop: what arrived meanwhile is read before the work goes on. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

/**
 * What a lane's history rows can change with, as one text: the organization's counters of lane history
 * (every transaction that changes a history row, a load's or a moved place's, and the on-time grace) and
 * of carriers (the rows name them).
 */
export const historyVersionOf = (v: Pick<OrgVersions, 'lane_history' | 'carriers'>): string => `${v.lane_history}.${v.carriers}`;

/** The entries with the radius the lane was read at and the ranking used (docs/api.md, "Stop actuals, tracking events and recommendation evidence"). */
export interface RecommendationAnswer {
  items: CarrierRecommendation[];
  lane_radius_miles: number;
  ranking: RankBy;
}


const HOUR_MS = 3_600_000;
/** A backhaul (docs/api.md, "Stop actuals, tracking events and recommendation evidence") delivers within this many miles of the pickup, 0–48 h before it. */
const BACKHAUL_MILES = 100;
const BACKHAUL_HOURS = 48;

/** Each ranked carrier's history rows on the lane with its weight (proximity × recency, as the ranking weighed them). */
function weightedRows(lane: LaneRequest, history: readonly (HistoryLoad & { totalDistance: number | null; stopOutcomes: string })[], carriers: ReadonlySet<string>, weights: LaneWeights) {
  const out = new Map<string, WeightedRow[]>();
  const { proximity, recency } = weights;
  for (let i = 0; i < history.length; i++) {
    const h = history[i]!;
    if (!carriers.has(h.carrierId) || h.carrierId === lane.load.carrier_id) continue;
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

interface UnderwayLoad {
  id: string;
  ref: string;
  destination: Coordinates;
  deadlineMs: number;
}

/** Loads on their way by carrier: each with its last delivery stop's place and deadline (late_arrival, else early_arrival). */
function underwayDestinations(stops: readonly UnderwayStop[]): Map<string, UnderwayLoad[]> {
  const byLoad = new Map<string, UnderwayStop[]>();
  for (const s of stops) {
    const list = byLoad.get(s.load_id);
    if (list) list.push(s);
    else byLoad.set(s.load_id, [s]);
  }
  const out = new Map<string, UnderwayLoad[]>();
  for (const [id, list] of byLoad) {
    const { destination } = endsOf(list);
    if (!destination) continue;
    const load = { id, ref: destination.external_reference_id, destination: { latitude: destination.latitude, longitude: destination.longitude }, deadlineMs: Date.parse(destination.late_arrival ?? destination.early_arrival) };
    const carrier = out.get(destination.carrier_id);
    if (carrier) carrier.push(load);
    else out.set(destination.carrier_id, [load]);
  }
  return out;
}

/** When a backhaul of any of `lanes` may be due: from 48 h before the earliest pickup to the latest pickup. */
function backhaulWindow(lanes: readonly LaneRequest[]): { from: string; to: string } {
  const pickups = lanes.flatMap((l) => (l.pickupAt ? [Date.parse(l.pickupAt)] : []));
  return { from: new Date(Math.min(...pickups) - BACKHAUL_HOURS * HOUR_MS).toISOString(), to: new Date(Math.max(...pickups)).toISOString() };
}

/** The backhaul: the latest load of the carrier delivering within 100 miles of this pickup 0–48 h before it. */
function backhaulFor(lane: LaneRequest, loads: readonly UnderwayLoad[]): Backhaul | null {
  if (!lane.pickupAt) return null;
  const pickupMs = Date.parse(lane.pickupAt);
  let best: { load: UnderwayLoad; miles: number } | null = null;
  for (const l of loads) {
    if (l.id === lane.load.id) continue;
    const hours = (pickupMs - l.deadlineMs) / HOUR_MS;
    if (hours < 0 || hours > BACKHAUL_HOURS) continue;
    const miles = haversineMiles(l.destination, lane.origin);
    if (miles > BACKHAUL_MILES) continue;
    if (!best || l.deadlineMs > best.load.deadlineMs || (l.deadlineMs === best.load.deadlineMs && l.ref < best.load.ref)) best = { load: l, miles };
  }
  if (!best) return null;
  return {
    load_external_reference_id: best.load.ref,
    miles_to_origin: Math.round(best.miles * 10) / 10,
    hours_before_pickup: Math.round(((pickupMs - best.load.deadlineMs) / HOUR_MS) * 10) / 10,
  };
}


// Loads whose evidence the follow-up works out between two chances for requests to go first (about 2 ms).
const EVIDENCE_PART = 50;

// The newest few snapshots on a lane are nearly always the answer; the rest are read only when none is within the radius.
const NEWEST_SNAPSHOTS = 20;

type MarketSnapshot = Awaited<ReturnType<typeof marketHistoryOnLane>>[number];

/** A market snapshot on a lane as the evidence prices with it. */
interface LaneMarketRate {
  as_of: string;
  currency: string;
  rate: number;
}

/** Of `market` (an area's snapshots, newest first), those with both ends within the radius of the lane's ends, newest first. */
function marketOnLane(market: readonly MarketSnapshot[], origin: Coordinates, destination: Coordinates, radiusMiles: number): LaneMarketRate[] {
  return market
    .filter(
      (m) => withinRadius(origin, { latitude: m.origin_latitude, longitude: m.origin_longitude }, radiusMiles) && withinRadius(destination, { latitude: m.destination_latitude, longitude: m.destination_longitude }, radiusMiles),
    )
    .map((m) => ({ as_of: m.as_of, currency: m.currency, rate: Number(m.rate_per_mile) }));
}

/**
 * A lane's market rate per mile as of a delivery date, in a currency (none: USD): of the lane's
 * snapshots (marketOnLane), the newest as of that date; null when there is none.
 */
function marketRateOn(onLane: readonly LaneMarketRate[]) {
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

// Lanes whose latest market snapshot is kept (a key of about 80 characters and a small entry each).
const MARKET_MEMO_MAX = 20_000;
// Lanes whose market history is kept for their evidence, and the snapshots kept in all (about 100 bytes
// each: some 10 MB). Two years of monthly snapshots are about 25 a lane; a lane among dense feeds (weekly,
// many market pairs within its radius) can have thousands, so the bound is on the snapshots too.
const MARKET_HISTORY_MEMO_MAX = 2_000;
const MARKET_HISTORY_SNAPSHOTS_MAX = 100_000;
// Lanes whose history rows are kept for their open loads' GETs, and the bytes kept in all (packedBytes:
// about 50 a row of two or three stops). The million-load benchmark's 1,000 open loads are 1,000 lanes
// of about 460 rows, some 23 MB (the least lately used lane goes first: a cycle through more than the
// bound would never hit).
const LANE_ROWS_MEMO_MAX = 20_000;
const LANE_ROWS_BYTES_MAX = 32 * 1024 * 1024;

export function lanesService(clock: Clock, rules: LaneRules, opts: { keepLaneRows?: boolean; laneRowsCounters?: CacheCounters } = {}) {
  /**
   * The latest snapshot per lane (organization, equipment and the two places) for a market max_buy_rate
   * (docs/api.md, "Loads"), kept with the organization's market counter it was read under: a market-rate
   * write moves the counter in its own transaction (any process), so an entry under the current counter
   * is what a read would find. (So a transaction that writes a snapshot must not price loads before it
   * commits: it would keep its own uncommitted snapshot under the old counter. Only the market-rate
   * write inserts snapshots, and its answer and event are the snapshot's.) A changed batch's hundred
   * open loads were a hundred lane reads of 400 cell pairs each, about 0.6 ms apiece on PostgreSQL at
   * 160,000 snapshots, in every batch's answers and every open load's GET.
   */
  const marketMemo = boundedMemo<{ version: number; latest: LaneSnapshot | null }>({ maxEntries: MARKET_MEMO_MAX });
  /**
   * The market history of a lane (its evidence's price against the market), kept likewise under the
   * organization's market counter: an open load's GET read the lane's fifty-odd snapshots every time
   * (0.2 ms on SQLite, 0.8 ms on PostgreSQL at a million loads), and they change only with a market-rate
   * write.
   */
  const marketHistoryMemo = boundedMemo<{ version: number; onLane: LaneMarketRate[] }>({
    maxEntries: MARKET_HISTORY_MEMO_MAX,
    maxWeight: MARKET_HISTORY_SNAPSHOTS_MAX,
    weight: (e) => e.onLane.length,
  });
  const marketHistoryOf = async (tx: Executor, orgId: string, equipmentType: string, lane: LaneRequest, marketVersion?: number): Promise<LaneMarketRate[]> => {
    const key = `${orgId}|${equipmentType}|${lane.origin.latitude},${lane.origin.longitude}|${lane.destination.latitude},${lane.destination.longitude}`;
    // The counter first, the snapshots after it (as marketMaxBuyRates: never kept under a newer counter than what was read).
    const version = marketVersion ?? (await readVersions(tx, orgId)).market_rates;
    const kept = marketHistoryMemo.get(key);
    if (kept && kept.version === version) return kept.onLane;
    const onLane = marketOnLane(await marketHistoryOnLane(tx, areaOf(orgId, equipmentType, lane.origin, lane.destination)), lane.origin, lane.destination, rules.radiusMiles);
    marketHistoryMemo.set(key, { version, onLane });
    return onLane;
  };
  /**
   * A lane's history rows (laneCandidates: the rows of its area; not PostgreSQL's on-time grace read with
   * them, which a hit reads again beside the cards, so a grace set any way counts at once), kept
   * under the organization's counters they were read under (historyVersionOf): every write that changes
   * a history row (a load's, or a moved place's), sets the grace or writes a carrier moves one of them in
   * its own transaction (any process), so rows kept under the current counters are what a read would
   * find; a write of an open load, which changes no history, leaves them in place. The counters are read
   * first, the rows after (never kept under newer counters than those read). An open load's GET read the
   * same 400-odd rows of its lane each time: about 1.2 ms of SQLite's 2.7 a request at a million loads,
   * and on PostgreSQL the largest statement and the JSON parsed from it. Off with READ_CACHE=off.
   */
  const laneRowsMemo = opts.keepLaneRows
    ? boundedMemo<{ version: string; rows: PackedLaneRows; bytes: number }>({ maxEntries: LANE_ROWS_MEMO_MAX, maxWeight: LANE_ROWS_BYTES_MAX, weight: (e) => e.bytes })
    : null;
  const laneRowsCounters = opts.laneRowsCounters ?? { hit() {}, miss() {} };
  const laneCarrier = carrierPairs();
  const laneRowsOf = async (
    tx: Executor,
    area: LaneArea,
    lane: LaneRequest,
    laneRules: LaneRules,
    version: string | undefined,
  ): Promise<{ rows: LaneHistoryRow[]; graceMinutes?: number | null; proximity?: Float64Array }> => {
    if (!laneRowsMemo || version === undefined) return laneCandidates(tx, area);
    const radius = laneRules.widenedToMiles ?? laneRules.radiusMiles;
    const key = `${area.orgId}|${area.equipmentType}|${radius}|${lane.origin.latitude},${lane.origin.longitude}|${lane.destination.latitude},${lane.destination.longitude}`;
    const kept = laneRowsMemo.get(key);
    if (kept && kept.version === version) {
      laneRowsCounters.hit();
      // The grace is not kept: read beside the cards (graceMinutesOf), as it is set now.
      return unpackLaneRows(kept.rows);
    }
    laneRowsCounters.miss();
    const found = await laneCandidates(tx, area);
    const proximity = proximityWeights(lane, found.rows, laneRules);
    const rows = packLaneRows(found.rows, proximity, laneCarrier);
    laneRowsMemo.set(key, { version, rows, bytes: packedBytes(rows) });
    return Object.assign(found, { proximity });
  };
  const areaOf = (orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates): LaneArea =>
    laneAreaOf(orgId, equipmentType, origin, destination, rules.radiusMiles);

  /** Areas around several lanes at once: the union of their cells and boxes (a superset of each). */
  const unionArea = (orgId: string, equipmentType: string, lanes: readonly { origin: Coordinates; destination: Coordinates }[], radius = rules.radiusMiles): LaneArea => {
    // Each distinct pair of places once: a busy lane's open loads mostly share their facilities (the
    // follow-up ranks a hundred loads of one dock pair together).
    const distinct = new Map(lanes.map((l) => [`${l.origin.latitude},${l.origin.longitude}|${l.destination.latitude},${l.destination.longitude}`, l]));
    const areas = [...distinct.values()].map((l) => laneAreaOf(orgId, equipmentType, l.origin, l.destination, radius));
    const box = (pick: (a: LaneArea) => LaneArea['originBox']) => ({
      minLat: Math.min(...areas.map((a) => pick(a).minLat)),
      maxLat: Math.max(...areas.map((a) => pick(a).maxLat)),
      minLon: Math.min(...areas.map((a) => pick(a).minLon)),
      maxLon: Math.max(...areas.map((a) => pick(a).maxLon)),
    });
    return {
      orgId,
      equipmentType,
      originCells: [...new Set(areas.flatMap((a) => a.originCells))],
      destinationCells: [...new Set(areas.flatMap((a) => a.destinationCells))],
      originBox: box((a) => a.originBox),
      destinationBox: box((a) => a.destinationBox),
    };
  };

  /** The ranking of each lane's carriers from one read of the history around all of them, with their evidence. */
  async function recommendOnLanes(
    tx: Executor,
    orgId: string,
    equipmentType: string,
    lanes: readonly LaneRequest[],
    opts: { rules: LaneRules; rankBy: RankBy; between?: () => Promise<void>; marketVersion?: number; historyVersion?: string },
  ): Promise<CarrierRecommendation[][]> {
    const laneRules = opts.rules;
    const radius = laneRules.widenedToMiles ?? laneRules.radiusMiles;
    const area = (l: LaneRequest) => laneAreaOf(orgId, equipmentType, l.origin, l.destination, radius);
    // One lane (a GET): its rows may be kept, with their weights to it; several (the follow-up): the union's.
    const {
      rows: history,
      graceMinutes: readGrace,
      proximity,
    }: { rows: LaneHistoryRow[]; graceMinutes?: number | null; proximity?: Float64Array } =
      lanes.length === 1 ? await laneRowsOf(tx, area(lanes[0]!), lanes[0]!, laneRules, opts.historyVersion) : await laneCandidates(tx, unionArea(orgId, equipmentType, lanes, radius));
    const refs = new Map(history.map((h) => [h.carrierId, h.carrierRef]));
    const now = clock.now();
    const refOf = (id: string) => refs.get(id) ?? '';
    // Loads on the same two places with the same carrier rank alike (a busy lane's open loads mostly
    // share their facilities): ranked once each. Balanced ranks every carrier before it keeps ten.
    const limit = opts.rankBy === 'balanced' ? Number.MAX_SAFE_INTEGER : MAX_RECOMMENDATIONS;
    const laneKey = (l: LaneRequest) => `${l.origin.latitude},${l.origin.longitude}|${l.destination.latitude},${l.destination.longitude}|${l.load.carrier_id ?? ''}`;
    // Each row's weights are worked out once: recency for every lane at once, proximity once per lane, for
    // the ranking and the evidence alike.
    const recency = recencyWeights(history, now);
    const byLane = new Map<string, { ranked: ReturnType<typeof rankCarriers>; weights: LaneWeights }>();
    const rankings = lanes.map((l) => {
      const key = laneKey(l);
      let lane = byLane.get(key);
      if (!lane) {
        const weights = laneWeights(l, history, now, laneRules, recency, proximity);
        byLane.set(key, (lane = { ranked: rankCarriers({ origin: l.origin, destination: l.destination, assignedCarrierId: l.load.carrier_id }, history, now, laneRules, refOf, limit, weights), weights }));
      }
      return lane.ranked;
    });
    const wanted = [...new Set(rankings.flatMap((r) => r.map((x) => x.carrierId)))];
    if (wanted.length === 0) return rankings.map(() => []);
    // The evidence's inputs beyond the history rows: the grace, the lane's market history (only when a
    // history row has a carrier total to price), the wanted carriers' loads on their way (only with a
    // pickup).
    const anyPriced = history.some((h) => h.carrierRateTotal !== null && h.totalDistance);
    const anyPickup = lanes.some((l) => l.pickupAt);
    const [cards, grace, market, underway] = await Promise.all([
      carrierCards(tx, orgId, wanted),
      readGrace !== undefined ? readGrace : graceMinutesOf(tx, orgId),
      // One lane (a GET): its snapshots on the lane, kept; several (the follow-up): the union's, filtered per lane below.
      !anyPriced ? Promise.resolve(null) : lanes.length === 1 ? marketHistoryOf(tx, orgId, equipmentType, lanes[0]!, opts.marketVersion) : marketHistoryOnLane(tx, unionArea(orgId, equipmentType, lanes, laneRules.radiusMiles)),
      anyPickup ? underwayStops(tx, orgId, wanted, backhaulWindow(lanes)) : Promise.resolve([]),
    ]);
    const graceMinutes = grace ?? laneRules.graceMinutes ?? DEFAULT_GRACE_MINUTES;
    const underwayLoads = underwayDestinations(underway);
    // What the evidence reads of a lane depends only on its two places and assigned carrier (the ranking's
    // key): its weighted rows, market snapshots and, per carrier, the evidence without a backhaul are
    // worked out once per key; only a load's own backhaul (its pickup time) is per load.
    const perLane = new Map<string, { rowsOf: Map<string, WeightedRow[]>; marketAt: (row: WeightedRow) => number | null; plain: Map<string, ReturnType<typeof carrierEvidence>> }>();
    const laneWork = (l: LaneRequest, ranked: ReturnType<typeof rankCarriers>) => {
      const key = laneKey(l);
      let work = perLane.get(key);
      if (work) return work;
      const rowsOf = weightedRows(l, history, new Set(ranked.map((r) => r.carrierId)), byLane.get(key)!.weights);
      const rateOn = marketRateOn(market === null ? [] : lanes.length === 1 ? (market as LaneMarketRate[]) : marketOnLane(market as MarketSnapshot[], l.origin, l.destination, laneRules.radiusMiles));
      const marketAt = (row: WeightedRow) => rateOn(row.deliveredAt, row.carrierRateCurrency);
      perLane.set(key, (work = { rowsOf, marketAt, plain: new Map() }));
      return work;
    };
    const answerOf = (l: LaneRequest, i: number): CarrierRecommendation[] => {
      const ranked = rankings[i]!;
      const { rowsOf, marketAt, plain } = laneWork(l, ranked);
      const entries = ranked.flatMap((r) => {
        const c = cards.get(r.carrierId);
        if (!c) return [];
        const evidenceWith = (backhaul: Backhaul | null) =>
          carrierEvidence(rowsOf.get(r.carrierId) ?? [], {
            graceMinutes,
            now,
            backhaul,
            marketAt,
            laneLoadCount: r.laneLoadCount,
            lastDeliveredAt: r.lastDeliveredAt,
          });
        const backhaul = backhaulFor(l, underwayLoads.get(r.carrierId) ?? []);
        let found = backhaul ? undefined : plain.get(r.carrierId);
        if (!found) {
          found = evidenceWith(backhaul);
          if (!backhaul) plain.set(r.carrierId, found);
        }
        const entry: CarrierRecommendation = {
          carrier_id: c.id,
          carrier_external_reference_id: c.external_reference_id,
          carrier_name: c.name,
          dot_number: c.dot_number,
          lane_load_count: r.laneLoadCount,
          last_delivered_at: r.lastDeliveredAt,
          score: r.score,
          average_carrier_rate: r.averageCarrierRate,
          average_carrier_rate_currency: r.averageCarrierRateCurrency,
          ...(opts.rankBy === 'balanced' ? { balanced_score: balancedScore(r.score, found) } : {}),
          evidence: found.evidence,
          reasons: found.reasons,
        };
        return [entry];
      });
      if (opts.rankBy !== 'balanced') return entries;
      return entries
        .sort(
          (x, y) =>
            y.balanced_score! - x.balanced_score! ||
            (x.last_delivered_at < y.last_delivered_at ? 1 : x.last_delivered_at > y.last_delivered_at ? -1 : 0) ||
            (x.carrier_external_reference_id < y.carrier_external_reference_id ? -1 : x.carrier_external_reference_id > y.carrier_external_reference_id ? 1 : 0),
        )
        .slice(0, MAX_RECOMMENDATIONS);
    };
    if (!opts.between) return lanes.map(answerOf);
    // The follow-up ranks hundreds of loads of a lane at once: requests go first between parts of them.
    const out: CarrierRecommendation[][] = [];
    for (let i = 0; i < lanes.length; i++) {
      if (i > 0 && i % EVIDENCE_PART === 0) await opts.between();
      out.push(answerOf(lanes[i]!, i));
    }
    return out;
  }

  /** One lane's recommendations, widened (`widen=true`) while fewer than 3 carriers are found. */
  async function rankedLane(tx: Executor, orgId: string, equipmentType: string, lane: LaneRequest, opts: RecommendOptions): Promise<RecommendationAnswer> {
    const rankBy = opts.rankBy ?? 'history';
    let items = (await recommendOnLanes(tx, orgId, equipmentType, [lane], { rules, rankBy, marketVersion: opts.marketVersion, historyVersion: opts.historyVersion }))[0]!;
    let radius = rules.radiusMiles;
    if (opts.widen) {
      for (const ring of WIDENED_RINGS) {
        if (items.length >= 3 || ring.miles <= radius) continue;
        items = (await recommendOnLanes(tx, orgId, equipmentType, [lane], { rules: Object.assign({}, rules, { widenedToMiles: ring.miles }), rankBy, marketVersion: opts.marketVersion, historyVersion: opts.historyVersion }))[0]!;
        radius = ring.miles;
      }
    }
    return { items, lane_radius_miles: radius, ranking: rankBy };
  }

  return {
    rules,

    /**
     * The price against the market of deliveries, per lane (two places and an equipment type; the
     * carrier page): for each of a lane's rows with a carrier total, a distance and a market snapshot on
     * the lane as of its delivery date in its currency, total ÷ (market $/mi × miles). One read of the
     * lane's snapshots for each lane with a row to price.
     */
    async priceAgainstMarket(tx: Executor, orgId: string, lanes: readonly { equipmentType: string; origin: Coordinates; destination: Coordinates; rows: readonly PricedDelivery[] }[]): Promise<number[][]> {
      const priced = (r: PricedDelivery) => r.carrier_rate_total !== null && r.total_distance !== null && r.total_distance > 0;
      return Promise.all(
        lanes.map(async (l) => {
          if (!l.rows.some(priced)) return [];
          const rateOn = marketRateOn(marketOnLane(await marketHistoryOnLane(tx, areaOf(orgId, l.equipmentType, l.origin, l.destination)), l.origin, l.destination, rules.radiusMiles));
          return l.rows.filter(priced).flatMap((r) => {
            const ratio = priceRatio(r.carrier_rate_total, r.total_distance, rateOn(r.delivered_at, r.carrier_rate_currency));
            return ratio === null ? [] : [ratio];
          });
        }),
      );
    },

    /** The recommendations (docs/api.md, "Lane history and carrier recommendations") for a load's lane (origin, destination, equipment), best first, at most 10. */
    async recommend(tx: Executor, orgId: string, load: LaneLoad, stops?: readonly LaneStop[], versions: Pick<RecommendOptions, 'marketVersion' | 'historyVersion'> = {}): Promise<CarrierRecommendation[]> {
      return (await this.recommendWith(tx, orgId, load, stops, versions)).items;
    },

    /** The same with the options of docs/api.md, "Stop actuals, tracking events and recommendation evidence": `rankBy` balanced, `widen`; the answer says the radius and the ranking used. */
    async recommendWith(tx: Executor, orgId: string, load: LaneLoad, stops: readonly LaneStop[] | undefined, opts: RecommendOptions): Promise<RecommendationAnswer> {
      const ends = await laneEnds(tx, orgId, load.id, stops);
      if (!ends.origin || !ends.destination) return { items: [], lane_radius_miles: rules.radiusMiles, ranking: opts.rankBy ?? 'history' };
      const lane: LaneRequest = {
        load,
        origin: { latitude: ends.origin.latitude, longitude: ends.origin.longitude },
        destination: { latitude: ends.destination.latitude, longitude: ends.destination.longitude },
        pickupAt: ends.origin.earlyArrival,
      };
      return rankedLane(tx, orgId, load.equipment_type, lane, opts);
    },

    /** A lane between two places, ranked as a load with no carrier and no pickup time on it would be (the dashboard's lane page). */
    recommendLane: (tx: Executor, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, opts: RecommendOptions): Promise<RecommendationAnswer> =>
      rankedLane(tx, orgId, equipmentType, { load: { id: '', equipment_type: equipmentType, carrier_id: null }, origin, destination, pickupAt: null }, opts),

    /**
     * The same for many loads of one equipment type (the recommendations follow-up): one read of the
     * history over the union of their areas, then each load ranked exactly as `recommend` ranks it
     * (rows outside a load's radius weigh nothing).
     */
    async recommendMany(tx: Executor, orgId: string, loads: readonly LaneRequest[], between: () => Promise<void> = nextTurn): Promise<CarrierRecommendation[][]> {
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
          const ranked = await recommendOnLanes(tx, orgId, equipment, members, { rules, rankBy: 'history', between });
          members.forEach((m, i) => (out[m.index] = ranked[i]!));
          // Requests go first between groups: on SQLite the reads are synchronous, and thousands of
          // rankings in one go would hold the event loop for seconds (the follow-up waits for quiet).
          await between();
        }
      }
      return out;
    },

    /** Equipment types that have any market snapshot in the organization (most loads can skip the lookup). */
    equipmentWithSnapshots,

    /**
     * A market max_buy_rate for each of `loads`: the latest market snapshot on its lane for its
     * equipment, priced for its `miles`; null when there is none (or no miles, or no lane). The newest
     * snapshots of every distinct lane are read together (one statement on PostgreSQL): a batch's
     * answers and a list page price a hundred loads at once.
     */
    async marketMaxBuyRates(
      tx: Executor,
      orgId: string,
      loads: readonly { equipment_type: string; origin: Coordinates | null; destination: Coordinates | null; miles: number | null }[],
      /** The organization's market counter when the caller read it with the loads (one round trip saved). */
      marketVersion?: number,
    ): Promise<(number | null)[]> {
      const keyOf = loads.map(({ equipment_type, origin, destination, miles }) =>
        miles === null || !origin || !destination ? null : `${orgId}|${equipment_type}|${origin.latitude},${origin.longitude}|${destination.latitude},${destination.longitude}`,
      );
      if (keyOf.every((k) => k === null)) return loads.map(() => null);
      // The organization's market counter first (read here, or by the statement that read the loads), the
      // snapshots after it: a snapshot committed between the two is at worst newer than the counter it is
      // kept under, never older.
      const version = marketVersion ?? (await readVersions(tx, orgId)).market_rates;
      const latestOf = new Map<string, LaneSnapshot | null>();
      const missing = new Map<string, { area: LaneArea; lane: { origin: Coordinates; destination: Coordinates } }>();
      for (const [i, key] of keyOf.entries()) {
        if (key === null || latestOf.has(key) || missing.has(key)) continue;
        const kept = marketMemo.get(key);
        if (kept && kept.version === version) {
          latestOf.set(key, kept.latest);
          continue;
        }
        const { equipment_type, origin, destination } = loads[i]!;
        missing.set(key, { area: areaOf(orgId, equipment_type, origin!, destination!), lane: { origin: origin!, destination: destination! } });
      }
      const fetched = [...missing.entries()];
      const newest = await newestSnapshotsOnLanes(tx, fetched.map(([, m]) => m.area), NEWEST_SNAPSHOTS);
      for (const [j, [key, { area, lane }]] of fetched.entries()) {
        let latest = latestOnLane(newest[j]!, lane, rules.radiusMiles);
        // None of the newest within the radius (they lie in the cells' corners): all of the lane's.
        if (!latest && newest[j]!.length === NEWEST_SNAPSHOTS) latest = latestOnLane(await snapshotsOnLane(tx, area, null), lane, rules.radiusMiles);
        latestOf.set(key, latest ?? null);
        marketMemo.set(key, { version, latest: latest ?? null });
      }
      return loads.map((load, i) => {
        const key = keyOf[i];
        const latest = key ? latestOf.get(key) : null;
        return latest ? maxBuyRate(latest, load.miles!) : null;
      });
    },

    /** A re-geocoded location moves the lane history that starts or ends there; the lanes it moved. */
    locationMoved: (tx: Executor, orgId: string, location: { id: string; latitude: number; longitude: number }): Promise<LaneKey[]> =>
      relocateLaneHistory(tx, orgId, location, toIso(clock.now())),
  };
}

export type LanesService = ReturnType<typeof lanesService>;
