// Imports, and integration health (usage per hour, failed writes, ignored fields). Row shapes as stored (src/lib/db/types.ts).

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
