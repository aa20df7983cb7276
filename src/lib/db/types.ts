import type {
  OrganizationsTable,
  TmsIntegrationsTable,
  UsersTable,
  ApiKeysTable,
  DashboardSessionsTable,
  DashboardSettingsTable,
  AuditLogTable,
} from './tables/accounts.js';
import type { CustomersTable, CarriersTable, CarrierContactsTable, LocationsTable } from './tables/records.js';
import type { LoadsTable, TrackingEventsTable, LoadStopsTable, LoadRatesTable, LoadStatusCountsTable } from './tables/loads.js';
import type { LaneHistoryTable, LaneStatsTable, LaneCarriersTable, MarketRateSnapshotsTable, RecommendationWatchTable } from './tables/lanes.js';
import type {
  OrgVersionsTable,
  EventsTable,
  IdempotencyKeysTable,
  WebhookEndpointsTable,
  WebhookDeliveriesTable,
  WebhookAttemptsTable,
} from './tables/changes.js';
import type { ImportsTable, ImportErrorsTable, ApiUsageHourlyTable, FailedWritesTable, IgnoredFieldsTable } from './tables/operations.js';

// Row shapes as stored. Timestamps are ISO 8601 UTC text (same on both engines, sortable as strings);
// booleans are 0/1 integers (better-sqlite3 cannot bind JS booleans). One file per area in ./tables/.

export * from './tables/accounts.js';
export * from './tables/records.js';
export * from './tables/loads.js';
export * from './tables/lanes.js';
export * from './tables/changes.js';
export * from './tables/operations.js';

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
