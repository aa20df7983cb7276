import { sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from './types.js';

/** What an attempt changes on its delivery's row. */
export type DeliveryOutcome = Pick<WebhookDeliveriesTable, 'attempt' | 'status' | 'response_status' | 'duration_ms' | 'error' | 'next_attempt_at' | 'updated_at'>;

/**
 * Records a webhook attempt for the holder of the delivery's claim: the delivery's row takes the
 * outcome and the attempt log the entry, both or neither; false when the claim was lost meanwhile
 * (nothing written). Outside a transaction, PostgreSQL does both in one statement (a data-modifying CTE:
 * one round trip an attempt, as before there was an attempt log) and SQLite in a transaction of its own
 * (statements cost no round trip there); inside the caller's transaction, two statements.
 */
export async function recordDeliveryAttempt(db: Executor, id: string, claim: string, outcome: DeliveryOutcome, entry: WebhookAttemptsTable): Promise<boolean> {
  if (!db.isTransaction && dialectOf(db) === 'postgres') {
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
