import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { nextAttemptWait, retryAfterMs } from './retry-schedule.js';
import { endpointForUpdate, failPending, type AttemptRow, type ClaimedDelivery } from './webhooks.repo.js';
import { disableEndpointRow, recordAttempt, setEndpointFailingSince, type DeliveryOutcome } from './attempts.repo.js';

/** An endpoint whose attempts all failed for this long is disabled (docs/webhooks.md, "Retries"). */
export const DISABLE_AFTER_FAILING_MS = 5 * 86_400_000;

export type DisabledReason = 'manual' | 'gone' | 'failing';

/** Disables an endpoint and fails its pending deliveries (they can be replayed). */
export async function disableEndpoint(tx: Executor, endpointId: string, reason: DisabledReason, now: string): Promise<void> {
  await disableEndpointRow(tx, endpointId, reason, now);
  await failPending(
    tx,
    endpointId,
    reason === 'gone'
      ? 'Endpoint disabled: the receiver answered 410 Gone'
      : reason === 'failing'
        ? 'Endpoint disabled: every attempt failed for 5 days'
        : 'Endpoint disabled',
    now,
  );
}

/** What an attempt saw (or why none could be sent). */
export interface Observed {
  startedAt: Date;
  responseStatus: number | null;
  retryAfter: string | null;
  responseExcerpt: string | null;
  durationMs: number | null;
  /** Why there was no whole answer (or no request at all), else null. */
  error: string | null;
  /** False when the delivery can never be sent (its event was pruned): final, whatever the count. */
  sendable: boolean;
}

export interface AttemptResult {
  status: 'pending' | 'delivered' | 'failed';
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  /** This attempt disabled the endpoint (a 410, or 5 days of failures). */
  endpoint_disabled?: boolean;
}

export interface OutcomeDeps {
  db: Executor;
  clock: Clock;
  random: () => number;
  log: { warn(obj: unknown, msg: string): void };
  outcomes?: { outcome(o: 'delivered' | 'retry' | 'failed'): void };
}

/**
 * Records what an attempt of a claimed delivery saw, for the claim's holder only: the delivery's outcome
 * (delivered; retried on the schedule of retry-schedule.ts, a Retry-After on 429/503 lengthening a wait
 * within it; failed after the last attempt; a 410 disables the endpoint, as do 5 days of failures) and
 * its entry in the attempt log. Returns the outcome, or null when the claim was lost meanwhile.
 */
export async function recordOutcome(deps: OutcomeDeps, c: ClaimedDelivery, claim: string, seen: Observed): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  const test = d.payload !== null;
  const finished = deps.clock.now();
  const attempts = d.attempt + 1;
  const ok = seen.responseStatus !== null && seen.responseStatus >= 200 && seen.responseStatus < 300;
  let result: AttemptResult = ok
    ? { status: 'delivered', response_status: seen.responseStatus, duration_ms: seen.durationMs, error: null }
    : {
        status: 'pending',
        response_status: seen.responseStatus,
        duration_ms: seen.durationMs,
        error: seen.responseStatus === null ? seen.error : seen.error ? `HTTP ${seen.responseStatus} (${seen.error})` : `HTTP ${seen.responseStatus}`,
      };
  let next: string | null = null;
  let disable: DisabledReason | null = null;
  if (result.status === 'pending') {
    if (seen.responseStatus === 410 && !test) {
      result = { ...result, status: 'failed', error: 'HTTP 410: the receiver is gone; endpoint disabled' };
      disable = 'gone';
    } else {
      const asked = seen.responseStatus === 429 || seen.responseStatus === 503 ? retryAfterMs(seen.retryAfter, finished) : null;
      const wait = test || !seen.sendable ? null : nextAttemptWait(attempts, asked, deps.random);
      if (wait === null) result = { ...result, status: 'failed' };
      else next = toIso(new Date(finished.getTime() + wait));
    }
  }
  const nowIso = toIso(finished);
  const outcome: DeliveryOutcome = {
    attempt: attempts,
    status: result.status,
    response_status: result.response_status,
    duration_ms: result.duration_ms,
    error: result.error,
    next_attempt_at: next,
    updated_at: nowIso,
  };
  const entry: AttemptRow = {
    id: newId('wha'),
    org_id: d.org_id,
    endpoint_id: d.endpoint_id,
    delivery_id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    sequence: d.sequence,
    attempt: attempts,
    status: ok ? 'delivered' : 'failed',
    response_status: seen.responseStatus,
    duration_ms: seen.durationMs,
    // A 2xx whose body was cut short is delivered; the log still says what was cut.
    error: ok ? seen.error : result.error,
    response_body: seen.responseExcerpt,
    next_attempt_at: next,
    created_at: toIso(seen.startedAt),
  };
  const { db } = deps;
  // The common case (delivered, the endpoint not failing) is one statement on PostgreSQL.
  const simple = test || (result.status === 'delivered' && !ep.failing_since);
  const kept = simple
    ? await recordAttempt(db, d.id, claim, outcome, entry)
    : await db.transaction().execute(async (tx) => {
        // The endpoint's row first, then the delivery's: the order disabling takes them (no deadlock).
        const row = await endpointForUpdate(tx, ep.id);
        const recorded = await recordAttempt(tx, d.id, claim, outcome, entry);
        if (!recorded || !row) return recorded;
        if (result.status === 'delivered') {
          if (row.failing_since) await setEndpointFailingSince(tx, ep.id, null);
          return recorded;
        }
        if (!disable && row.status === 'enabled') {
          if (!row.failing_since) await setEndpointFailingSince(tx, ep.id, nowIso);
          else if (finished.getTime() - Date.parse(row.failing_since) >= DISABLE_AFTER_FAILING_MS) disable = 'failing';
        }
        if (disable && row.status === 'enabled') await disableEndpoint(tx, ep.id, disable, nowIso);
        else disable = null;
        return recorded;
      });
  if (!kept) return null;
  deps.outcomes?.outcome(result.status === 'delivered' ? 'delivered' : result.status === 'failed' ? 'failed' : 'retry');
  if (disable) {
    deps.log.warn({ endpoint: ep.id, reason: disable }, 'webhook endpoint disabled');
    return { ...result, endpoint_disabled: true };
  }
  return result;
}
