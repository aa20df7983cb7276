import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { lockedRead, skipLockedOf } from '../../lib/db/locks.js';
import { deliveryOf, endpointOf, num, type DeliveryRow, type EndpointRow } from './webhooks.repo.js';

/*
 * The delivery worker's statements (docs/webhooks.md, "The worker"): due deliveries claimed under a
 * lease, read with their endpoint and event, the lease kept or given back. The endpoints, the outbox's
 * enqueueing and the log are in webhooks.repo.ts.
 */

/**
 * Due deliveries of enabled endpoints that the claim may take, oldest due first (at most `limit`),
 * leaving out the endpoints this process is sending to (`busy`) and the organizations at their share of
 * its slots (`fullOrgs`). Nothing is locked: `claimDeliveries` takes the ones chosen.
 */
export async function dueCandidates(
  db: Executor,
  q: { now: string; busy: readonly string[]; fullOrgs: readonly string[]; limit: number },
): Promise<{ id: string; endpoint_id: string; org_id: string }[]> {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select(['d.id', 'd.endpoint_id', 'd.org_id'])
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', q.now)
    .where((eb) => eb.or([eb('d.leased_until', 'is', null), eb('d.leased_until', '<=', q.now)]))
    .where('e.status', '=', 'enabled');
  if (q.busy.length > 0) query = query.where('d.endpoint_id', 'not in', [...q.busy]);
  if (q.fullOrgs.length > 0) query = query.where('d.org_id', 'not in', [...q.fullOrgs]);
  return query.orderBy('d.next_attempt_at').orderBy('d.sequence').limit(q.limit).execute();
}

/**
 * Claims those of `ids` that are still due and free: each gets `claim` and a lease until `leasedUntil`.
 * PostgreSQL skips rows another process is claiming (`FOR UPDATE SKIP LOCKED`); SQLite's writes are
 * serialized anyway. A lease that ends without an outcome (the process died) makes the delivery due
 * again. Returns the claimed ids.
 */
export async function claimDeliveries(db: Executor, q: { ids: readonly string[]; now: string; leasedUntil: string; claim: string }): Promise<string[]> {
  if (q.ids.length === 0) return [];
  const lock = skipLockedOf(db, 'd');
  const { rows } = await sql<{ id: string }>`
    with due as (
      select d.id from webhook_deliveries d
      where d.id in (${sql.join(q.ids)}) and d.status = 'pending' and d.next_attempt_at <= ${q.now}
        and (d.leased_until is null or d.leased_until <= ${q.now})
      ${lock}
    )
    update webhook_deliveries set claim = ${q.claim}, leased_until = ${q.leasedUntil}
    from due
    where webhook_deliveries.id = due.id
    returning webhook_deliveries.id as id`.execute(db);
  return rows.map((r) => r.id);
}

/** Of these endpoints, the ones that still exist and are enabled (a process cuts its chains to the others). */
export async function enabledEndpointIds(db: Executor, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('id', 'in', [...ids])
    .where('status', '=', 'enabled')
    .execute();
  return rows.map((r) => r.id);
}

export interface ClaimedDelivery {
  delivery: DeliveryRow;
  endpoint: EndpointRow;
  /** The event as stored (null when retention pruned it). */
  event: { id: string; type: string; sequence: number; created_at: string; data: string } | null;
}

/** The claimed deliveries with their endpoint and event, by sequence. */
export async function claimedDetails(db: Executor, ids: readonly string[]): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const deliveries = (
    await db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', 'in', [...ids])
      .orderBy('sequence')
      .execute()
  ).map(deliveryOf);
  const endpointIds = [...new Set(deliveries.map((d) => d.endpoint_id))];
  const endpoints = new Map((await db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', endpointIds).execute()).map((e) => [e.id, endpointOf(e)]));
  const events = new Map<string, ClaimedDelivery['event']>();
  for (const orgId of new Set(deliveries.filter((d) => d.payload === null).map((d) => d.org_id))) {
    const seqs = deliveries.filter((d) => d.org_id === orgId && d.payload === null).map((d) => d.sequence);
    const rows = await db
      .selectFrom('events')
      .select(['id', 'type', 'sequence', 'created_at', 'data'])
      .where('org_id', '=', orgId)
      .where('sequence', 'in', seqs)
      .execute();
    for (const r of rows) events.set(r.id, { ...r, sequence: num(r.sequence) });
  }
  return deliveries
    .filter((d) => endpoints.has(d.endpoint_id))
    .map((d) => ({ delivery: d, endpoint: endpoints.get(d.endpoint_id)!, event: events.get(d.event_id) ?? null }));
}

/** Keeps a claim (a long chain of one endpoint's deliveries): false when it was lost. */
export async function extendLease(db: Executor, id: string, claim: string, leasedUntil: string): Promise<boolean> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ leased_until: leasedUntil })
    .where('id', '=', id)
    .where('claim', '=', claim)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return num(r.numUpdatedRows) > 0;
}

/** The endpoint's failure state, locked to the end of the transaction on PostgreSQL. */
export async function endpointForUpdate(tx: Executor, id: string): Promise<Pick<EndpointRow, 'failing_since' | 'status'> | undefined> {
  const q = tx.selectFrom('webhook_endpoints').select(['failing_since', 'status']).where('id', '=', id);
  return lockedRead(tx, q).executeTakeFirst();
}

/** Gives a claim back without an attempt (the process is stopping). */
export async function releaseClaim(db: Executor, id: string, claim: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ claim: null, leased_until: null }).where('id', '=', id).where('claim', '=', claim).execute();
}

/** Whether some delivery of an enabled endpoint can be claimed now. */
export async function anyDue(db: Executor, now: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select('d.id')
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('d.leased_until', 'is', null), eb('d.leased_until', '<=', now)]))
    .where('e.status', '=', 'enabled')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
