import { randomUUID } from 'node:crypto';
import { Agent } from 'undici';
import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import {
  anyDue,
  claimDue,
  claimedDetails,
  endpointForUpdate,
  endpointsBehind,
  eventRefsAfter,
  extendLease,
  failPending,
  insertDeliveries,
  lockEndpointForEnqueue,
  moveCursor,
  pruneDeliveries,
  recordAttempt,
  releaseClaim,
  type ClaimedDelivery,
  type DeliveryRow,
  type EndpointRow,
  type EventRef,
} from './webhooks.repo.js';
import { signedHeaders } from './signing.js';
import { guardedLookup, urlProblem, type Resolver } from './url-policy.js';
import { nextAttemptWait, retryAfterMs } from './retry-schedule.js';
import { AttemptCut, sendAttempt, TIMEOUT_MS } from './attempt.js';

export { TIMEOUT_MS, RESPONSE_READ_LIMIT } from './attempt.js';

export { RETRY_SCHEDULE_MS, JITTER, retryAfterMs, retryDelay, nextAttemptWait } from './retry-schedule.js';

/** D12: an endpoint whose attempts all failed for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 86_400_000;
// Events read per enqueue transaction; a longer backlog takes several.
const ENQUEUE_WINDOW = 500;
// Deliveries sent at once by one process (each endpoint's in sequence order, endpoints side by side).
const MAX_IN_FLIGHT = 64;
const USER_AGENT = 'Lanebridge-Webhooks/1';

export type DisabledReason = 'manual' | 'gone' | 'failing';

/** The ids of this module (src/lib/ids.ts lists the others' kinds). */
export const webhookId = (kind: 'whe' | 'whd', now: number) => newId(kind, now);

/** A delivery of `e` to `ep`, due at once (the outbox's events and replays enqueue these). */
export function pendingDelivery(ep: Pick<EndpointRow, 'id' | 'org_id'>, e: Pick<EventRef, 'id' | 'type' | 'sequence'>, at: Date): DeliveryRow {
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
    created_at: iso,
    updated_at: iso,
  };
}

/** The D11 envelope as JSON text, from a stored event (its data is already JSON). */
export function envelopeOf(e: { id: string; type: string; sequence: number; created_at: string; data: string }): string {
  return `${JSON.stringify({ id: e.id, type: e.type, sequence: e.sequence, timestamp: e.created_at }).slice(0, -1)},"data":${e.data}}`;
}

/** Disables an endpoint and fails its pending deliveries (they can be replayed). */
export async function disableEndpoint(tx: Executor, endpointId: string, reason: DisabledReason, now: string): Promise<void> {
  await tx
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: reason, disabled_at: now, updated_at: now })
    .where('id', '=', endpointId)
    .execute();
  await failPending(tx, endpointId, reason === 'gone' ? 'Endpoint disabled: the receiver answered 410 Gone' : reason === 'failing' ? 'Endpoint disabled: every attempt failed for 5 days' : 'Endpoint disabled', now);
}

export interface AttemptResult {
  status: 'pending' | 'delivered' | 'failed';
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  /** This attempt disabled the endpoint (a 410, or 5 days of failures). */
  endpoint_disabled?: boolean;
}

export interface WorkerOutcomes {
  /** One per attempt: delivered, retry (another attempt follows) or failed (final). */
  outcome(o: 'delivered' | 'retry' | 'failed'): void;
}

export interface WorkerLog {
  warn(obj: unknown, msg: string): void;
}

export interface DeliveryWorkerDeps {
  db: Executor;
  clock: Clock;
  allowInsecure: boolean;
  leaseMs: number;
  log: WorkerLog;
  outcomes?: WorkerOutcomes;
  /** Host resolution for the URL rules (tests pass one). */
  resolve?: Resolver;
  /** How often the outbox and due retries are looked at without a wake-up (other instances' writes). */
  pollMs?: number;
  random?: () => number;
  /** Delivered and failed deliveries are deleted after this many days (the events' retention). */
  retentionDays?: number;
}

/**
 * D12's delivery worker, a loop over claimed rows: the outbox is turned into deliveries per endpoint
 * (a cursor per endpoint, moved in the transaction that inserts them), then due deliveries are claimed
 * with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED), sent (each endpoint's in sequence order), and their
 * outcome recorded by the claim's holder. A process that dies leaves its claims to expire and be taken
 * again: at least once, never lost. `wake` is called after a write commits; `start` polls as well (what
 * other instances committed, retries coming due).
 */
export function deliveryWorker(deps: DeliveryWorkerDeps) {
  const { db, clock } = deps;
  const random = deps.random ?? Math.random;
  const timeoutMs = Math.max(500, Math.min(TIMEOUT_MS, deps.leaseMs - 1000));
  const busy = new Set<string>();
  const chains = new Set<Promise<void>>();
  // Organizations with an enabled endpoint, as last read (a write elsewhere is waited on by nobody).
  let watched = new Set<string>();
  let watchedRead = false;
  let pendingOrgs = new Set<string>();
  let pendingAll = false;
  let ticking: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  // Wake-ups act once the worker is started (a worker left manual works only when drained).
  let started = false;
  let poll: NodeJS.Timeout | null = null;
  // The controllers of the attempts in flight (stopping cuts them).
  const inFlight = new Set<AbortController>();
  // undici's own fetch and connection pool (keep-alive per receiver). Under D12's URL rules the sockets
  // are opened only to addresses checked as they are resolved (guardedLookup): the check before an
  // attempt alone would leave a window between it and the connection's own resolution.
  const dispatcher = new Agent({ connect: deps.allowInsecure ? {} : { lookup: guardedLookup(deps.resolve) } });

  async function refreshWatched(): Promise<void> {
    const rows = await db.selectFrom('webhook_endpoints').select('org_id').distinct().where('status', '=', 'enabled').execute();
    watched = new Set(rows.map((r) => r.org_id));
    watchedRead = true;
  }

  /** Turns the endpoint's share of the outbox into deliveries, a window per transaction. */
  async function enqueueEndpoint(endpointId: string): Promise<void> {
    for (;;) {
      const full = await db.transaction().execute(async (tx) => {
        const ep = await lockEndpointForEnqueue(tx, endpointId);
        if (!ep) return false;
        const events = await eventRefsAfter(tx, ep.org_id, ep.enqueued_through, ENQUEUE_WINDOW);
        if (events.length === 0) return false;
        const types = ep.event_types ? new Set(JSON.parse(ep.event_types) as string[]) : null;
        const at = clock.now();
        const rows = events.filter((e) => !types || types.has(e.type)).map((e) => pendingDelivery(ep, e, at));
        await insertDeliveries(tx, rows);
        await moveCursor(tx, ep.id, events[events.length - 1]!.sequence);
        return events.length === ENQUEUE_WINDOW;
      });
      if (!full) return;
    }
  }

  async function enqueue(): Promise<void> {
    const all = pendingAll;
    const orgs = [...pendingOrgs];
    pendingAll = false;
    pendingOrgs = new Set();
    const behind = all ? await endpointsBehind(db, null) : (await Promise.all(orgs.map((o) => endpointsBehind(db, o)))).flat();
    for (const ep of behind) await enqueueEndpoint(ep.id);
  }

  /** Sends one claimed delivery and records its outcome; returns it (null when the claim was lost). */
  async function attempt(c: ClaimedDelivery, claim: string): Promise<AttemptResult | null> {
    const { delivery: d, endpoint: ep } = c;
    const test = d.payload !== null;
    const started = clock.now();
    const body = d.payload ?? (c.event ? envelopeOf(c.event) : null);
    let result: AttemptResult;
    let retryAfter: string | null = null;
    if (body === null) {
      result = { status: 'failed', response_status: null, duration_ms: null, error: 'The event is no longer kept (retention); it cannot be sent' };
    } else {
      // The URL's form and an address literal are checked here; a host name's addresses by the
      // connection itself (guardedLookup), once, as they are resolved to connect.
      const problem = await urlProblem(ep.url, { allowInsecure: deps.allowInsecure, resolveNames: false });
      if (problem) {
        result = { status: 'pending', response_status: null, duration_ms: null, error: `URL refused: ${problem}` };
      } else {
        const secrets = [ep.secret, ...(ep.previous_secret && ep.previous_secret_until && ep.previous_secret_until > toIso(started) ? [ep.previous_secret] : [])];
        const headers = {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          ...signedHeaders(secrets, d.event_id, Math.floor(started.getTime() / 1000), body),
        };
        // The attempt's own deadline and a bounded read of the answer (attempt.ts); stopping cuts it.
        const control = new AbortController();
        inFlight.add(control);
        if (stopped) control.abort(new AttemptCut('stopping'));
        const answer = await sendAttempt({ url: ep.url, headers, body, deadlineMs: timeoutMs, dispatcher }, control).finally(() => inFlight.delete(control));
        if (answer.cut === 'stopping') {
          // Given back at once (the receiver may have it already: at least once).
          await releaseClaim(db, d.id, claim).catch(() => undefined);
          return null;
        }
        retryAfter = answer.retryAfter;
        const ok = answer.responseStatus !== null && answer.responseStatus >= 200 && answer.responseStatus < 300;
        result = {
          status: ok ? 'delivered' : 'pending',
          response_status: answer.responseStatus,
          duration_ms: answer.durationMs,
          error: ok ? null : answer.responseStatus === null ? answer.error : answer.error ? `HTTP ${answer.responseStatus} (${answer.error})` : `HTTP ${answer.responseStatus}`,
        };
      }
    }
    const finished = clock.now();
    const attempts = d.attempt + 1;
    let next: string | null = null;
    let disable: DisabledReason | null = null;
    if (result.status === 'pending') {
      if (result.response_status === 410 && !test) {
        result = { ...result, status: 'failed', error: 'HTTP 410: the receiver is gone; endpoint disabled' };
        disable = 'gone';
      } else {
        // Retry-After may lengthen the schedule's wait (to 24 h at most), never shorten it or add attempts.
        const asked = result.response_status === 429 || result.response_status === 503 ? retryAfterMs(retryAfter, finished) : null;
        const wait = test ? null : nextAttemptWait(attempts, asked, random);
        if (wait === null) result = { ...result, status: 'failed' };
        else next = toIso(new Date(finished.getTime() + wait));
      }
    }
    const nowIso = toIso(finished);
    const outcome = { attempt: attempts, ...result, next_attempt_at: next, updated_at: nowIso };
    // The common case (delivered, the endpoint not failing) is one statement, no transaction.
    const simple = test || (result.status === 'delivered' && !ep.failing_since);
    const kept = simple
      ? await recordAttempt(db, d.id, claim, outcome)
      : await db.transaction().execute(async (tx) => {
          // The endpoint's row first, then the delivery's: the order disabling takes them (no deadlock).
          const row = await endpointForUpdate(tx, ep.id);
          const ok = await recordAttempt(tx, d.id, claim, outcome);
          if (!ok || !row) return ok;
          if (result.status === 'delivered') {
            if (row.failing_since) await tx.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', ep.id).execute();
            return ok;
          }
          if (!disable && row.status === 'enabled') {
            if (!row.failing_since) await tx.updateTable('webhook_endpoints').set({ failing_since: nowIso }).where('id', '=', ep.id).execute();
            else if (finished.getTime() - Date.parse(row.failing_since) >= DISABLE_AFTER_FAILING_MS) disable = 'failing';
          }
          if (disable && row.status === 'enabled') await disableEndpoint(tx, ep.id, disable, nowIso);
          else disable = null;
          return ok;
        });
    if (!kept) return null;
    deps.outcomes?.outcome(result.status === 'delivered' ? 'delivered' : result.status === 'failed' ? 'failed' : 'retry');
    if (disable) {
      deps.log.warn({ endpoint: ep.id, reason: disable }, 'webhook endpoint disabled');
      return { ...result, endpoint_disabled: true };
    }
    return result;
  }

  /** One endpoint's claimed deliveries, one after another in sequence order. */
  async function runChain(items: ClaimedDelivery[], claim: string, leasedUntil: number): Promise<void> {
    for (let i = 0; i < items.length; i++) {
      const c = items[i]!;
      if (stopped) {
        for (const rest of items.slice(i)) await releaseClaim(db, rest.delivery.id, claim).catch(() => undefined);
        return;
      }
      // A long chain keeps its claim: an attempt never starts on a lease shorter than its time limit.
      const at = clock.now().getTime();
      if (at + timeoutMs + 1000 > leasedUntil) {
        const until = at + deps.leaseMs;
        if (!(await extendLease(db, c.delivery.id, claim, toIso(new Date(until))))) continue;
        // Each row's lease is its own: the ones after this keep the claim's, so extend each in turn.
        if (i + 1 < items.length) leasedUntil = 0;
      }
      const r = await attempt(c, claim);
      // The rest were failed with the endpoint; their claims are void.
      if (r?.endpoint_disabled) return;
    }
  }

  /** Claims due deliveries while there is room, and starts their chains. */
  async function dispatch(): Promise<void> {
    for (;;) {
      const room = MAX_IN_FLIGHT - [...chains].length;
      if (room <= 0 || stopped) return;
      const now = clock.now();
      const claim = randomUUID();
      const leasedUntil = now.getTime() + deps.leaseMs;
      const ids = await claimDue(db, { now: toIso(now), leasedUntil: toIso(new Date(leasedUntil)), claim, limit: Math.min(room, 100), busy: [...busy] });
      if (ids.length === 0) return;
      const claimed = await claimedDetails(db, ids);
      const byEndpoint = new Map<string, ClaimedDelivery[]>();
      for (const c of claimed) byEndpoint.set(c.endpoint.id, [...(byEndpoint.get(c.endpoint.id) ?? []), c]);
      for (const [endpointId, items] of byEndpoint) {
        busy.add(endpointId);
        const chain: Promise<void> = runChain(items, claim, leasedUntil)
          .catch((err: unknown) => deps.log.warn({ err, endpoint: endpointId }, 'webhook deliveries failed to run; retried when their claim ends'))
          .finally(() => {
            busy.delete(endpointId);
            chains.delete(chain);
            // The endpoint's next deliveries (claimed only when its chain is done, to keep its order).
            if (!stopped) void tick();
          });
        chains.add(chain);
      }
      if (ids.length < Math.min(room, 100)) return;
    }
  }

  function tick(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      try {
        do {
          again = false;
          if (pendingAll || pendingOrgs.size > 0) await enqueue();
          await dispatch();
        } while (again && !stopped);
      } catch (err) {
        deps.log.warn({ err }, 'webhook worker pass failed; tried again at the next poll');
      } finally {
        ticking = null;
      }
    })();
    return ticking;
  }

  // The log's housekeeping, at most every ten minutes (real time), a few small deletes each.
  let prunedAt = 0;
  async function pruneLog(): Promise<void> {
    if (!deps.retentionDays || Date.now() - prunedAt < 600_000) return;
    prunedAt = Date.now();
    const cutoff = toIso(new Date(clock.now().getTime() - deps.retentionDays * 86_400_000));
    for (let i = 0; i < 20 && (await pruneDeliveries(db, cutoff, 1000)) === 1000; i++);
  }

  let polling: Promise<void> | null = null;
  function pollOnce(): Promise<void> {
    if (stopped) return Promise.resolve();
    polling ??= pollPass().finally(() => (polling = null));
    return polling;
  }

  async function pollPass(): Promise<void> {
    try {
      await pruneLog();
      await refreshWatched();
    } catch (err) {
      deps.log.warn({ err }, 'webhook worker could not read its endpoints; tried again at the next poll');
      return;
    }
    pendingAll = true;
    await tick();
  }

  return {
    /** After a write of `orgId` committed: its events are turned into deliveries and sent, beside the request. */
    wake(orgId: string): void {
      if (!started || stopped || (watchedRead && !watched.has(orgId))) return;
      pendingOrgs.add(orgId);
      void tick();
    },
    /** An endpoint of `orgId` was created or enabled here: its organization's writes wake the worker from now on. */
    watch(orgId: string): void {
      watched.add(orgId);
    },
    /** Polls every `pollMs` (default 1 s) on a timer that never keeps the process alive. */
    start(): void {
      if (poll || stopped) return;
      started = true;
      poll = setInterval(() => void pollOnce(), deps.pollMs ?? 1000);
      poll.unref();
      void pollOnce();
    },
    /**
     * Works until nothing is due now: the outbox enqueued, every due delivery sent and recorded (tests,
     * after moving the clock; the worker process at shutdown does not wait for this).
     */
    async drain(): Promise<void> {
      await refreshWatched();
      pendingAll = true;
      for (let i = 0; i < 1000; i++) {
        await tick();
        if (chains.size === 0 && !ticking) {
          if (!(await anyDue(db, toIso(clock.now())))) return;
        }
        await Promise.all([...chains]);
      }
    },
    /** Deletes delivered and failed deliveries older than the retention (tests; the poll does it by itself). */
    async prune(): Promise<void> {
      prunedAt = 0;
      await pruneLog();
    },
    /** Sends one delivery now, outside the queue (a test event): it must be inserted with `claim`. */
    async sendNow(deliveryId: string, claim: string): Promise<AttemptResult | null> {
      const [c] = await claimedDetails(db, [deliveryId]);
      return c ? attempt(c, claim) : null;
    },
    /** Stops polling; attempts in flight are abandoned (their claims expire) and the rest given back. */
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (poll) clearInterval(poll);
      for (const control of inFlight) control.abort(new AttemptCut('stopping'));
      await polling;
      await ticking;
      await Promise.all([...chains]);
      await dispatcher.destroy().catch(() => undefined);
    },
    /** Deliveries being sent by this process now. */
    inFlight: () => chains.size,
  };
}

export type DeliveryWorker = ReturnType<typeof deliveryWorker>;
export type { EndpointRow };
