import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { ExternalReferenceId, Nullable, Text } from '../../lib/http/schema-helpers.js';

const customerFields = {
  reference_number: Nullable(Text(100, 'Your reference number for the customer. At most 100 characters.')),
  domain: Nullable(Text(255, 'Customer domain or website. At most 255 characters.')),
  phone: Nullable(Text(50, 'Used in email templates and customer communication. At most 50 characters.')),
  is_active: Type.Boolean({ description: 'Default true.' }),
  customer_type: Nullable(Text(50, 'Free category. At most 50 characters.')),
};

export const CustomerCreate = Type.Object(
  {
    external_reference_id: ExternalReferenceId(),
    name: Type.String({ minLength: 1, maxLength: 255 }),
    ...Type.Partial(Type.Object(customerFields)).properties,
  },
  { description: 'Unknown fields are ignored and named in Lanebridge-Ignored-Fields (422 with Prefer: handling=strict).' },
);
export type CustomerCreate = Static<typeof CustomerCreate>;

export const CustomerUpdate = Type.Object(
  {
    external_reference_id: Type.Optional(ExternalReferenceId({ description: 'Cannot be changed: when sent it must equal the path parameter.' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    ...Type.Partial(Type.Object(customerFields)).properties,
  },
  { description: 'Only the fields sent change; null clears an optional field.' },
);
export type CustomerUpdate = Static<typeof CustomerUpdate>;

export const Customer = Type.Object(
  {
    id: Type.String({ examples: ['cust_01jd3x0v9q8y7z6w5v4u3t2s1r'] }),
    external_reference_id: Type.String(),
    name: Type.String(),
    reference_number: Nullable(Type.String()),
    domain: Nullable(Type.String()),
    phone: Nullable(Type.String()),
    is_active: Type.Boolean(),
    customer_type: Nullable(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Customer' },
);
export type Customer = Static<typeof Customer>;

export const CUSTOMER_SORTS = ['name', 'created_at', 'updated_at'] as const;

export const CustomerListQuery = listQuerySchema(CUSTOMER_SORTS, {
  name_contains: Type.Optional(Type.String({ maxLength: 255, description: 'Case-insensitive contains search on name.' })),
  is_active: Type.Optional(Type.Boolean()),
  customer_type: Type.Optional(Type.String({ maxLength: 50, description: 'Exact match.' })),
});
export type CustomerListQuery = Static<typeof CustomerListQuery>;

export const CustomerPage = pageSchema(Type.Ref(Customer), 'CustomerPage');
