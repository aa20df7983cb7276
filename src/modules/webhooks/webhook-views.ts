import { type Clock, toIso } from '../../lib/clock.js';
import { EVENT_TYPES } from '../events/events.schema.js';
import type { AttemptRow, DeliveryRow, EndpointRow } from './webhooks.repo.js';
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from './webhooks.schema.js';
import type { DisabledReason } from './outcome.js';

/*
 * The rows of webhooks.repo.ts as the API and the dashboard show them (docs/webhooks.md).
 */

/** A delivery with its attempts, newest first (the dashboard's log, grouped by event). */
export interface DeliveryWithAttempts extends WebhookDelivery {
  attempts: WebhookAttempt[];
}

/** An endpoint as the dashboard shows it: the API's fields plus why it is disabled and its last delivery. */
export interface EndpointOverview extends WebhookEndpoint {
  disabled_reason: DisabledReason | null;
  disabled_at: string | null;
  /** When the previous secret stops signing (during a rotation), else null. */
  previous_secret_until: string | null;
  last_delivery: WebhookDelivery | null;
}

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    event_types: row.event_types ? (JSON.parse(row.event_types) as string[]) : [...EVENT_TYPES],
    description: row.description,
    status: row.status,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** What a delivery and an attempt both tell, in the order both list it. */
function outcomeOf(row: DeliveryRow | AttemptRow) {
  return {
    event_id: row.event_id,
    event_type: row.event_type,
    sequence: row.sequence,
    attempt: row.attempt,
    status: row.status,
    response_status: row.response_status,
    duration_ms: row.duration_ms,
    error: row.error,
  };
}

export function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    ...outcomeOf(row),
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
  };
}

export function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    ...outcomeOf(row),
    response_body: row.response_body,
    next_attempt_at: row.next_attempt_at,
    created_at: row.created_at,
  };
}

/** The dashboard's view of an endpoint and its last delivery. */
export function overviewOf(r: EndpointRow, last: DeliveryRow | undefined, clock: Clock): EndpointOverview {
  return {
    ...toEndpoint(r),
    disabled_reason: r.status === 'disabled' ? ((r.disabled_reason as DisabledReason | null) ?? 'manual') : null,
    disabled_at: r.status === 'disabled' ? r.disabled_at : null,
    previous_secret_until: r.previous_secret_until && r.previous_secret_until > toIso(clock.now()) ? r.previous_secret_until : null,
    last_delivery: last ? toDelivery(last) : null,
  };
}
