import type { Executor } from '../../lib/db/index.js';
import { toIso, type Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import type { LaneKey } from '../../domain/lane.js';
import type { LaneRules } from '../../domain/scoring.js';
import type { PricedDelivery } from '../../domain/market.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import type { CacheCounters } from '../../lib/http/read-cache.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import { laneCache } from './lane-cache.js';
import { equipmentWithSnapshots, relocateLaneHistory, type LaneStop } from './lanes.repo.js';
import { marketMaxBuyRates, priceAgainstMarket } from './lane-reads.js';
import { rankedLane, recommendMany, recommendWith } from './lane-ranking.js';
import type { LaneLoad, LaneRequest, Lanes, RecommendationAnswer, RecommendOptions } from './lane-requests.js';

/**
 * The lanes' service orchestrates: it reads through the repos (lanes.repo.ts, lane-area.repo.ts) and
 * the memos (lane-reads.ts over lane-cache.ts, and its one invalidation rule), ranks with the domain's
 * rules (src/domain: scoring, evidence, backhaul, market; lane-ranking.ts) and builds the cards
 * (recommendation-cards.ts).
 */

export type { LaneStop, PricedDelivery };
export type { LaneLoad, LaneRequest, RankBy, RecommendOptions, RecommendationAnswer } from './lane-requests.js';
export { historyVersionOf } from './lane-cache.js';

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
