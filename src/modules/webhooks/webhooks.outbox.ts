import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import {
  endpointsBehind,
  eventRefsAfter,
  insertDeliveries,
  lockEndpointForEnqueue,
  moveCursor,
  orgsWithEnabledEndpoints,
  type DeliveryRow,
  type EndpointRow,
  type EventRef,
} from './webhooks.repo.js';

// Events read per enqueue transaction; a longer backlog takes several.
const ENQUEUE_WINDOW = 500;

/** The ids of this module (src/lib/ids.ts lists the others' kinds). */
export const webhookId = (kind: 'whe' | 'whd' | 'whr', now: number) => newId(kind, now);

/** A delivery of `e` to `ep`, due at once (the outbox's events and replays, which name themselves, enqueue these). */
export function pendingDelivery(
  ep: Pick<EndpointRow, 'id' | 'org_id'>,
  e: Pick<EventRef, 'id' | 'type' | 'sequence'>,
  at: Date,
  replayId: string | null = null,
): DeliveryRow {
  const iso = toIso(at);
  return {
    id: webhookId('whd', at.getTime()),
    org_id: ep.org_id,
    endpoint_id: ep.id,
    event_id: e.id,
    event_type: e.type,
    sequence: e.sequence,
    attempt: 0,
    status: 'pending',
    response_status: null,
    duration_ms: null,
    error: null,
    next_attempt_at: iso,
    claim: null,
    leased_until: null,
    payload: null,
    replay_id: replayId,
    created_at: iso,
    updated_at: iso,
  };
}

/** The event envelope (docs/events.md, "The request") as JSON text, from a stored event (its data is already JSON). */
export function envelopeOf(e: { id: string; type: string; sequence: number; created_at: string; data: string }): string {
  return `${JSON.stringify({ id: e.id, type: e.type, sequence: e.sequence, timestamp: e.created_at }).slice(0, -1)},"data":${e.data}}`;
}

/** Turns the endpoint's share of the outbox into deliveries, a window per transaction (the cursor moves with them). */
async function enqueueEndpoint(db: Executor, clock: Clock, endpointId: string): Promise<void> {
  for (;;) {
    const full = await db.transaction().execute(async (tx) => {
      const ep = await lockEndpointForEnqueue(tx, endpointId);
      if (!ep) return false;
      const events = await eventRefsAfter(tx, ep.org_id, ep.enqueued_through, ENQUEUE_WINDOW);
      if (events.length === 0) return false;
      const types = ep.event_types ? new Set(JSON.parse(ep.event_types) as string[]) : null;
      const at = clock.now();
      await insertDeliveries(
        tx,
        events.filter((e) => !types || types.has(e.type)).map((e) => pendingDelivery(ep, e, at)),
      );
      await moveCursor(tx, ep.id, events[events.length - 1]!.sequence);
      return events.length === ENQUEUE_WINDOW;
    });
    if (!full) return;
  }
}

/**
 * The outbox as the worker follows it: which organizations' new events are to be turned into
 * deliveries (those a commit here woke, or all of them at a poll), and which organizations have an
 * enabled endpoint at all (a commit of any other wakes nothing).
 */
export function outboxFollower(db: Executor, clock: Clock) {
  let watched = new Set<string>();
  let watchedRead = false;
  let pendingOrgs = new Set<string>();
  let pendingAll = false;
  return {
    /** Whether a commit of `orgId` may have events for an endpoint (unknown before the first read: yes). */
    concerns: (orgId: string) => !watchedRead || watched.has(orgId),
    /** An endpoint of `orgId` was created or enabled here. */
    watch: (orgId: string) => void watched.add(orgId),
    mark: (orgId: string) => void pendingOrgs.add(orgId),
    markAll: () => void (pendingAll = true),
    marked: () => pendingAll || pendingOrgs.size > 0,
    async refresh(): Promise<void> {
      watched = new Set(await orgsWithEnabledEndpoints(db));
      watchedRead = true;
    },
    /** Enqueues the marked organizations' endpoints that are behind (every one's when all are marked). */
    async enqueue(): Promise<void> {
      const all = pendingAll;
      const orgs = [...pendingOrgs];
      pendingAll = false;
      pendingOrgs = new Set();
      const behind = all ? await endpointsBehind(db, null) : (await Promise.all(orgs.map((o) => endpointsBehind(db, o)))).flat();
      for (const ep of behind) await enqueueEndpoint(db, clock, ep.id);
    },
  };
}
