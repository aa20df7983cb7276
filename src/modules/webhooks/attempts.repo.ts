import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { writesInWith } from '../../lib/db/capabilities.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../lib/db/types.js';

/** What an attempt changes on its delivery's row. */
export type DeliveryOutcome = Pick<
  WebhookDeliveriesTable,
  'attempt' | 'status' | 'response_status' | 'duration_ms' | 'error' | 'next_attempt_at' | 'updated_at'
>;

/**
 * A webhook attempt's writes (src/modules/webhooks/outcome.ts): the delivery's outcome, the attempt log,
 * and the endpoint's failing state.
 */

/**
 * Records a webhook attempt for the holder of the delivery's claim: the delivery's row takes the
 * outcome and the attempt log the entry, both or neither; false when the claim was lost meanwhile
 * (nothing written). Outside a transaction, PostgreSQL does both in one statement (a data-modifying CTE:
 * one round trip an attempt, as before there was an attempt log) and SQLite in a transaction of its own
 * (statements cost no round trip there); inside the caller's transaction, two statements.
 */
export async function recordAttempt(db: Executor, id: string, claim: string, outcome: DeliveryOutcome, entry: WebhookAttemptsTable): Promise<boolean> {
  if (!db.isTransaction && writesInWith(db)) {
    const { rows } = await sql<{ id: string }>`
      with updated as (
        update webhook_deliveries
        set attempt = ${outcome.attempt}, status = ${outcome.status}, response_status = ${outcome.response_status}, duration_ms = ${outcome.duration_ms},
          error = ${outcome.error}, next_attempt_at = ${outcome.next_attempt_at}, updated_at = ${outcome.updated_at}, claim = null, leased_until = null
        where id = ${id} and claim = ${claim} and status = 'pending'
        returning id
      )
      insert into webhook_attempts (id, org_id, endpoint_id, delivery_id, event_id, event_type, sequence, attempt, status, response_status, duration_ms, error, response_body, next_attempt_at, created_at)
      select ${entry.id}::text, ${entry.org_id}::text, ${entry.endpoint_id}::text, updated.id, ${entry.event_id}::text, ${entry.event_type}::text, ${entry.sequence}::bigint,
        ${entry.attempt}::integer, ${entry.status}::text, ${entry.response_status}::integer, ${entry.duration_ms}::integer, ${entry.error}::text,
        ${entry.response_body}::text, ${entry.next_attempt_at}::text, ${entry.created_at}::text
      from updated
      returning id`.execute(db);
    return rows.length > 0;
  }
  const write = async (tx: Executor) => {
    const r = await tx
      .updateTable('webhook_deliveries')
      .set(Object.assign({}, outcome, { claim: null, leased_until: null }))
      .where('id', '=', id)
      .where('claim', '=', claim)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await tx.insertInto('webhook_attempts').values(entry).execute();
    return true;
  };
  return db.isTransaction ? write(db) : db.transaction().execute(write);
}

/** Marks the endpoint failing since `since`, or not failing (null): attempts that failed for 5 days disable it. */
export async function setEndpointFailingSince(tx: Executor, endpointId: string, since: string | null): Promise<void> {
  await tx.updateTable('webhook_endpoints').set({ failing_since: since }).where('id', '=', endpointId).execute();
}

/** The endpoint's row disabled (its pending deliveries are failed by failPending, webhooks.repo.ts). */
export async function disableEndpointRow(
  tx: Executor,
  endpointId: string,
  reason: NonNullable<WebhookEndpointsTable['disabled_reason']>,
  now: string,
): Promise<void> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: reason, disabled_at: now, updated_at: now })
    .where('id', '=', endpointId)
    .execute();
}
