import type { Executor } from '../../lib/db/index.js';
import type { KeyGuard } from '../../lib/http/principal.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { LanesService, RecommendOptions } from '../lanes/lanes.service.js';
import type { LoadsService } from '../loads/loads.service.js';
import type { LoadRecommendations } from './recommendations.schema.js';

export interface RecommendationsDeps {
  /** The read handle (the write pipeline's reader). */
  reader: Executor;
  loads: Pick<LoadsService, 'refOf' | 'readForRecommendations'>;
  lanes: Pick<LanesService, 'recommendWith'>;
}

/**
 * A load's carrier recommendations on their own endpoint: for any load, open or not, with the ranking
 * and lane widening asked for (docs/api.md, "Lane history and carrier recommendations"). An open load's
 * GET carries the default ones (loads.service.ts).
 */
export function recommendationsService(deps: RecommendationsDeps) {
  const { reader, loads, lanes } = deps;
  return {
    /** `refOrId`: the load's external_reference_id or its id; `guard`: the key check folded into the load's read. */
    async forLoad(orgId: string, refOrId: string, guard: KeyGuard | null = null, opts: RecommendOptions = {}): Promise<LoadRecommendations> {
      const ref = await loads.refOf(orgId, refOrId);
      const { load, stops, versions } = await loads.readForRecommendations(orgId, ref, guard);
      const answer = await lanes.recommendWith(reader, orgId, load, stops, Object.assign({}, opts, versions));
      return {
        load_id: load.id,
        external_reference_id: load.external_reference_id,
        status: load.status,
        open: OPEN_STATUSES.has(load.status),
        carrier_recommendations: answer.items,
        lane_radius_miles: answer.lane_radius_miles,
        ranking: answer.ranking,
      };
    },
  };
}

export type RecommendationsService = ReturnType<typeof recommendationsService>;
