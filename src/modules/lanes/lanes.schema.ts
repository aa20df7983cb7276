import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../lib/http/schema-helpers.js';

export const CarrierRecommendation = Type.Object(
  {
    carrier_id: Type.String(),
    carrier_external_reference_id: Type.String(),
    carrier_name: Type.String(),
    dot_number: Nullable(Type.String()),
    lane_load_count: Type.Integer({ description: 'History loads of this carrier on the lane.' }),
    last_delivered_at: Type.String({ format: 'date-time' }),
    score: Type.Number({ description: 'Sum over those loads of proximity weight × 0.5^(age in days / 90), to 6 decimals.' }),
    average_carrier_rate: Nullable(Type.Number({ description: 'Mean total of CARRIER financial rates over those loads that have any; null when none.' })),
  },
  { $id: 'CarrierRecommendation' },
);
export type CarrierRecommendation = Static<typeof CarrierRecommendation>;
