import type { Executor } from '../../lib/db/index.js';
import { claimingRead, holdOrganization, lockedRead } from '../../lib/db/locks.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../lib/db/types.js';

export type EndpointRow = WebhookEndpointsTable;
export type DeliveryRow = WebhookDeliveriesTable;
export type AttemptRow = WebhookAttemptsTable;

// The numbers as numbers (PostgreSQL answers bigint columns as strings); claims.repo.ts reads rows too.
export const num = (v: unknown) => Number(v ?? 0);
export const endpointOf = (r: EndpointRow): EndpointRow => ({ ...r, enqueued_through: num(r.enqueued_through) });
export const deliveryOf = (r: DeliveryRow): DeliveryRow => ({ ...r, sequence: num(r.sequence), attempt: num(r.attempt) });
const attemptOf = (r: AttemptRow): AttemptRow => ({ ...r, sequence: num(r.sequence), attempt: num(r.attempt) });

// ------------------------------------------------------------------------------------------------
// Endpoints

/** The organization's last event sequence: where a new or re-enabled endpoint starts. */
export async function lastSequence(db: Executor, orgId: string): Promise<number> {
  const row = await db.selectFrom('org_versions').select('events').where('org_id', '=', orgId).executeTakeFirst();
  return num(row?.events);
}

export async function insertEndpoint(db: Executor, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

/** Changes the endpoint's columns in `patch` (an update, a secret rotation). */
export async function updateEndpoint(db: Executor, orgId: string, id: string, patch: Partial<EndpointRow>): Promise<void> {
  await db.updateTable('webhook_endpoints').set(patch).where('org_id', '=', orgId).where('id', '=', id).execute();
}

export async function findEndpoint(db: Executor, orgId: string, id: string): Promise<EndpointRow | undefined> {
  const row = await db.selectFrom('webhook_endpoints').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return row && endpointOf(row);
}

export async function pageOfEndpoints(
  db: Executor,
  orgId: string,
  q: {
    offset: number;
    limit: number;
    sort: 'created_at' | 'updated_at';
    direction: 'asc' | 'desc';
    createdSince?: string | undefined;
    updatedSince?: string | undefined;
  },
): Promise<{ rows: EndpointRow[]; total: number }> {
  let base = db.selectFrom('webhook_endpoints').where('org_id', '=', orgId);
  if (q.createdSince) base = base.where('created_at', '>=', q.createdSince);
  if (q.updatedSince) base = base.where('updated_at', '>=', q.updatedSince);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy(q.sort, q.direction).orderBy('id', q.direction).limit(q.limit).offset(q.offset).execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
  ]);
  return { rows: rows.map(endpointOf), total: num(count?.n) };
}

/**
 * Inside a transaction: how many endpoints the organization has, with the organization's row locked on
 * PostgreSQL until the transaction ends (two creates at once cannot both pass the limit; SQLite
 * serialises writers).
 */
export async function countEndpointsLocked(tx: Executor, orgId: string): Promise<number> {
  await holdOrganization(tx, orgId);
  const row = await tx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return num(row?.n);
}

/** Inside a transaction: the endpoint's row, locked on PostgreSQL until it ends (one replay at a time). */
export async function lockEndpoint(tx: Executor, orgId: string, id: string): Promise<EndpointRow | undefined> {
  const row = await lockedRead(tx, tx.selectFrom('webhook_endpoints').selectAll().where('org_id', '=', orgId).where('id', '=', id)).executeTakeFirst();
  return row && endpointOf(row);
}

/** The endpoint's running replay: how many of the deliveries a replay queued are still pending (0: none runs). */
export async function pendingReplayDeliveries(db: Executor, endpointId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .where('replay_id', 'is not', null)
    .executeTakeFirst();
  return num(row?.n);
}

export async function deleteEndpoint(db: Executor, orgId: string, id: string): Promise<boolean> {
  await db.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).where('org_id', '=', orgId).execute();
  await db.deleteFrom('webhook_deliveries').where('org_id', '=', orgId).where('endpoint_id', '=', id).execute();
  const r = await db.deleteFrom('webhook_endpoints').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();
  return num(r.numDeletedRows) > 0;
}

/** Fails the endpoint's pending deliveries (it was disabled). */
export async function failPending(db: Executor, endpointId: string, error: string, now: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', error, next_attempt_at: null, claim: null, leased_until: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

/** The last delivery of each of the endpoints (the dashboard's list). */
export async function lastDeliveries(db: Executor, endpointIds: readonly string[]): Promise<Map<string, DeliveryRow>> {
  const out = new Map<string, DeliveryRow>();
  for (const id of endpointIds) {
    const row = await db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', id)
      .orderBy('created_at', 'desc')
      .orderBy('sequence', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (row) out.set(id, deliveryOf(row));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Enqueueing from the outbox

/** The organizations with an enabled endpoint (the worker wakes only for their commits). */
export async function orgsWithEnabledEndpoints(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('webhook_endpoints').select('org_id').distinct().where('status', '=', 'enabled').execute();
  return rows.map((r) => r.org_id);
}

/** Enabled endpoints (of one organization, or all) whose cursor is behind their organization's last event. */
export async function endpointsBehind(db: Executor, orgId: string | null): Promise<{ id: string; org_id: string }[]> {
  let q = db
    .selectFrom('webhook_endpoints as e')
    .innerJoin('org_versions as v', 'v.org_id', 'e.org_id')
    .select(['e.id', 'e.org_id'])
    .where('e.status', '=', 'enabled')
    .whereRef('e.enqueued_through', '<', 'v.events');
  if (orgId) q = q.where('e.org_id', '=', orgId);
  return q.execute();
}

/**
 * Inside a transaction: the endpoint's row, locked (PostgreSQL: skipped when another process holds it,
 * which is enqueueing it right now), when enabled.
 */
export async function lockEndpointForEnqueue(tx: Executor, id: string): Promise<EndpointRow | undefined> {
  const q = tx.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('status', '=', 'enabled');
  const row = await claimingRead(tx, q).executeTakeFirst();
  return row && endpointOf(row);
}

export interface EventRef {
  sequence: number;
  id: string;
  type: string;
}

/** The organization's events after `after`, oldest first, at most `limit` (ids and types only). */
export async function eventRefsAfter(tx: Executor, orgId: string, after: number, limit: number): Promise<EventRef[]> {
  const rows = await tx
    .selectFrom('events')
    .select(['sequence', 'id', 'type'])
    .where('org_id', '=', orgId)
    .where('sequence', '>', after)
    .orderBy('sequence')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, sequence: num(r.sequence) }));
}

/** The organization's events with these ids (ids and types only). */
export async function eventRefsById(db: Executor, orgId: string, ids: readonly string[]): Promise<EventRef[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('events')
    .select(['sequence', 'id', 'type'])
    .where('org_id', '=', orgId)
    .where('id', 'in', [...ids])
    .orderBy('sequence')
    .execute();
  return rows.map((r) => ({ ...r, sequence: num(r.sequence) }));
}

/** Events after `after` up to `through` (what the endpoint has been given), oldest first. */
export async function eventRefsBetween(
  db: Executor,
  orgId: string,
  after: number,
  through: number,
  types: readonly string[] | null,
  limit: number,
): Promise<EventRef[]> {
  let q = db.selectFrom('events').select(['sequence', 'id', 'type']).where('org_id', '=', orgId).where('sequence', '>', after).where('sequence', '<=', through);
  if (types) q = q.where('type', 'in', [...types]);
  const rows = await q.orderBy('sequence').limit(limit).execute();
  return rows.map((r) => ({ ...r, sequence: num(r.sequence) }));
}

export async function insertDeliveries(tx: Executor, rows: readonly DeliveryRow[]): Promise<void> {
  // 500 rows of 17 columns stay under both engines' parameter limits.
  for (let i = 0; i < rows.length; i += 500)
    await tx
      .insertInto('webhook_deliveries')
      .values(rows.slice(i, i + 500))
      .execute();
}

export async function moveCursor(tx: Executor, id: string, through: number): Promise<void> {
  await tx.updateTable('webhook_endpoints').set({ enqueued_through: through }).where('id', '=', id).execute();
}

// ------------------------------------------------------------------------------------------------
// The log and the queue's figures

export async function pageOfDeliveries(
  db: Executor,
  endpointId: string,
  q: { offset: number; limit: number; status?: string | undefined; createdSince?: string | undefined; updatedSince?: string | undefined },
): Promise<{ rows: DeliveryRow[]; total: number }> {
  let base = db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpointId);
  if (q.status) base = base.where('status', '=', q.status);
  if (q.createdSince) base = base.where('created_at', '>=', q.createdSince);
  if (q.updatedSince) base = base.where('updated_at', '>=', q.updatedSince);
  const [rows, count] = await Promise.all([
    // Deliveries queued together share created_at: the later event first among them.
    base.selectAll().orderBy('created_at', 'desc').orderBy('sequence', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
  ]);
  return { rows: rows.map(deliveryOf), total: num(count?.n) };
}

/** The endpoint's attempt log, newest first (optionally one delivery's or one event's). */
export async function pageOfAttempts(
  db: Executor,
  endpointId: string,
  q: { offset: number; limit: number; deliveryId?: string | undefined; eventId?: string | undefined; createdSince?: string | undefined },
): Promise<{ rows: AttemptRow[]; total: number }> {
  let base = db.selectFrom('webhook_attempts').where('endpoint_id', '=', endpointId);
  if (q.deliveryId) base = base.where('delivery_id', '=', q.deliveryId);
  if (q.eventId) base = base.where('event_id', '=', q.eventId);
  if (q.createdSince) base = base.where('created_at', '>=', q.createdSince);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
    base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst(),
  ]);
  return { rows: rows.map(attemptOf), total: num(count?.n) };
}

/** The attempts of these deliveries, newest first (the dashboard's log, grouped by delivery). */
export async function attemptsOfDeliveries(db: Executor, deliveryIds: readonly string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', [...deliveryIds])
    .orderBy('delivery_id')
    .orderBy('attempt', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(attemptOf);
}

export async function findDelivery(db: Executor, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
  const row = await db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).where('id', '=', id).executeTakeFirst();
  return row && deliveryOf(row);
}

/** Pending deliveries (all organizations) and the creation time of the oldest. */
export async function queueFigures(db: Executor): Promise<{ pending: number; oldest: string | null }> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => [eb.fn.countAll().as('n'), eb.fn.min('created_at').as('oldest')])
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return { pending: num(row?.n), oldest: (row?.oldest as string | null | undefined) ?? null };
}

/**
 * Deletes at most `chunk` delivered or failed deliveries created before `cutoff`, with their attempts
 * (the log is kept as long as the events it names). Returns how many.
 */
export async function pruneDeliveries(db: Executor, cutoff: string, chunk: number): Promise<number> {
  const rows = await db.selectFrom('webhook_deliveries').select('id').where('created_at', '<', cutoff).where('status', '<>', 'pending').limit(chunk).execute();
  if (rows.length === 0) return 0;
  const ids = rows.map((r) => r.id);
  await db.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
  await db.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
  return rows.length;
}
