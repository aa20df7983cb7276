import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import { DetailError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import type { Executor } from '../../lib/db/index.js';
import { eventRefsBetween, eventRefsById, insertDeliveries, lockEndpoint, pendingReplayDeliveries, type EndpointRow, type EventRef } from './webhooks.repo.js';
import { MAX_REPLAY_EVENTS, type WebhookReplay } from './webhooks.schema.js';
import { pendingDelivery, webhookId } from './webhooks.outbox.js';
import { requireEndpoint, WebhookEndpointNotFoundError, type ServiceContext } from './endpoints.js';

/** 409: a replay of this endpoint still has deliveries pending. */
export class ReplayRunningError extends DetailError {
  constructor(pending: number) {
    super('conflict', `A replay of this endpoint is still running (${pending} of its deliveries pending); replay again once it has finished`);
  }
}

/** The events a replay names: after a sequence (up to what the endpoint was given), or by id (422 names any unknown one). */
async function replayedEvents(db: Executor, orgId: string, ep: EndpointRow, body: WebhookReplay): Promise<EventRef[]> {
  const hasAfter = body.after_sequence !== undefined;
  const hasIds = body.event_ids !== undefined;
  if (hasAfter === hasIds) throw ValidationError.single(['body'], 'Send exactly one of after_sequence and event_ids');
  const types = ep.event_types ? (JSON.parse(ep.event_types) as string[]) : null;
  if (hasAfter) return eventRefsBetween(db, orgId, body.after_sequence!, ep.enqueued_through, types, MAX_REPLAY_EVENTS);
  const ids = [...new Set(body.event_ids!)];
  const found = await eventRefsById(db, orgId, ids);
  const known = new Set(found.map((e) => e.id));
  const issues: ValidationIssue[] = body.event_ids!.flatMap((eid, i) =>
    known.has(eid)
      ? []
      : [{ type: 'value_error', loc: ['body', 'event_ids', i], msg: `Event '${eid}' not found (unknown, of another organization, or no longer kept)` }],
  );
  if (issues.length > 0) throw new ValidationError(issues);
  return found.filter((e) => !types || types.includes(e.type));
}

/**
 * Queues the endpoint's events again: those after `after_sequence` that it was already given (at most
 * MAX_REPLAY_EVENTS, oldest first), or the named ones. Only its event types; the same webhook-id.
 * One replay runs per endpoint at a time: while deliveries an earlier one queued are pending, 409.
 */
export async function replay(ctx: ServiceContext, orgId: string, id: string, body: WebhookReplay, actor: AuditActor = cliActor()): Promise<{ queued: number }> {
  const { db, clock } = ctx;
  const ep = await requireEndpoint(ctx, orgId, id);
  const events = await replayedEvents(db, orgId, ep, body);
  const at = clock.now();
  const replayId = webhookId('whr', at.getTime());
  await db.transaction().execute(async (tx) => {
    // The endpoint's row locked (PostgreSQL): two replays at once see each other's deliveries.
    if (!(await lockEndpoint(tx, orgId, id))) throw new WebhookEndpointNotFoundError(id);
    const pending = await pendingReplayDeliveries(tx, id);
    if (pending > 0) throw new ReplayRunningError(pending);
    await insertDeliveries(
      tx,
      events.map((e) => pendingDelivery(ep, e, at, replayId)),
    );
    await recordAudit(tx, clock, orgId, actor, 'webhook_endpoint.replayed', { type: 'webhook_endpoint', id });
  });
  if (events.length > 0) ctx.worker.wake(orgId);
  return { queued: events.length };
}
