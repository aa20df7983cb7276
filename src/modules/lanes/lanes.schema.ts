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
    average_carrier_rate: Nullable(
      Type.Number({
        description:
          "Mean over those loads of their CARRIER financial rates' total, in one currency: the one most used among them (ties: USD); loads rated in another currency are left out. null when none has a carrier rate.",
      }),
    ),
    average_carrier_rate_currency: Nullable(Type.String({ description: 'ISO 4217 currency of average_carrier_rate; null when it is null.' })),
  },
  { $id: 'CarrierRecommendation' },
);
export type CarrierRecommendation = Static<typeof CarrierRecommendation>;
