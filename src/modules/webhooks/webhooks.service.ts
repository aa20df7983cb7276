import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import { randomUUID } from 'node:crypto';
import type { Executor } from '../../lib/db/index.js';
import { toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { DetailError, ValidationError } from '../../lib/http/errors.js';
import { pagination, parseSort } from '../../lib/http/pagination.js';
import { EVENT_TYPES } from '../events/events.schema.js';
import { newSecret } from './signing.js';
import { urlProblem } from './url-policy.js';
import {
  attemptsOfDeliveries,
  countEndpointsLocked,
  deleteEndpoint,
  findDelivery,
  insertDeliveries,
  insertEndpoint,
  lastDeliveries,
  lastSequence,
  pageOfAttempts,
  pageOfDeliveries,
  pageOfEndpoints,
  queueFigures,
  type DeliveryRow,
  type EndpointRow,
  updateEndpoint,
} from './webhooks.repo.js';
import type {
  WebhookAttempt,
  WebhookAttemptListQuery,
  WebhookDelivery,
  WebhookDeliveryListQuery,
  WebhookEndpoint,
  WebhookEndpointCreate,
  WebhookEndpointListQuery,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
  WebhookReplay,
} from './webhooks.schema.js';
import { disableEndpoint, pendingDelivery, webhookId } from './webhooks.worker.js';
import { DEFAULT_MAX_ENDPOINTS, requireEndpoint, WebhookEndpointNotFoundError, type ServiceContext } from './endpoints.js';
import { overviewOf, toAttempt, toDelivery, toEndpoint, type DeliveryWithAttempts, type EndpointOverview } from './webhook-views.js';
import { replay } from './replay.js';

export { DEFAULT_MAX_ENDPOINTS, WebhookEndpointNotFoundError, type ServiceContext } from './endpoints.js';
export { ReplayRunningError } from './replay.js';
export type { DeliveryWithAttempts, EndpointOverview } from './webhook-views.js';

/** The previous secret (docs/webhooks.md, "Rotating the secret") signs beside the new one this long after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** What "Send test event" sends: not an event of the feed (sequence 0, never used by one). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** 409: the organization already has as many endpoints as it may. */
export class WebhookEndpointLimitError extends DetailError {
  constructor(max: number) {
    super('conflict', `This organization already has ${max} webhook endpoints, the most it may have (WEBHOOK_MAX_ENDPOINTS); delete one before adding another`);
  }
}

/** Event types in the feed's order, each once. */
const canonicalTypes = (types: readonly string[]) => JSON.stringify(EVENT_TYPES.filter((t) => types.includes(t)));

/** Whether a PUT changes the endpoint: one of what is stored writes nothing, no audit entry (docs/webhooks.md). */
const changesEndpoint = (ep: EndpointRow, body: WebhookEndpointUpdate): boolean =>
  (body.url !== undefined && body.url !== ep.url) ||
  (body.event_types !== undefined && canonicalTypes(body.event_types) !== ep.event_types) ||
  (body.description !== undefined && body.description !== ep.description) ||
  (body.status !== undefined && body.status !== ep.status);

async function checkUrl(ctx: ServiceContext, url: string): Promise<void> {
  const problem = await urlProblem(url, { allowInsecure: ctx.allowInsecure, ...(ctx.resolve ? { resolve: ctx.resolve } : {}) });
  if (problem) throw ValidationError.single(['body', 'url'], problem);
}

/** A new endpoint, its secret shown once (docs/webhooks.md, "Endpoints: `/v2/tms-api/webhook-endpoints` (scope `write:webhooks`)"); 409 past the organization's limit. */
async function createEndpoint(
  ctx: ServiceContext,
  orgId: string,
  body: WebhookEndpointCreate,
  actor: AuditActor = cliActor(),
): Promise<WebhookEndpointWithSecret> {
  const { db, clock } = ctx;
  const maxEndpoints = ctx.maxEndpoints ?? DEFAULT_MAX_ENDPOINTS;
  await checkUrl(ctx, body.url);
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
  ctx.worker.watch(orgId);
  return { ...toEndpoint(row), secret: row.secret };
}

async function listEndpoints(ctx: ServiceContext, orgId: string, query: WebhookEndpointListQuery) {
  const { field, direction } = parseSort(query.sort);
  const { rows, total } = await pageOfEndpoints(ctx.db, orgId, {
    offset: (query.page - 1) * query.page_size,
    limit: query.page_size,
    sort: field === 'updated_at' ? 'updated_at' : 'created_at',
    direction,
    createdSince: query.created_since,
    updatedSince: query.updated_since,
  });
  return { items: rows.map(toEndpoint), pagination: pagination(query.page, query.page_size, total) };
}

/** The columns a PUT changes; enabling resumes with the events committed from now on (what was missed can be replayed). */
async function endpointPatch(tx: Executor, orgId: string, ep: EndpointRow, body: WebhookEndpointUpdate, at: string): Promise<Partial<EndpointRow>> {
  const patch: Partial<EndpointRow> = { updated_at: at };
  if (body.url !== undefined) patch.url = body.url;
  if (body.event_types !== undefined) patch.event_types = canonicalTypes(body.event_types);
  if (body.description !== undefined) patch.description = body.description;
  if (body.status === 'enabled' && ep.status !== 'enabled') {
    Object.assign(patch, {
      status: 'enabled',
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
      enqueued_through: await lastSequence(tx, orgId),
    });
  }
  return patch;
}

async function changeEndpoint(
  ctx: ServiceContext,
  orgId: string,
  id: string,
  body: WebhookEndpointUpdate,
  actor: AuditActor = cliActor(),
): Promise<WebhookEndpoint> {
  const { db, clock, worker } = ctx;
  const ep = await requireEndpoint(ctx, orgId, id);
  if (body.url !== undefined && body.url !== ep.url) await checkUrl(ctx, body.url);
  if (!changesEndpoint(ep, body)) return toEndpoint(ep);
  const at = toIso(clock.now());
  await db.transaction().execute(async (tx) => {
    await updateEndpoint(tx, orgId, id, await endpointPatch(tx, orgId, ep, body, at));
    if (body.status === 'disabled' && ep.status !== 'disabled') await disableEndpoint(tx, id, 'manual', at);
    await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.updated', { type: 'webhook_endpoint', id });
  });
  if (body.status === 'enabled') worker.watch(orgId);
  // Its attempt in flight is cut and its slot freed now, not when the attempt ends.
  if (body.status === 'disabled') worker.endpointRemoved(id);
  return toEndpoint(await requireEndpoint(ctx, orgId, id));
}

async function removeEndpoint(ctx: ServiceContext, orgId: string, id: string, actor: AuditActor = cliActor()): Promise<void> {
  const { clock } = ctx;
  const deleted = await ctx.db.transaction().execute(async (tx) => {
    const gone = await deleteEndpoint(tx, orgId, id);
    if (gone) await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.deleted', { type: 'webhook_endpoint', id });
    return gone;
  });
  if (!deleted) throw new WebhookEndpointNotFoundError(id);
  ctx.worker.endpointRemoved(id);
}

/** A new secret; the current one keeps signing beside it for 24 h (a second rotation drops the oldest). */
async function rotateSecret(ctx: ServiceContext, orgId: string, id: string, actor: AuditActor = cliActor()): Promise<{ secret: string }> {
  const { clock } = ctx;
  const ep = await requireEndpoint(ctx, orgId, id);
  const at = clock.now();
  const secret = newSecret();
  await ctx.db.transaction().execute(async (tx) => {
    await updateEndpoint(tx, orgId, id, {
      secret,
      previous_secret: ep.secret,
      previous_secret_until: toIso(new Date(at.getTime() + SECRET_OVERLAP_MS)),
      updated_at: toIso(at),
    });
    await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.secret_rotated', { type: 'webhook_endpoint', id });
  });
  return { secret };
}

/** A page of the endpoint's log (deliveries or attempts, newest first); 404 for an endpoint not of the organization. */
async function logPage<Row, Item>(
  ctx: ServiceContext,
  orgId: string,
  id: string,
  query: { page: number; page_size: number },
  read: (offset: number, limit: number) => Promise<{ rows: Row[]; total: number }>,
  toItem: (row: Row) => Item,
) {
  await requireEndpoint(ctx, orgId, id);
  const { rows, total } = await read((query.page - 1) * query.page_size, query.page_size);
  return { items: rows.map((row) => toItem(row)), pagination: pagination(query.page, query.page_size, total) };
}

function listDeliveries(ctx: ServiceContext, orgId: string, id: string, query: WebhookDeliveryListQuery) {
  const filters = { status: query.status, createdSince: query.created_since, updatedSince: query.updated_since };
  return logPage(ctx, orgId, id, query, (offset, limit) => pageOfDeliveries(ctx.db, id, { offset, limit, ...filters }), toDelivery);
}

/** Every attempt made to the endpoint, newest first (optionally one delivery's or one event's). */
function listAttempts(ctx: ServiceContext, orgId: string, id: string, query: WebhookAttemptListQuery) {
  const filters = { deliveryId: query.delivery_id, eventId: query.event_id, createdSince: query.created_since };
  return logPage(ctx, orgId, id, query, (offset, limit) => pageOfAttempts(ctx.db, id, { offset, limit, ...filters }), toAttempt);
}

/** The dashboard's log: a page of deliveries, newest first, each with its attempts, newest first. */
async function deliveryLog(ctx: ServiceContext, orgId: string, id: string, query: WebhookDeliveryListQuery) {
  const page = await listDeliveries(ctx, orgId, id, query);
  const attempts = await attemptsOfDeliveries(
    ctx.db,
    page.items.map((d) => d.id),
  );
  const byDelivery = new Map<string, WebhookAttempt[]>();
  for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), toAttempt(a)]);
  return { items: page.items.map((d): DeliveryWithAttempts => ({ ...d, attempts: byDelivery.get(d.id) ?? [] })), pagination: page.pagination };
}

/**
 * "Send test event" (dashboard): a `webhook.test` envelope signed as every delivery, sent once now
 * (no retries), recorded in the delivery log. Returns the delivery as recorded.
 */
async function sendTestEvent(ctx: ServiceContext, orgId: string, id: string): Promise<WebhookDelivery> {
  const { db } = ctx;
  const ep = await requireEndpoint(ctx, orgId, id);
  const at = ctx.clock.now();
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
    ...pendingDelivery(ep, { id: eventId, type: TEST_EVENT_TYPE, sequence: 0 }, at),
    payload,
    claim,
    leased_until: toIso(new Date(at.getTime() + ctx.leaseMs)),
  };
  await insertDeliveries(db, [row]);
  await ctx.worker.sendNow(row.id, claim);
  const after = await findDelivery(db, ep.id, row.id);
  return toDelivery(after ?? row);
}

/** The dashboard's list: every endpoint (at most 100) with why it is disabled and its last delivery. */
async function overview(ctx: ServiceContext, orgId: string): Promise<EndpointOverview[]> {
  const { rows } = await pageOfEndpoints(ctx.db, orgId, { offset: 0, limit: 100, sort: 'created_at', direction: 'asc' });
  const last = await lastDeliveries(
    ctx.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => overviewOf(r, last.get(r.id), ctx.clock));
}

async function detail(ctx: ServiceContext, orgId: string, id: string): Promise<EndpointOverview> {
  const row = await requireEndpoint(ctx, orgId, id);
  const last = await lastDeliveries(ctx.db, [row.id]);
  return overviewOf(row, last.get(row.id), ctx.clock);
}

/** Pending deliveries (all organizations) and the age of the oldest, in seconds (/metrics). */
async function queue(ctx: ServiceContext): Promise<{ pending: number; oldestAgeSeconds: number }> {
  const { pending, oldest } = await queueFigures(ctx.db);
  return { pending, oldestAgeSeconds: oldest ? Math.max(0, (ctx.clock.now().getTime() - Date.parse(oldest)) / 1000) : 0 };
}

/**
 * The webhook endpoints (docs/webhooks.md): create (the secret shown once), list, get, update, delete,
 * rotate the secret, the delivery log, replay (replay.ts), and the dashboard's test event. Deliveries
 * are the worker's. Each action is a function above over the service's dependencies.
 */
export function webhooksService(deps: ServiceContext) {
  return {
    create: (orgId: string, body: WebhookEndpointCreate, actor?: AuditActor) => createEndpoint(deps, orgId, body, actor),
    list: (orgId: string, query: WebhookEndpointListQuery) => listEndpoints(deps, orgId, query),
    get: async (orgId: string, id: string): Promise<WebhookEndpoint> => toEndpoint(await requireEndpoint(deps, orgId, id)),
    update: (orgId: string, id: string, body: WebhookEndpointUpdate, actor?: AuditActor) => changeEndpoint(deps, orgId, id, body, actor),
    remove: (orgId: string, id: string, actor?: AuditActor) => removeEndpoint(deps, orgId, id, actor),
    rotateSecret: (orgId: string, id: string, actor?: AuditActor) => rotateSecret(deps, orgId, id, actor),
    deliveries: (orgId: string, id: string, query: WebhookDeliveryListQuery) => listDeliveries(deps, orgId, id, query),
    attempts: (orgId: string, id: string, query: WebhookAttemptListQuery) => listAttempts(deps, orgId, id, query),
    deliveryLog: (orgId: string, id: string, query: WebhookDeliveryListQuery) => deliveryLog(deps, orgId, id, query),
    replay: (orgId: string, id: string, body: WebhookReplay, actor?: AuditActor) => replay(deps, orgId, id, body, actor),
    sendTestEvent: (orgId: string, id: string) => sendTestEvent(deps, orgId, id),
    overview: (orgId: string) => overview(deps, orgId),
    detail: (orgId: string, id: string) => detail(deps, orgId, id),
    queue: () => queue(deps),
  };
}

export type WebhooksService = ReturnType<typeof webhooksService>;
