import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../lib/http/schema-helpers.js';

const OnTime = (kind: string) =>
  Type.Object(
    {
      rate: Nullable(
        Type.Number({ description: `Σw over on-time scored ${kind} stops ÷ Σw over scored ${kind} stops, 3 decimals; null when none is scored.` }),
      ),
      scored: Type.Integer({ description: `Count of scored ${kind} stops (an actual_arrival and a window).` }),
      coverage: Nullable(Type.Number({ description: `Σw over scored ${kind} stops ÷ Σw over all of them, 3 decimals; null when the carrier has none.` })),
    },
    {
      description: `On time at ${kind} stops (${kind === 'pickup' ? 'Pickup' : 'Delivery and Both'}): a scored stop is on time iff actual_arrival ≤ deadline + grace, the deadline being late_arrival (else early_arrival) as it stood when the arrival was recorded; early is on time. w = the proximity weight × 0.5^(age in days / 90) of the stop's history load, as in score.`,
    },
  );

export const Evidence = Type.Object(
  {
    effective_loads: Type.Number({
      description: "(Σw)² ÷ Σw² over the carrier's history loads on the lane (w = proximity × 0.5^(age in days / 90)), 2 decimals.",
    }),
    on_time: Type.Object({
      pickup: OnTime('pickup'),
      delivery: OnTime('delivery'),
      grace_minutes: Type.Integer({ description: "The organization's on-time grace (default 15; ON_TIME_GRACE_MINUTES, dashboard Settings)." }),
    }),
    price: Type.Object({
      rate_vs_market: Nullable(
        Type.Number({
          description:
            "Weighted (w) median over the carrier's lane loads with a CARRIER total and a market snapshot on this lane (both ends within the lane radius, as max_buy_rate matches them) as of their delivery date, in the same currency, of total ÷ (snapshot rate_per_mile × total_distance): the smallest ratio at which the cumulative weight reaches half the total; 3 decimals. null when none.",
        }),
      ),
      priced_loads: Type.Integer({ description: 'How many loads the median is over.' }),
    }),
    backhaul: Nullable(
      Type.Object(
        {
          load_external_reference_id: Type.String(),
          miles_to_origin: Type.Number({ description: "Great-circle miles from its destination to this load's origin, 1 decimal." }),
          hours_before_pickup: Type.Number({ description: "Hours from its delivery deadline to this load's first pickup early_arrival, 1 decimal." }),
        },
        {
          description:
            "The latest other load of the organization carried by this carrier, status COVERED, DISPATCHED, AT_SHIPPER, EN_ROUTE or AT_RECEIVER, whose destination lies within 100 miles of this load's origin and whose delivery deadline (last delivery stop's late_arrival) falls 0–48 h before this load's first pickup early_arrival; null when none.",
        },
      ),
    ),
    confidence: Type.Integer({
      minimum: 50,
      maximum: 100,
      description:
        'round(50 + 50 × density × consistency × (0.5 + 0.5 × cov)): density = 1 − e^(−effective_loads/4); consistency = 1/(1+cv), cv the coefficient of variation (population) of the carrier rate per mile (total ÷ total_distance) over the priced loads (cv = 1 with fewer than 2); cov = mean of pickup and delivery coverage (those not null; 0 when both are). Below 63: thin evidence, get more bids.',
    }),
  },
  { $id: 'RecommendationEvidence', description: 'What the recommendation rests on, each number with its formula.' },
);
export type Evidence = Static<typeof Evidence>;

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
    balanced_score: Type.Optional(
      Type.Number({
        description:
          'Only with rank_by=balanced: score × (0.5 + 0.5 × p) × clamp(1 ÷ rate_vs_market, 0.8, 1.2) (1 when null) × (1.25 with a backhaul, else 1), p = (Σw on time + 3 × 0.85) ÷ (Σw scored + 3) over deliveries; 4 decimals. Entries are then ordered by it (ties: latest delivery, then carrier reference).',
      }),
    ),
    evidence: Type.Ref(Evidence),
    reasons: Type.Array(Type.String(), {
      maxItems: 3,
      description:
        'At most 3, in this order, those that apply: "Delivers {m} mi from this pickup {h} h before it ({ref})" (a backhaul); "Ran this lane {n} times in the last 90 days" (else "Ran this lane {n} times, last on {YYYY-MM-DD}"); "On time at {k} of {n} deliveries" (n ≥ 3 scored); "{p}% under market" / "{p}% over market" (priced_loads ≥ 2, |p| ≥ 3, p = round((rate_vs_market − 1) × 100)).',
    }),
  },
  { $id: 'CarrierRecommendation' },
);
export type CarrierRecommendation = Static<typeof CarrierRecommendation>;
