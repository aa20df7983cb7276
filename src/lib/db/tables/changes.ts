// What a change leaves behind: the record counters, the change feed, Idempotency-Key claims, webhooks. Row shapes as stored (src/lib/db/types.ts).

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
