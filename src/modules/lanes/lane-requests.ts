import type { Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import type { LaneRules } from '../../domain/scoring.js';
import { laneAreaOf } from './lane-area.repo.js';
import type { LaneCache } from './lane-cache.js';
import type { LaneArea } from './lanes.repo.js';
import type { CarrierRecommendation } from './lanes.schema.js';

/**
 * What the lanes' service is asked and answers (a load's lane, the ranking's options, the answer), and
 * what its steps share (the `Lanes` context): lane-reads.ts, lane-ranking.ts and recommendation-cards.ts
 * take it.
 */

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

/** What the service's steps share: the clock, the lane rules, the cache (lane-cache.ts). */
export interface Lanes {
  clock: Clock;
  rules: LaneRules;
  cache: LaneCache;
}

/** The index area of a lane at the rules' radius (lane-area.repo.ts). */
export const areaOf = (ctx: Lanes, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates): LaneArea =>
  laneAreaOf(orgId, equipmentType, origin, destination, ctx.rules.radiusMiles);
