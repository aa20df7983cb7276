import { Type, type Static } from '@sinclair/typebox';
import { CarrierRecommendation } from '../lanes/lanes.schema.js';
import { LOAD_STATUSES } from '../../domain/enums.js';

/** The answer of GET /v2/tms-api/loads/:external_reference_id/carrier-recommendations. */
export const LoadRecommendations = Type.Object(
  {
    load_id: Type.String(),
    external_reference_id: Type.String(),
    status: Type.String({ enum: [...LOAD_STATUSES] }),
    open: Type.Boolean({ description: 'Whether the load is open (ACTIVE, SPOT, TENDERED, TENDER_REJECTED).' }),
    carrier_recommendations: Type.Array(Type.Ref(CarrierRecommendation)),
    lane_radius_miles: Type.Number({ description: 'The lane radius the history was read at: 100 unless widen=true widened it to 150 or 250.' }),
    ranking: Type.String({ enum: ['history', 'balanced'], description: 'The ranking used (rank_by).' }),
  },
  { $id: 'LoadRecommendations' },
);
export type LoadRecommendations = Static<typeof LoadRecommendations>;

export const RecommendationsQuery = Type.Object({
  rank_by: Type.Optional(
    Type.String({
      enum: ['history', 'balanced'],
      description:
        'history (default): the lane-history ranking (score = Σ proximity × 0.5^(age/90) per carrier). balanced: every carrier on the lane ordered by balanced_score = score × (0.5 + 0.5 × p) × clamp(1 ÷ rate_vs_market, 0.8, 1.2) × (1.25 with a backhaul), p = (Σw on time + 2.55) ÷ (Σw scored + 3) over deliveries; the best 10 kept.',
    }),
  ),
  widen: Type.Optional(
    Type.Boolean({
      description:
        'true: when the 100-mile lane yields fewer than 3 carriers, widen to 150, then 250 miles, with proximity weight 0.25 up to 150 and 0.1 up to 250 miles. Default false: nothing changes.',
    }),
  ),
});
export type RecommendationsQuery = Static<typeof RecommendationsQuery>;
