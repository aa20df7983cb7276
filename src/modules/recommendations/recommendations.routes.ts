import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { guardedRead, principalOf } from '../../lib/http/auth.js';
import { RefOrIdParams } from '../shared/route-schemas.js';
import { LoadRecommendations, RecommendationsQuery } from './recommendations.schema.js';
import type { RecommendationsService } from './recommendations.service.js';

/** A load's carrier recommendations (docs/api.md, "Lane history and carrier recommendations"). */
export function recommendationRoutes(app: FastifyInstance, recommendations: RecommendationsService) {
  app.withTypeProvider<TypeBoxTypeProvider>().get('/v2/tms-api/loads/:external_reference_id/carrier-recommendations', {
    config: { scope: 'read:loads', foldsKeyCheck: true },
    schema: {
      tags: ['Loads'],
      operationId: 'getLoadCarrierRecommendations',
      summary: 'Carriers that ran this load’s lane, best first',
      description: [
        'For any load, open or not: the carriers with delivered loads on its lane (origins and destinations within 100 miles, same equipment), ranked by recency-weighted lane history. The carrier already assigned to the load is left out.',
        '',
        'Each entry carries its evidence, w being the weight of each history load (proximity × 0.5^(age in days/90)):',
        '- effective_loads = (Σw)² ÷ Σw² (2 decimals).',
        "- on_time.pickup / on_time.delivery: rate = Σw on-time scored ÷ Σw scored; scored = count of stops with an actual_arrival and a window; coverage = Σw scored ÷ Σw over all the carrier's lane stops of that kind (3 decimals). On time iff actual_arrival ≤ deadline (late_arrival, else early_arrival, as recorded with the arrival) + grace_minutes.",
        '- price.rate_vs_market = weighted median of total ÷ (market rate_per_mile on the lane as of the delivery date × total_distance) (3 decimals); priced_loads their count.',
        "- backhaul: the carrier's latest load on its way delivering within 100 miles of this origin 0–48 h before the first pickup.",
        '- confidence = round(50 + 50 × (1 − e^(−effective_loads/4)) × 1/(1+cv) × (0.5 + 0.5 × mean coverage)), 50–100; below 63, get more bids.',
        '- reasons: at most 3 sentences built from the above.',
        '',
        'rank_by=balanced orders by balanced_score = score × (0.5 + 0.5 × p) × clamp(1/rate_vs_market, 0.8, 1.2) × (1.25 with a backhaul), p = (Σw on time + 3 × 0.85) ÷ (Σw scored + 3) over deliveries. widen=true widens a lane of fewer than 3 carriers to 150 then 250 miles (weights 0.25 and 0.1).',
      ].join('\n'),
      params: RefOrIdParams,
      querystring: RecommendationsQuery,
      response: { 200: Type.Ref(LoadRecommendations, { description: 'The load’s carrier recommendations, best first (at most 10).' }) },
    },
    handler: async (req) => {
      const orgId = principalOf(req).orgId;
      return guardedRead(req, (g) =>
        recommendations.forLoad(orgId, req.params.external_reference_id, g, {
          rankBy: req.query.rank_by as 'history' | 'balanced' | undefined,
          widen: req.query.widen,
        }),
      );
    },
  });
}
