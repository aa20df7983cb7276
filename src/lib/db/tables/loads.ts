import type { FinancialRateValues, PlannedStop } from '../../../domain/load.js';

// Loads, their stops, rates and tracking events, and the counts per status. Row shapes as stored (src/lib/db/types.ts).

export interface LoadsTable {
  id: string;
  org_id: string;
  external_reference_id: string;
  status: string;
  equipment_type: string;
  transport_mode: string;
  description: string | null;
  customer_id: string;
  carrier_id: string | null;
  weight: number | null;
  weight_uom: string | null;
  total_distance: number | null;
  total_distance_source: 'caller' | 'estimated' | null;
  max_buy_rate: number | null;
  max_buy_rate_source: 'caller' | 'market' | null;
  /** JSON of {name, email, external_reference_id}, or null. */
  sales_rep: string | null;
  dispatcher_rep: string | null;
  assigned_dispatcher: string | null;
  actual_dispatcher: string | null;
  operation_user: string | null;
  account_manager: string | null;
  /** early_arrival of the first pickup stop: the pickup_date_from/to filter. */
  pickup_at: string | null;
  /** late_arrival of the last delivery stop (the lane's destination): the window a backhaul must deliver in. */
  delivery_deadline: string | null;
  status_updated_at: string;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

/** Every column of loads, in one order (a load document's array; the set-based insert). */
export const LOAD_COLUMNS = [
  'id',
  'org_id',
  'external_reference_id',
  'status',
  'equipment_type',
  'transport_mode',
  'description',
  'customer_id',
  'carrier_id',
  'weight',
  'weight_uom',
  'total_distance',
  'total_distance_source',
  'max_buy_rate',
  'max_buy_rate_source',
  'sales_rep',
  'dispatcher_rep',
  'assigned_dispatcher',
  'actual_dispatcher',
  'operation_user',
  'account_manager',
  'pickup_at',
  'status_updated_at',
  'delivered_at',
  'created_at',
  'updated_at',
  'delivery_deadline',
] as const satisfies readonly (keyof LoadsTable)[];
// A column added to loads and not here fails to compile.
const allLoadColumns: Exclude<keyof LoadsTable, (typeof LOAD_COLUMNS)[number]> extends never ? true : never = true;
void allLoadColumns;

/** A tracking event applied, kept by the caller's event_id with its answer. */
export interface TrackingEventsTable {
  org_id: string;
  event_id: string;
  load_id: string;
  /** JSON of the 201 answer. */
  answer: string;
  created_at: string;
}

export interface LoadStopsTable extends PlannedStop {
  id: string;
  org_id: string;
  load_id: string;
}

/** A stop as reads return it: with its place's reference, name and coordinates. */
export interface StopWithLocation extends LoadStopsTable {
  location_external_reference_id: string;
  location_name: string;
  latitude: number;
  longitude: number;
}

export interface LoadRatesTable extends FinancialRateValues {
  id: string;
  org_id: string;
  load_id: string;
}

/** Loads per status and organization, kept in each load write's transaction: list totals without counting. */
export interface LoadStatusCountsTable {
  org_id: string;
  status: string;
  n: number;
}
