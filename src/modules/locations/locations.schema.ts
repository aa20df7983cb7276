import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { ExternalReferenceId, Nullable, Text } from '../../lib/http/schema-helpers.js';

const OPEN_HOURS = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
const CLOSE_HOURS = '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$';

const openHours = (description: string) => Nullable(Type.String({ pattern: OPEN_HOURS, description: `${description} HH:MM, 00:00 to 23:59.` }));
const closeHours = (description: string) => Nullable(Type.String({ pattern: CLOSE_HOURS, description: `${description} HH:MM, 00:00 to 23:59, or 24:00.` }));

const locationFields = {
  address_line1: Nullable(Text(255)),
  address_line2: Nullable(Text(255)),
  city: Nullable(Text(255)),
  state: Nullable(
    Type.String({
      maxLength: 10,
      description:
        "ISO 3166-2 subdivision, 'US-TX' or (with the country known) 'TX'; returned as 'US-TX'. Required with postal_code; inferred from coordinates when omitted.",
    }),
  ),
  postal_code: Nullable(Type.String({ maxLength: 20, description: 'US ZIP (ZIP+4 accepted) or Canadian postal code; with state it geocodes the location.' })),
  country: Nullable(Type.String({ maxLength: 2, minLength: 2, description: 'ISO 3166-1 alpha-2; US when omitted.' })),
  latitude: Nullable(Type.Number({ minimum: -90, maximum: 90, description: 'With longitude (and country) it geocodes the location directly.' })),
  longitude: Nullable(Type.Number({ minimum: -180, maximum: 180 })),
  email: Nullable(Text(255)),
  phone_number: Nullable(Text(50)),
  weekday_open_hours: openHours('Weekday opening time, shown for scheduling.'),
  weekday_close_hours: closeHours('Weekday closing time.'),
  weekend_open_hours: openHours('Weekend opening time.'),
  weekend_close_hours: closeHours('Weekend closing time.'),
  internal_notes: Nullable(Text(2000, 'At most 2,000 characters.')),
};

export const LocationCreate = Type.Object(
  {
    external_reference_id: ExternalReferenceId(),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    ...Type.Partial(Type.Object(locationFields)).properties,
  },
  {
    description:
      'Must be geocodable: latitude + longitude (+ country), or postal_code + state (+ country). Unknown fields are ignored and named in Lanebridge-Ignored-Fields (422 with Prefer: handling=strict).',
  },
);
export type LocationCreate = Static<typeof LocationCreate>;

export const LocationUpdate = Type.Object(
  {
    external_reference_id: Type.Optional(ExternalReferenceId({ description: 'Cannot be changed: when sent it must equal the path parameter.' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    ...Type.Partial(Type.Object(locationFields)).properties,
  },
  {
    description:
      'Only the fields sent change. Sending postal_code, state, country, latitude or longitude re-geocodes the location from the new combination (coordinates first when sent; coordinates sent without country mean US).',
  },
);
export type LocationUpdate = Static<typeof LocationUpdate>;

export const Location = Type.Object(
  {
    id: Type.String(),
    external_reference_id: Type.String(),
    name: Type.String(),
    address_line1: Nullable(Type.String()),
    address_line2: Nullable(Type.String()),
    city: Nullable(Type.String()),
    state: Nullable(Type.String({ description: 'ISO 3166-2, e.g. US-TX.' })),
    postal_code: Nullable(Type.String()),
    country: Type.String({ description: 'ISO 3166-1 alpha-2.' }),
    latitude: Type.Number(),
    longitude: Type.Number(),
    email: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    weekday_open_hours: Nullable(Type.String()),
    weekday_close_hours: Nullable(Type.String()),
    weekend_open_hours: Nullable(Type.String()),
    weekend_close_hours: Nullable(Type.String()),
    internal_notes: Nullable(Type.String()),
    timezone: Nullable(Type.String({ description: 'IANA time zone derived from the coordinates, e.g. America/Chicago.' })),
    geocode_source: Type.String({ enum: ['coordinates', 'postal_code'] }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Location' },
);
export type Location = Static<typeof Location>;

export const LOCATION_SORTS = ['name', 'city', 'state', 'created_at', 'updated_at'] as const;

export const LocationListQuery = listQuerySchema(LOCATION_SORTS, {
  state: Type.Optional(Type.String({ maxLength: 10, description: "Subdivision, 'US-TX' or 'TX' (with country, default US)." })),
  city: Type.Optional(Type.String({ maxLength: 255, description: 'Case-insensitive exact match.' })),
  name_contains: Type.Optional(Type.String({ maxLength: 255, description: 'Case-insensitive contains search on name.' })),
  postal_code: Type.Optional(Type.String({ maxLength: 20, description: 'Exact match.' })),
  country: Type.Optional(Type.String({ maxLength: 2, minLength: 2, description: 'ISO 3166-1 alpha-2, any case.' })),
});
export type LocationListQuery = Static<typeof LocationListQuery>;

export const LocationPage = pageSchema(Type.Ref(Location), 'LocationPage');
