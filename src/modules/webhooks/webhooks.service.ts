import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import { randomUUID } from 'node:crypto';
import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { DetailError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { pagination, parseSort } from '../../lib/http/pagination.js';
import { EVENT_TYPES } from '../events/events.schema.js';
import { newSecret } from './signing.js';
import { urlProblem, type Resolver } from './url-policy.js';
import {
  attemptsOfDeliveries,
  countEndpointsLocked,
  deleteEndpoint,
  eventRefsBetween,
  eventRefsById,
  findDelivery,
  findEndpoint,
  insertDeliveries,
  insertEndpoint,
  lastDeliveries,
  lastSequence,
  lockEndpoint,
  pageOfAttempts,
  pageOfDeliveries,
  pageOfEndpoints,
  pendingReplayDeliveries,
  queueFigures,
  type AttemptRow,
  type DeliveryRow,
  type EndpointRow,
  updateEndpoint,
  type EventRef,
} from './webhooks.repo.js';
import {
  MAX_REPLAY_EVENTS,
  type WebhookAttempt,
  type WebhookAttemptListQuery,
  type WebhookDelivery,
  type WebhookDeliveryListQuery,
  type WebhookEndpoint,
  type WebhookEndpointCreate,
  type WebhookEndpointListQuery,
  type WebhookEndpointUpdate,
  type WebhookEndpointWithSecret,
  type WebhookReplay,
} from './webhooks.schema.js';
import { disableEndpoint, pendingDelivery, webhookId, type DeliveryWorker, type DisabledReason } from './webhooks.worker.js';

/** The previous secret (docs/webhooks.md, "Rotating the secret") signs beside the new one this long after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** What "Send test event" sends: not an event of the feed (sequence 0, never used by one). */
export const TEST_EVENT_TYPE = 'webhook.test';
/** Endpoints an organization may have (WEBHOOK_MAX_ENDPOINTS), enabled or not. */
export const DEFAULT_MAX_ENDPOINTS = 20;

export class WebhookEndpointNotFoundError extends DetailError {
  constructor(id: string) {
    super('not_found', `Webhook endpoint with id '${id}' not found`);
  }
}

/** 409: the organization already has as many endpoints as it may. */
export class WebhookEndpointLimitError extends DetailError {
  constructor(max: number) {
    super('conflict', `This organization already has ${max} webhook endpoints, the most it may have (WEBHOOK_MAX_ENDPOINTS); delete one before adding another`);
  }
}

/** 409: a replay of this endpoint still has deliveries pending. */
export class ReplayRunningError extends DetailError {
  constructor(pending: number) {
    super('conflict', `A replay of this endpoint is still running (${pending} of its deliveries pending); replay again once it has finished`);
  }
}

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

function toEndpoint(row: EndpointRow): WebhookEndpoint {
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

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    sequence: row.sequence,
    attempt: row.attempt,
    status: row.status,
    response_status: row.response_status,
    duration_ms: row.duration_ms,
    error: row.error,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
  };
}

function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    event_id: row.event_id,
    event_type: row.event_type,
    sequence: row.sequence,
    attempt: row.attempt,
    status: row.status as WebhookAttempt['status'],
    response_status: row.response_status,
    duration_ms: row.duration_ms,
    error: row.error,
    response_body: row.response_body,
    next_attempt_at: row.next_attempt_at,
    created_at: row.created_at,
  };
}

/** Event types in the feed's order, each once. */
const canonicalTypes = (types: readonly string[]) => JSON.stringify(EVENT_TYPES.filter((t) => types.includes(t)));

/** Whether a PUT changes the endpoint: one of what is stored writes nothing, no audit entry (docs/webhooks.md). */
const changesEndpoint = (ep: EndpointRow, body: WebhookEndpointUpdate): boolean =>
  (body.url !== undefined && body.url !== ep.url) ||
  (body.event_types !== undefined && canonicalTypes(body.event_types) !== ep.event_types) ||
  (body.description !== undefined && body.description !== ep.description) ||
  (body.status !== undefined && body.status !== ep.status);

/**
 * The webhook endpoints (docs/webhooks.md): create (the secret shown once), list, get, update, delete,
 * rotate the secret, the delivery log, replay, and the dashboard's test event. Deliveries are the
 * worker's.
 */
export function webhooksService(deps: {
  db: Executor;
  clock: Clock;
  allowInsecure: boolean;
  leaseMs: number;
  worker: DeliveryWorker;
  resolve?: Resolver;
  maxEndpoints?: number;
}) {
  const { db, clock, worker } = deps;
  const maxEndpoints = deps.maxEndpoints ?? DEFAULT_MAX_ENDPOINTS;
  const now = () => toIso(clock.now());

  async function checkUrl(url: string): Promise<void> {
    const problem = await urlProblem(url, { allowInsecure: deps.allowInsecure, ...(deps.resolve ? { resolve: deps.resolve } : {}) });
    if (problem) throw ValidationError.single(['body', 'url'], problem);
  }

  async function endpoint(orgId: string, id: string): Promise<EndpointRow> {
    const row = await findEndpoint(db, orgId, id);
    if (!row) throw new WebhookEndpointNotFoundError(id);
    return row;
  }

  const deliveryRow = pendingDelivery;

  async function deliveries(orgId: string, id: string, query: WebhookDeliveryListQuery) {
    await endpoint(orgId, id);
    const { rows, total } = await pageOfDeliveries(db, id, {
      offset: (query.page - 1) * query.page_size,
      limit: query.page_size,
      status: query.status,
      createdSince: query.created_since,
      updatedSince: query.updated_since,
    });
    return { items: rows.map(toDelivery), pagination: pagination(query.page, query.page_size, total) };
  }

  return {
    async create(orgId: string, body: WebhookEndpointCreate, actor: AuditActor = cliActor()): Promise<WebhookEndpointWithSecret> {
      await checkUrl(body.url);
      const at = clock.now();
      const row: EndpointRow = {
        id: webhookId('whe', at.getTime()),
        org_id: orgId,
        url: body.url,
        event_types: body.event_types ? canonicalTypes(body.event_types) : null,
        description: body.description ?? null,
        status: 'enabled',
        disabled_reason: null,
        disabled_at: null,
        secret: newSecret(),
        previous_secret: null,
        previous_secret_until: null,
        // Events committed from now on are delivered (earlier ones: replay).
        enqueued_through: await lastSequence(db, orgId),
        failing_since: null,
        created_at: toIso(at),
        updated_at: toIso(at),
      };
      await db.transaction().execute(async (tx) => {
        if ((await countEndpointsLocked(tx, orgId)) >= maxEndpoints) throw new WebhookEndpointLimitError(maxEndpoints);
        await insertEndpoint(tx, row);
        await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.created', { type: 'webhook_endpoint', id: row.id });
      });
      worker.watch(orgId);
      return { ...toEndpoint(row), secret: row.secret };
    },

    async list(orgId: string, query: WebhookEndpointListQuery) {
      const { field, direction } = parseSort(query.sort);
      const { rows, total } = await pageOfEndpoints(db, orgId, {
        offset: (query.page - 1) * query.page_size,
        limit: query.page_size,
        sort: field === 'updated_at' ? 'updated_at' : 'created_at',
        direction,
        createdSince: query.created_since,
        updatedSince: query.updated_since,
      });
      return { items: rows.map(toEndpoint), pagination: pagination(query.page, query.page_size, total) };
    },

    async get(orgId: string, id: string): Promise<WebhookEndpoint> {
      return toEndpoint(await endpoint(orgId, id));
    },

    async update(orgId: string, id: string, body: WebhookEndpointUpdate, actor: AuditActor = cliActor()): Promise<WebhookEndpoint> {
      const ep = await endpoint(orgId, id);
      if (body.url !== undefined && body.url !== ep.url) await checkUrl(body.url);
      if (!changesEndpoint(ep, body)) return toEndpoint(ep);
      const at = now();
      await db.transaction().execute(async (tx) => {
        const patch: Partial<EndpointRow> = { updated_at: at };
        if (body.url !== undefined) patch.url = body.url;
        if (body.event_types !== undefined) patch.event_types = canonicalTypes(body.event_types);
        if (body.description !== undefined) patch.description = body.description;
        if (body.status === 'enabled' && ep.status !== 'enabled') {
          // Resumes with the events committed from now on; what was missed can be replayed.
          Object.assign(patch, {
            status: 'enabled',
            disabled_reason: null,
            disabled_at: null,
            failing_since: null,
            enqueued_through: await lastSequence(tx, orgId),
          });
        }
        await updateEndpoint(tx, orgId, id, patch);
        if (body.status === 'disabled' && ep.status !== 'disabled') await disableEndpoint(tx, id, 'manual', at);
        await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.updated', { type: 'webhook_endpoint', id });
      });
      if (body.status === 'enabled') worker.watch(orgId);
      // Its attempt in flight is cut and its slot freed now, not when the attempt ends.
      if (body.status === 'disabled') worker.endpointRemoved(id);
      return toEndpoint(await endpoint(orgId, id));
    },

    async remove(orgId: string, id: string, actor: AuditActor = cliActor()): Promise<void> {
      const deleted = await db.transaction().execute(async (tx) => {
        const gone = await deleteEndpoint(tx, orgId, id);
        if (gone) await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.deleted', { type: 'webhook_endpoint', id });
        return gone;
      });
      if (!deleted) throw new WebhookEndpointNotFoundError(id);
      worker.endpointRemoved(id);
    },

    /** A new secret; the current one keeps signing beside it for 24 h (a second rotation drops the oldest). */
    async rotateSecret(orgId: string, id: string, actor: AuditActor = cliActor()): Promise<{ secret: string }> {
      const ep = await endpoint(orgId, id);
      const at = clock.now();
      const secret = newSecret();
      await db.transaction().execute(async (tx) => {
        await updateEndpoint(tx, orgId, id, {
          secret,
          previous_secret: ep.secret,
          previous_secret_until: toIso(new Date(at.getTime() + SECRET_OVERLAP_MS)),
          updated_at: toIso(at),
        });
        await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.secret_rotated', { type: 'webhook_endpoint', id });
      });
      return { secret };
    },

    deliveries,

    /** Every attempt made to the endpoint, newest first (optionally one delivery's or one event's). */
    async attempts(orgId: string, id: string, query: WebhookAttemptListQuery) {
      await endpoint(orgId, id);
      const { rows, total } = await pageOfAttempts(db, id, {
        offset: (query.page - 1) * query.page_size,
        limit: query.page_size,
        deliveryId: query.delivery_id,
        eventId: query.event_id,
        createdSince: query.created_since,
      });
      return { items: rows.map(toAttempt), pagination: pagination(query.page, query.page_size, total) };
    },

    /** The dashboard's log: a page of deliveries, newest first, each with its attempts, newest first. */
    async deliveryLog(orgId: string, id: string, query: WebhookDeliveryListQuery) {
      const page = await deliveries(orgId, id, query);
      const attempts = await attemptsOfDeliveries(
        db,
        page.items.map((d) => d.id),
      );
      const byDelivery = new Map<string, WebhookAttempt[]>();
      for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), toAttempt(a)]);
      return { items: page.items.map((d): DeliveryWithAttempts => ({ ...d, attempts: byDelivery.get(d.id) ?? [] })), pagination: page.pagination };
    },

    /**
     * Queues the endpoint's events again: those after `after_sequence` that it was already given (at most
     * MAX_REPLAY_EVENTS, oldest first), or the named ones. Only its event types; the same webhook-id.
     * One replay runs per endpoint at a time: while deliveries an earlier one queued are pending, 409.
     */
    async replay(orgId: string, id: string, body: WebhookReplay, actor: AuditActor = cliActor()): Promise<{ queued: number }> {
      const ep = await endpoint(orgId, id);
      const hasAfter = body.after_sequence !== undefined;
      const hasIds = body.event_ids !== undefined;
      if (hasAfter === hasIds) throw ValidationError.single(['body'], 'Send exactly one of after_sequence and event_ids');
      const types = ep.event_types ? (JSON.parse(ep.event_types) as string[]) : null;
      let events: EventRef[];
      if (hasAfter) {
        events = await eventRefsBetween(db, orgId, body.after_sequence!, ep.enqueued_through, types, MAX_REPLAY_EVENTS);
      } else {
        const ids = [...new Set(body.event_ids!)];
        const found = await eventRefsById(db, orgId, ids);
        const known = new Set(found.map((e) => e.id));
        const issues: ValidationIssue[] = body.event_ids!.flatMap((eid, i) =>
          known.has(eid)
            ? []
            : [{ type: 'value_error', loc: ['body', 'event_ids', i], msg: `Event '${eid}' not found (unknown, of another organization, or no longer kept)` }],
        );
        if (issues.length > 0) throw new ValidationError(issues);
        events = found.filter((e) => !types || types.includes(e.type));
      }
      const at = clock.now();
      const replayId = webhookId('whr', at.getTime());
      await db.transaction().execute(async (tx) => {
        // The endpoint's row locked (PostgreSQL): two replays at once see each other's deliveries.
        if (!(await lockEndpoint(tx, orgId, id))) throw new WebhookEndpointNotFoundError(id);
        const pending = await pendingReplayDeliveries(tx, id);
        if (pending > 0) throw new ReplayRunningError(pending);
        await insertDeliveries(
          tx,
          events.map((e) => deliveryRow(ep, e, at, replayId)),
        );
        await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.replayed', { type: 'webhook_endpoint', id });
      });
      if (events.length > 0) worker.wake(orgId);
      return { queued: events.length };
    },

    /**
     * "Send test event" (dashboard): a `webhook.test` envelope signed as every delivery, sent once now
     * (no retries), recorded in the delivery log. Returns the delivery as recorded.
     */
    async sendTestEvent(orgId: string, id: string): Promise<WebhookDelivery> {
      const ep = await endpoint(orgId, id);
      const at = clock.now();
      const eventId = newId('evt', at.getTime());
      const payload = JSON.stringify({
        id: eventId,
        type: TEST_EVENT_TYPE,
        sequence: 0,
        timestamp: toIso(at),
        data: { endpoint_id: ep.id, message: 'A test event from Lanebridge: if its signature verifies, this endpoint is ready.' },
      });
      const claim = randomUUID();
      const row: DeliveryRow = {
        ...deliveryRow(ep, { id: eventId, type: TEST_EVENT_TYPE, sequence: 0 }, at),
        payload,
        claim,
        leased_until: toIso(new Date(at.getTime() + deps.leaseMs)),
      };
      await insertDeliveries(db, [row]);
      await worker.sendNow(row.id, claim);
      const after = await findDelivery(db, ep.id, row.id);
      return toDelivery(after ?? row);
    },

    /** The dashboard's list: every endpoint (at most 100) with why it is disabled and its last delivery. */
    async overview(orgId: string): Promise<EndpointOverview[]> {
      const { rows } = await pageOfEndpoints(db, orgId, { offset: 0, limit: 100, sort: 'created_at', direction: 'asc' });
      const last = await lastDeliveries(
        db,
        rows.map((r) => r.id),
      );
      return rows.map((r) => overviewOf(r, last.get(r.id)));
    },

    async detail(orgId: string, id: string): Promise<EndpointOverview> {
      const row = await endpoint(orgId, id);
      const last = await lastDeliveries(db, [row.id]);
      return overviewOf(row, last.get(row.id));
    },

    /** Pending deliveries (all organizations) and the age of the oldest, in seconds (/metrics). */
    async queue(): Promise<{ pending: number; oldestAgeSeconds: number }> {
      const { pending, oldest } = await queueFigures(db);
      return { pending, oldestAgeSeconds: oldest ? Math.max(0, (clock.now().getTime() - Date.parse(oldest)) / 1000) : 0 };
    },
  };

  function overviewOf(r: EndpointRow, last: DeliveryRow | undefined): EndpointOverview {
    return {
      ...toEndpoint(r),
      disabled_reason: r.status === 'disabled' ? ((r.disabled_reason as DisabledReason | null) ?? 'manual') : null,
      disabled_at: r.status === 'disabled' ? r.disabled_at : null,
      previous_secret_until: r.previous_secret_until && r.previous_secret_until > toIso(clock.now()) ? r.previous_secret_until : null,
      last_delivery: last ? toDelivery(last) : null,
    };
  }
}

export type WebhooksService = ReturnType<typeof webhooksService>;
