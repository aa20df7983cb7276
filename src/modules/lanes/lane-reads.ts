import { laneAreaOf, newestSnapshotsOnLanes, unionAreaOf } from './lane-area.repo.js';
import { readVersions } from '../../lib/db/versions.js';
import type { Executor } from '../../lib/db/index.js';
import type { Coordinates } from '../../geo/index.js';
import { latestOnLane, maxBuyRate, type LaneSnapshot } from '../../domain/lane.js';
import { proximityWeights, type LaneRules } from '../../domain/scoring.js';
import { isPriceable, marketOnLane, ratiosAgainstMarket, type LaneMarketRate, type PricedDelivery } from '../../domain/market.js';
import { laneKeyOf, type WeighedRows } from './lane-cache.js';
import { laneCandidates, marketHistoryOnLane, snapshotsOnLane, type LaneArea } from './lanes.repo.js';
import { areaOf, type LaneRequest, type Lanes } from './lane-requests.js';

/**
 * The lanes' reads through their memos (lane-cache.ts, and its one rule: the organization's counters
 * first, the rows after): a lane's history rows and market snapshots for the ranking, the market
 * max_buy_rates of loads, and the price against the market of a carrier's deliveries.
 */

// The newest few snapshots on a lane are nearly always the answer; the rest are read only when none is within the radius.
const NEWEST_SNAPSHOTS = 20;

/** A lane's market snapshots on the lane (its evidence's price), kept under the organization's market counter. */
export async function marketHistoryOf(
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
export function historyAround(
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

/**
 * A market max_buy_rate for each of `loads`: the latest market snapshot on its lane for its
 * equipment, priced for its `miles`; null when there is none (or no miles, or no lane). The newest
 * snapshots of every distinct lane are read together (one statement on PostgreSQL): a batch's
 * answers and a list page price a hundred loads at once. `marketVersion`: the organization's market
 * counter when the caller read it with the loads (one round trip saved).
 */
export async function marketMaxBuyRates(
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
export function priceAgainstMarket(
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
