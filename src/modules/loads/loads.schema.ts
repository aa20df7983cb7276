import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { CarrierRecommendation } from '../lanes/lanes.schema.js';
import { CiEnum, ExternalReferenceId, Nullable, Text, Timestamp, TimestampUpTo } from '../../lib/http/schema-helpers.js';
import { EQUIPMENT_TYPES, LOAD_STATUSES, RATE_ENTITIES, RATE_TYPES, STOP_TYPES, TRANSPORT_MODES, WEIGHT_UOMS } from '../../domain/enums.js';

export const StopInput = Type.Object({
  stop_number: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1000, description: 'Position of the stop, from 1; defaults to the position in the array. Unique within the load.' }),
  ),
  stop_type: CiEnum(STOP_TYPES, { description: 'Pickup, Delivery or Both.' }),
  location_external_reference_id: ExternalReferenceId({ description: 'A location of your organization; create locations before the loads that use them.' }),
  early_arrival: Timestamp('Start of the arrival window (ISO 8601; no offset means UTC).'),
  late_arrival: Timestamp('End of the arrival window; not before early_arrival.'),
  actual_arrival: Type.Optional(
    Nullable(
      Timestamp('When the truck actually arrived. In an update, a stop sent without it keeps the stored value of the same stop_number; null clears it.'),
    ),
  ),
  actual_departure: Type.Optional(Nullable(Timestamp('When the truck actually left; not before actual_arrival. Kept like actual_arrival when not sent.'))),
});
export type StopInput = Static<typeof StopInput>;

export const RateInput = Type.Object({
  rate_entity: CiEnum(RATE_ENTITIES, { description: 'Who the rate is with: CUSTOMER (revenue) or CARRIER (cost).' }),
  amount: Type.Number({ minimum: 0, maximum: 1e9 }),
  currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$', description: 'ISO 4217; default USD.' })),
  rate_type: Type.Optional(CiEnum(RATE_TYPES, { description: 'Default LINEHAUL.' })),
  description: Type.Optional(Nullable(Text(500))),
});
export type RateInput = Static<typeof RateInput>;

export const TeamMemberInput = Type.Object(
  {
    name: Type.Optional(Nullable(Text(255))),
    email: Type.Optional(Nullable(Text(255))),
    external_reference_id: Type.Optional(Nullable(Text(255))),
  },
  { description: 'At least one of name, email, external_reference_id.' },
);
export type TeamMemberInput = Static<typeof TeamMemberInput>;

const stops = Type.Array(StopInput, {
  minItems: 2,
  maxItems: 100,
  description: 'At least two stops: one Pickup (or Both) and one Delivery (or Both). Sent in an update, the array replaces the old one.',
});

const loadFields = {
  status: CiEnum(LOAD_STATUSES, { description: 'Default ACTIVE on create. Every transition is allowed.' }),
  description: Nullable(Text(2000)),
  carrier_external_reference_id: Nullable(ExternalReferenceId({ description: 'Assigns a carrier of your organization; null unassigns.' })),
  weight: Nullable(Type.Number({ minimum: 0, maximum: 1e7 })),
  weight_uom: Nullable(CiEnum(WEIGHT_UOMS, { description: 'lbs or kg.' })),
  total_distance: Nullable(Type.Number({ minimum: 0, maximum: 1e6, description: 'Miles. When omitted (or null) it is estimated from the stops.' })),
  max_buy_rate: Nullable(Type.Number({ minimum: 0, maximum: 1e9 })),
  financial_rates: Type.Array(RateInput, { maxItems: 50, description: 'Sent in an update, the array replaces the old one.' }),
  sales_rep: Nullable(TeamMemberInput),
  dispatcher_rep: Nullable(TeamMemberInput),
  assigned_dispatcher: Nullable(Text(255, 'Free text, name or email.')),
  actual_dispatcher: Nullable(Text(255)),
  operation_user: Nullable(Text(255)),
  account_manager: Nullable(Text(255)),
} satisfies TProperties;

export const LoadCreate = Type.Object(
  {
    external_reference_id: ExternalReferenceId(),
    equipment_type: CiEnum(EQUIPMENT_TYPES),
    transport_mode: CiEnum(TRANSPORT_MODES, { description: 'FTL, PTL or LTL.' }),
    customer_external_reference_id: ExternalReferenceId({ description: 'A customer of your organization.' }),
    stops,
    ...Type.Partial(Type.Object(loadFields)).properties,
  },
  { description: 'Unknown fields are ignored and named in Lanebridge-Ignored-Fields (422 with Prefer: handling=strict).' },
);
export type LoadCreate = Static<typeof LoadCreate>;

export const LoadUpdate = Type.Object(
  {
    external_reference_id: Type.Optional(ExternalReferenceId({ description: 'Cannot be changed: when sent it must equal the path parameter.' })),
    equipment_type: Type.Optional(CiEnum(EQUIPMENT_TYPES)),
    transport_mode: Type.Optional(CiEnum(TRANSPORT_MODES)),
    customer_external_reference_id: Type.Optional(ExternalReferenceId()),
    stops: Type.Optional(stops),
    ...Type.Partial(Type.Object(loadFields)).properties,
  },
  { description: 'All fields optional; only the fields sent change. `stops` and `financial_rates` replace the old arrays.' },
);
export type LoadUpdate = Static<typeof LoadUpdate>;

export const Stop = Type.Object(
  {
    id: Type.String(),
    stop_number: Type.Integer(),
    stop_type: Type.String({ enum: [...STOP_TYPES] }),
    location_id: Type.String(),
    location_external_reference_id: Type.String(),
    location_name: Type.String(),
    early_arrival: Type.String({ format: 'date-time' }),
    late_arrival: Type.String({ format: 'date-time' }),
    actual_arrival: Nullable(Type.String({ format: 'date-time', description: 'When the truck actually arrived; null when unknown.' })),
    actual_departure: Nullable(Type.String({ format: 'date-time', description: 'When the truck actually left; null when unknown.' })),
  },
  { $id: 'Stop' },
);
export type Stop = Static<typeof Stop>;

export const FinancialRate = Type.Object(
  {
    id: Type.String(),
    rate_entity: Type.String({ enum: [...RATE_ENTITIES] }),
    amount: Type.Number(),
    currency: Type.String(),
    rate_type: Type.String({ enum: [...RATE_TYPES] }),
    description: Nullable(Type.String()),
  },
  { $id: 'FinancialRate' },
);
export type FinancialRate = Static<typeof FinancialRate>;

export const TeamMember = Type.Object(
  {
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    external_reference_id: Nullable(Type.String()),
    service_user_id: Nullable(Type.String({ description: 'The workspace user matched by email, else by a unique name; null otherwise.' })),
  },
  { $id: 'TeamMember' },
);
export type TeamMember = Static<typeof TeamMember>;

export const Load = Type.Object(
  {
    id: Type.String(),
    external_reference_id: Type.String(),
    status: Type.String({ enum: [...LOAD_STATUSES] }),
    equipment_type: Type.String({ enum: [...EQUIPMENT_TYPES] }),
    transport_mode: Type.String({ enum: [...TRANSPORT_MODES] }),
    description: Nullable(Type.String()),
    customer_id: Type.String(),
    customer_external_reference_id: Type.String(),
    customer_name: Type.String(),
    carrier_id: Nullable(Type.String()),
    carrier_external_reference_id: Nullable(Type.String()),
    carrier_name: Nullable(Type.String()),
    weight: Nullable(Type.Number()),
    weight_uom: Nullable(Type.String({ enum: [...WEIGHT_UOMS] })),
    total_distance: Nullable(Type.Number({ description: 'Miles.' })),
    total_distance_source: Nullable(
      Type.String({ enum: ['caller', 'estimated'], description: 'caller: as sent; estimated: great-circle miles along the stops × circuity factor.' }),
    ),
    max_buy_rate: Nullable(Type.Number()),
    max_buy_rate_source: Nullable(Type.String({ enum: ['caller', 'market'] })),
    stops: Type.Array(Type.Ref(Stop)),
    financial_rates: Type.Array(Type.Ref(FinancialRate)),
    sales_rep: Type.Union([Type.Ref(TeamMember), Type.Null()]),
    dispatcher_rep: Type.Union([Type.Ref(TeamMember), Type.Null()]),
    assigned_dispatcher: Nullable(Type.String()),
    actual_dispatcher: Nullable(Type.String()),
    operation_user: Nullable(Type.String()),
    account_manager: Nullable(Type.String()),
    status_updated_at: Type.String({ format: 'date-time' }),
    delivered_at: Nullable(
      Type.String({ format: 'date-time', description: 'When the status last became DELIVERED (or a later status); null before delivery.' }),
    ),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    carrier_recommendations: Type.Optional(
      Type.Array(Type.Ref(CarrierRecommendation), {
        description:
          'On GET of one load: for an open load (ACTIVE, SPOT, TENDERED, TENDER_REJECTED) the carriers that ran its lane, best first (at most 10); otherwise empty.',
      }),
    ),
  },
  { $id: 'Load' },
);
export type Load = Static<typeof Load>;

export const LOAD_SORTS = ['created_at', 'updated_at', 'status', 'external_reference_id'] as const;

export const LoadListQuery = listQuerySchema(LOAD_SORTS, {
  status: Type.Optional(Type.String({ maxLength: 400, description: 'One LoadStatus, or several separated by commas (any case).' })),
  equipment_type: Type.Optional(CiEnum(EQUIPMENT_TYPES)),
  transport_mode: Type.Optional(CiEnum(TRANSPORT_MODES)),
  customer_external_reference_id: Type.Optional(ExternalReferenceId()),
  customer_id: Type.Optional(Type.String({ maxLength: 64 })),
  carrier_external_reference_id: Type.Optional(ExternalReferenceId()),
  pickup_date_from: Type.Optional(Timestamp("First pickup's early_arrival at or after this time.")),
  pickup_date_to: Type.Optional(TimestampUpTo("First pickup's early_arrival at or before this time.")),
});
export type LoadListQuery = Static<typeof LoadListQuery>;

export const LoadPage = pageSchema(Type.Ref(Load), 'LoadPage');
