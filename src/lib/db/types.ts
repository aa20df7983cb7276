import type { FinancialRateValues, PlannedStop } from '../../domain/load.js';

// Row shapes as stored. Timestamps are ISO 8601 UTC text (same on both engines, sortable as strings);
// booleans are 0/1 integers (better-sqlite3 cannot bind JS booleans).

export interface OrganizationsTable {
  id: string;
  name: string;
  /** Minutes of on-time grace; null: the ON_TIME_GRACE_MINUTES default. */
  on_time_grace_minutes?: number | null;
  created_at: string;
}

export interface TmsIntegrationsTable {
  org_id: string;
  connected_at: string;
}

export interface UsersTable {
  id: string;
  org_id: string;
  email: string;
  email_lower: string;
  name: string;
  password_hash: string | null;
  created_at: string;
  /** `admin` or `member`. */
  role: string;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string;
  external_system: string;
  key_hash: string;
  key_prefix: string;
  scopes: string;
  per_minute: number;
  per_day: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  replaced_by_key_id: string | null;
  /** null when the key never expires. */
  expires_at: string | null;
  /** 1 when every request of the key is handled strictly. */
  strict: number;
}

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

/** One row per load that is lane history (docs/api.md, "Lane history and carrier recommendations"): a carrier and a delivered (or later) status. */
export interface LaneHistoryTable {
  load_id: string;
  org_id: string;
  carrier_id: string;
  /** Immutable, so kept here for the tie-break without a join. */
  carrier_external_reference_id: string;
  equipment_type: string;
  origin_location_id: string;
  destination_location_id: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  origin_cell: number;
  destination_cell: number;
  delivered_at: string;
  /** The load's CARRIER rates in carrier_rate_currency (its most used currency; ties USD). */
  carrier_rate_total: number | null;
  carrier_rate_currency: string | null;
  /** The load's miles (price against market, rate per mile). */
  total_distance: number | null;
  /** One token per stop (docs/api.md, "Stop actuals, tracking events and recommendation evidence"), `p` (Pickup) or `d` (Delivery, Both), then the arrival's lateness in seconds when scored. */
  stop_outcomes: string;
}

/** Per lane (equipment and the origin and destination cells): what the dashboard lists. */
export interface LaneStatsTable {
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  load_count: number;
  carrier_count: number;
  last_delivered_at: string;
  refreshed_at: string;
}

/** A carrier's history loads on a lane (the lane stats' distinct carriers, kept as history is written). */
export interface LaneCarriersTable {
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  carrier_id: string;
  loads: number;
}

export interface MarketRateSnapshotsTable {
  id: string;
  org_id: string;
  equipment_type: string;
  origin_label: string;
  destination_label: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  origin_state: string | null;
  destination_state: string | null;
  origin_cell: number;
  destination_cell: number;
  rate_per_mile: number;
  rate_per_mile_low: number | null;
  rate_per_mile_high: number | null;
  currency: string;
  source: string | null;
  as_of: string;
  created_at: string;
}

/** A dashboard sign-in session (the cookie carries the token; `id` is its SHA-256). */
export interface DashboardSessionsTable {
  id: string;
  org_id: string;
  user_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export interface DashboardSettingsTable {
  name: string;
  value: string;
  created_at: string;
}

/** Loads per status and organization, kept in each load write's transaction: list totals without counting. */
export interface LoadStatusCountsTable {
  org_id: string;
  status: string;
  n: number;
}

/** Record counters per organization (src/lib/db/versions.ts). */
export interface OrgVersionsTable {
  org_id: string;
  customers: number;
  carriers: number;
  locations: number;
  loads: number;
  market_rates: number;
  users: number;
  api_keys: number;
  /** Moved by every transaction that changes lane history rows, and by the on-time grace (migration 0022). */
  lane_history: number;
  /** The last event sequence given, and the last one pruned (an `after` below it is answered 410). */
  events: number;
  events_pruned: number;
  /** The last event the recommendations follow-up has read. */
  recommendations_after: number;
}

/** An open load's lane cells and the ranked carrier ids last announced for it (load.recommendations_changed). */
export interface RecommendationWatchTable {
  load_id: string;
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  external_reference_id: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  carrier_id: string | null;
  /** JSON array of carrier ids, best first. */
  ranked: string;
}

export interface EventsTable {
  org_id: string;
  sequence: number;
  id: string;
  type: string;
  /** The record kind the event is about (a key's read scopes select by it). */
  kind: string;
  record_id: string | null;
  created_at: string;
  /** The event's data object, as JSON text. */
  data: string;
  /** Internal: the lanes whose history the change moved (JSON LaneKey[]), for the recommendations follow-up. */
  lanes: string | null;
}

/** An Idempotency-Key of an organization, claimed (status null) or completed with its answer. */
export interface IdempotencyKeysTable {
  org_id: string;
  key: string;
  /** SHA-256 (base64url) of method, path and the canonical JSON of the body. */
  fingerprint: string;
  /** The token of the request that holds (or held) the key. */
  claim: string;
  status: number | null;
  content_type: string | null;
  body: string | null;
  created_at: string;
  lease_until: string;
  expires_at: string;
}

/** A webhook endpoint of an organization (src/modules/webhooks). */
export interface WebhookEndpointsTable {
  id: string;
  org_id: string;
  url: string;
  /** JSON array of event types, or null for every type. */
  event_types: string | null;
  description: string | null;
  status: string;
  /** manual, gone (the receiver answered 410) or failing (5 days of failed attempts). */
  disabled_reason: string | null;
  disabled_at: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  /** The last event sequence of the organization turned into deliveries for this endpoint. */
  enqueued_through: number;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

/** One event sent (or to be sent) to one endpoint. */
export interface WebhookDeliveriesTable {
  id: string;
  org_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  sequence: number;
  attempt: number;
  status: string;
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  next_attempt_at: string | null;
  claim: string | null;
  leased_until: string | null;
  /** The envelope of a test event (not in `events`); null for the feed's events. */
  payload: string | null;
  /** The replay that queued it (one running replay per endpoint), else null. */
  replay_id: string | null;
  created_at: string;
  updated_at: string;
}

/** Issue 26: every attempt of a delivery (the delivery row keeps the last outcome). */
export interface WebhookAttemptsTable {
  id: string;
  org_id: string;
  endpoint_id: string;
  delivery_id: string;
  event_id: string;
  event_type: string;
  sequence: number;
  /** The delivery's attempt number (1 … 10). */
  attempt: number;
  /** delivered or failed: this attempt's own outcome. */
  status: string;
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  /** The start of the receiver's answer (at most 2 KiB of text). */
  response_body: string | null;
  /** The retry this attempt scheduled, or null (delivered, or no attempt left). */
  next_attempt_at: string | null;
  /** When the attempt started. */
  created_at: string;
}

/** An import job (src/modules/imports). Counts are bigint (PostgreSQL returns them as text). */
export interface ImportsTable {
  id: string;
  org_id: string;
  resource: string;
  format: string;
  emit_events: string;
  operation: string;
  options: string | null;
  status: string;
  parts: number;
  bytes_total: number | string;
  rows_total: number | string | null;
  checkpoint_row: number | string;
  rows_processed: number | string;
  rows_succeeded: number | string;
  rows_failed: number | string;
  claim: string | null;
  leased_until: string | null;
  attempts: number;
  error: string | null;
  created_at: string;
  updated_at: string;
  queued_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** One refused row of an import; `detail` is the answer's detail as JSON (docs/imports.md, "Rows"). */
export interface ImportErrorsTable {
  import_id: string;
  row: number | string;
  external_reference_id: string | null;
  detail: string;
}

export interface AuditLogTable {
  id: string;
  org_id: string;
  at: string;
  action: string;
  actor_type: string;
  actor_id: string | null;
  actor_name: string;
  target_type: string;
  target_id: string;
  /** What the target was called then (a removed user's name and email); null when not recorded. */
  target_name?: string | null;
  ip: string | null;
}

/** API usage per key and UTC hour, split 2xx / 4xx / 5xx / 429 (src/modules/ops/usage.service.ts). */
export interface ApiUsageHourlyTable {
  org_id: string;
  key_id: string;
  hour: string;
  ok: number;
  client_errors: number;
  server_errors: number;
  rate_limited: number;
  last_request_at: string;
}

/** A failed write (a single request or a batch item), kept a bounded time for the dashboard. */
export interface FailedWritesTable {
  id: string;
  org_id: string;
  key_id: string;
  occurred_at: string;
  method: string;
  path: string;
  resource: string;
  operation: string;
  reference: string | null;
  batch_index: number | null;
  status: number;
  detail: string;
  request_id: string | null;
}

/** Fields ignored per key, route and field (positions left out: `body.contacts[].phone_number`), for the dashboard (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`"). */
export interface IgnoredFieldsTable {
  org_id: string;
  key_id: string;
  route: string;
  field: string;
  count: number;
  first_seen_at: string;
  last_seen_at: string;
}

export interface Database {
  audit_log: AuditLogTable;
  organizations: OrganizationsTable;
  tms_integrations: TmsIntegrationsTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  customers: CustomersTable;
  carriers: CarriersTable;
  carrier_contacts: CarrierContactsTable;
  locations: LocationsTable;
  loads: LoadsTable;
  load_stops: LoadStopsTable;
  load_rates: LoadRatesTable;
  lane_history: LaneHistoryTable;
  lane_stats: LaneStatsTable;
  lane_carriers: LaneCarriersTable;
  market_rate_snapshots: MarketRateSnapshotsTable;
  load_status_counts: LoadStatusCountsTable;
  dashboard_sessions: DashboardSessionsTable;
  org_versions: OrgVersionsTable;
  events: EventsTable;
  recommendation_watch: RecommendationWatchTable;
  dashboard_settings: DashboardSettingsTable;
  idempotency_keys: IdempotencyKeysTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  tracking_events: TrackingEventsTable;
  imports: ImportsTable;
  import_errors: ImportErrorsTable;
  api_usage_hourly: ApiUsageHourlyTable;
  failed_writes: FailedWritesTable;
  ignored_fields: IgnoredFieldsTable;
}
