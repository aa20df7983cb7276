import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { nextAttemptWait, retryAfterMs } from './retry-schedule.js';
import { failPending, type AttemptRow } from './webhooks.repo.js';
import { endpointForUpdate, type ClaimedDelivery } from './claims.repo.js';
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

/** An attempt judged: its outcome, when the next one is due, and whether it disables the endpoint. */
interface Verdict {
  /** A 2xx answer (delivered, even when its body was cut short). */
  ok: boolean;
  result: AttemptResult;
  next: string | null;
  disable: DisabledReason | null;
}

/**
 * Retry and backoff (docs/webhooks.md, "Retries"): delivered on a 2xx; otherwise retried on the schedule
 * of retry-schedule.ts (a Retry-After on 429/503 lengthening a wait within it), failed after the last
 * attempt, and a 410 fails it and disables the endpoint. A test event and an unsendable delivery are
 * never retried.
 */
function judge(seen: Observed, test: boolean, attempts: number, finished: Date, random: () => number): Verdict {
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
      const wait = test || !seen.sendable ? null : nextAttemptWait(attempts, asked, random);
      if (wait === null) result = { ...result, status: 'failed' };
      else next = toIso(new Date(finished.getTime() + wait));
    }
  }
  return { ok, result, next, disable };
}

/** The delivery's new state and the attempt log's entry for this attempt. */
function outcomeRows(c: ClaimedDelivery, seen: Observed, v: Verdict, attempts: number, nowIso: string): { outcome: DeliveryOutcome; entry: AttemptRow } {
  const d = c.delivery;
  const outcome: DeliveryOutcome = {
    attempt: attempts,
    status: v.result.status,
    response_status: v.result.response_status,
    duration_ms: v.result.duration_ms,
    error: v.result.error,
    next_attempt_at: v.next,
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
    status: v.ok ? 'delivered' : 'failed',
    response_status: seen.responseStatus,
    duration_ms: seen.durationMs,
    // A 2xx whose body was cut short is delivered; the log still says what was cut.
    error: v.ok ? seen.error : v.result.error,
    response_body: seen.responseExcerpt,
    next_attempt_at: v.next,
    created_at: toIso(seen.startedAt),
  };
  return { outcome, entry };
}

/**
 * Writes the outcome with the endpoint's failure state (failing since when, disabled after 5 days or a
 * 410) in one transaction; false when the claim was lost. `v.disable` ends as what was done: null when
 * the endpoint was not (or no longer) enabled.
 */
async function writeOutcome(
  db: Executor,
  c: ClaimedDelivery,
  claim: string,
  v: Verdict,
  rows: ReturnType<typeof outcomeRows>,
  finished: Date,
): Promise<boolean> {
  const epId = c.endpoint.id;
  const nowIso = rows.outcome.updated_at;
  return db.transaction().execute(async (tx) => {
    // The endpoint's row first, then the delivery's: the order disabling takes them (no deadlock).
    const row = await endpointForUpdate(tx, epId);
    const recorded = await recordAttempt(tx, c.delivery.id, claim, rows.outcome, rows.entry);
    if (!recorded || !row) return recorded;
    if (v.result.status === 'delivered') {
      if (row.failing_since) await setEndpointFailingSince(tx, epId, null);
      return recorded;
    }
    if (!v.disable && row.status === 'enabled') {
      if (!row.failing_since) await setEndpointFailingSince(tx, epId, nowIso);
      else if (finished.getTime() - Date.parse(row.failing_since) >= DISABLE_AFTER_FAILING_MS) v.disable = 'failing';
    }
    if (v.disable && row.status === 'enabled') await disableEndpoint(tx, epId, v.disable, nowIso);
    else v.disable = null;
    return recorded;
  });
}

/**
 * Records what an attempt of a claimed delivery saw, for the claim's holder only: the delivery's outcome
 * (`judge`: delivered, retried, failed; a 410 disables the endpoint, as do 5 days of failures) and its
 * entry in the attempt log. Returns the outcome, or null when the claim was lost meanwhile.
 */
export async function recordOutcome(deps: OutcomeDeps, c: ClaimedDelivery, claim: string, seen: Observed): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  const test = d.payload !== null;
  const finished = deps.clock.now();
  const attempts = d.attempt + 1;
  const v = judge(seen, test, attempts, finished, deps.random);
  const rows = outcomeRows(c, seen, v, attempts, toIso(finished));
  // The common case (delivered, the endpoint not failing) is one statement on PostgreSQL.
  const simple = test || (v.result.status === 'delivered' && !ep.failing_since);
  const kept = simple ? await recordAttempt(deps.db, d.id, claim, rows.outcome, rows.entry) : await writeOutcome(deps.db, c, claim, v, rows, finished);
  if (!kept) return null;
  const { result } = v;
  deps.outcomes?.outcome(result.status === 'delivered' ? 'delivered' : result.status === 'failed' ? 'failed' : 'retry');
  if (v.disable) {
    deps.log.warn({ endpoint: ep.id, reason: v.disable }, 'webhook endpoint disabled');
    return { ...result, endpoint_disabled: true };
  }
  return result;
}
