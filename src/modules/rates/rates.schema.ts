import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { CiEnum, ExternalReferenceId, Nullable, Text, Timestamp } from '../../lib/http/schema-helpers.js';
import { EQUIPMENT_TYPES } from '../../domain/enums.js';

export const LanePointInput = Type.Object(
  {
    location_external_reference_id: Type.Optional(ExternalReferenceId({ description: 'A location of your organization.' })),
    postal_code: Type.Optional(Type.String({ maxLength: 20 })),
    state: Type.Optional(Type.String({ maxLength: 10 })),
    country: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
    latitude: Type.Optional(Type.Number({ minimum: -90, maximum: 90 })),
    longitude: Type.Optional(Type.Number({ minimum: -180, maximum: 180 })),
  },
  { description: 'One of: location_external_reference_id; postal_code + state (+ country); latitude + longitude (+ country). Geocoded as locations are.' },
);
export type LanePointInput = Static<typeof LanePointInput>;

export const MarketRateCreate = Type.Object({
  origin: LanePointInput,
  destination: LanePointInput,
  equipment_type: CiEnum(EQUIPMENT_TYPES),
  rate_per_mile: Type.Number({ exclusiveMinimum: 0, maximum: 1000 }),
  rate_per_mile_low: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, maximum: 1000 }))),
  rate_per_mile_high: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, maximum: 1000 }))),
  currency: Type.Optional(Type.String({ pattern: '^[A-Za-z]{3}$', description: 'ISO 4217; default USD.' })),
  source: Type.Optional(Nullable(Text(255))),
  as_of: Type.Optional(Timestamp('When the rate was observed; default now.')),
});
export type MarketRateCreate = Static<typeof MarketRateCreate>;

export const LanePoint = Type.Object(
  {
    location_external_reference_id: Nullable(Type.String()),
    label: Type.String({ description: 'What was sent: the location reference, the postal code, or the coordinates.' }),
    latitude: Type.Number(),
    longitude: Type.Number(),
    state: Nullable(Type.String()),
  },
  { $id: 'LanePoint' },
);

export const MarketRate = Type.Object(
  {
    id: Type.String(),
    equipment_type: Type.String({ enum: [...EQUIPMENT_TYPES] }),
    origin: Type.Ref(LanePoint),
    destination: Type.Ref(LanePoint),
    rate_per_mile: Type.Number(),
    rate_per_mile_low: Nullable(Type.Number()),
    rate_per_mile_high: Nullable(Type.Number()),
    currency: Type.String(),
    source: Nullable(Type.String()),
    as_of: Type.String({ format: 'date-time' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'MarketRate' },
);
export type MarketRate = Static<typeof MarketRate>;

export const MARKET_RATE_SORTS = ['as_of', 'created_at'] as const;
export const MarketRateListQuery = listQuerySchema(MARKET_RATE_SORTS, {
  equipment_type: Type.Optional(CiEnum(EQUIPMENT_TYPES)),
});
export type MarketRateListQuery = Static<typeof MarketRateListQuery>;

export const MarketRatePage = pageSchema(Type.Ref(MarketRate), 'MarketRatePage');
