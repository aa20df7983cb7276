import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { ExternalReferenceId, Nullable, Text } from '../../lib/http/schema-helpers.js';

export const ContactInput = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: 64, description: 'Send the id of an existing contact to keep it; omit it for a new contact.' })),
    first_name: Type.Optional(Nullable(Text(255))),
    last_name: Type.Optional(Nullable(Text(255))),
    primary_email: Type.Optional(Nullable(Text(255))),
    primary_phone: Type.Optional(Nullable(Text(50))),
    is_primary_contact: Type.Optional(Type.Boolean({ description: 'Default false.' })),
  },
  { description: 'A contact needs at least one of first_name, last_name, primary_email or primary_phone (else 422, in every mode).' },
);
export type ContactInput = Static<typeof ContactInput>;

export const AddressInput = Type.Object({
  address_line1: Type.Optional(Nullable(Text(255))),
  address_line2: Type.Optional(Nullable(Text(255))),
  city: Type.Optional(Nullable(Text(255))),
  state: Type.Optional(Nullable(Text(100))),
  postal_code: Type.Optional(Nullable(Text(20))),
  country: Type.Optional(Nullable(Text(100))),
});
export type AddressInput = Static<typeof AddressInput>;

const carrierFields = {
  mc_number: Nullable(Text(50, 'Deprecated: use dot_number. Accepted, returned and filterable, stored as sent.')),
  dot_number: Nullable(Text(50, 'Stored as sent (e.g. DOT789012).')),
  phone_number: Nullable(Text(50, 'Main phone number.')),
  email: Nullable(Text(255, 'Main email address.')),
  address: Nullable(AddressInput),
  contacts: Type.Array(ContactInput, { maxItems: 100, description: 'In an update, the list replaces the old one.' }),
};

export const CarrierCreate = Type.Object(
  {
    external_reference_id: ExternalReferenceId({ description: 'Your unique identifier for the carrier.' }),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    ...Type.Partial(Type.Object(carrierFields)).properties,
  },
  { description: 'Unknown fields are ignored and named in Lanebridge-Ignored-Fields (422 with Prefer: handling=strict).' },
);
export type CarrierCreate = Static<typeof CarrierCreate>;

export const CarrierUpdate = Type.Object(
  {
    external_reference_id: Type.Optional(ExternalReferenceId({ description: 'Cannot be changed: when sent it must equal the path parameter.' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    ...Type.Partial(Type.Object(carrierFields)).properties,
  },
  {
    description:
      'Only the fields sent change; null clears an optional field. `contacts` replaces the list: a contact sent with its id keeps it, new ones get new ids.',
  },
);
export type CarrierUpdate = Static<typeof CarrierUpdate>;

export const Contact = Type.Object(
  {
    id: Type.String(),
    first_name: Nullable(Type.String()),
    last_name: Nullable(Type.String()),
    primary_email: Nullable(Type.String()),
    primary_phone: Nullable(Type.String()),
    is_primary_contact: Type.Boolean(),
  },
  { $id: 'Contact' },
);
export type Contact = Static<typeof Contact>;

export const Address = Type.Object(
  {
    address_line1: Nullable(Type.String()),
    address_line2: Nullable(Type.String()),
    city: Nullable(Type.String()),
    state: Nullable(Type.String()),
    postal_code: Nullable(Type.String()),
    country: Nullable(Type.String()),
  },
  { $id: 'CarrierAddress' },
);
export type Address = Static<typeof Address>;

export const Carrier = Type.Object(
  {
    id: Type.String(),
    external_reference_id: Type.String(),
    name: Type.String(),
    mc_number: Nullable(Type.String({ deprecated: true })),
    dot_number: Nullable(Type.String()),
    phone_number: Nullable(Type.String()),
    email: Nullable(Type.String()),
    address: Type.Union([Type.Ref(Address), Type.Null()], { description: 'null when no address field is set.' }),
    contacts: Type.Array(Type.Ref(Contact)),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Carrier' },
);
export type Carrier = Static<typeof Carrier>;

export const CARRIER_SORTS = ['name', 'dot_number', 'created_at', 'updated_at'] as const;

export const CarrierListQuery = listQuerySchema(CARRIER_SORTS, {
  name_contains: Type.Optional(Type.String({ maxLength: 255, description: 'Case-insensitive contains search on name.' })),
  mc_number: Type.Optional(Type.String({ maxLength: 50, deprecated: true, description: 'Deprecated: use dot_number. Exact match.' })),
  dot_number: Type.Optional(Type.String({ maxLength: 50, description: 'Exact match.' })),
});
export type CarrierListQuery = Static<typeof CarrierListQuery>;

export const CarrierPage = pageSchema(Type.Ref(Carrier), 'CarrierPage');
