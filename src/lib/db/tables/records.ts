// The master records: customers, carriers and their contacts, locations. Row shapes as stored (src/lib/db/types.ts).

export interface CustomersTable {
  id: string;
  org_id: string;
  external_reference_id: string;
  name: string;
  reference_number: string | null;
  domain: string | null;
  phone: string | null;
  is_active: number;
  customer_type: string | null;
  created_at: string;
  updated_at: string;
  /** name folded for the case-insensitive filters (src/lib/fold.ts); never in responses. */
  name_folded?: string | null;
}

export interface CarriersTable {
  id: string;
  org_id: string;
  external_reference_id: string;
  name: string;
  mc_number: string | null;
  dot_number: string | null;
  phone_number: string | null;
  email: string | null;
  address_line1: string | null;
  address_line2: string | null;
  address_city: string | null;
  address_state: string | null;
  address_postal_code: string | null;
  address_country: string | null;
  created_at: string;
  updated_at: string;
  /** name folded for the case-insensitive filters (src/lib/fold.ts); never in responses. */
  name_folded?: string | null;
}

export interface CarrierContactsTable {
  id: string;
  org_id: string;
  carrier_id: string;
  position: number;
  first_name: string | null;
  last_name: string | null;
  primary_email: string | null;
  primary_phone: string | null;
  is_primary_contact: number;
}

export interface LocationsTable {
  id: string;
  org_id: string;
  external_reference_id: string;
  name: string;
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  /** ISO 3166-2, e.g. US-TX. */
  state: string | null;
  postal_code: string | null;
  country: string;
  latitude: number;
  longitude: number;
  email: string | null;
  phone_number: string | null;
  weekday_open_hours: string | null;
  weekday_close_hours: string | null;
  weekend_open_hours: string | null;
  weekend_close_hours: string | null;
  internal_notes: string | null;
  timezone: string | null;
  geocode_source: 'coordinates' | 'postal_code';
  created_at: string;
  updated_at: string;
  /** name and city folded for the case-insensitive filters (src/lib/fold.ts); never in responses. */
  name_folded?: string | null;
  city_folded?: string | null;
}
