import { randomUUID } from 'node:crypto';
import { SpanStatusCode } from '@opentelemetry/api';
import { Agent, type Dispatcher } from 'undici';
import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { workerLoop } from '../../lib/worker-loop.js';
import { inSpan, ORGANIZATION_ATTRIBUTE } from '../../lib/telemetry/tracing.js';
import {
  anyDue,
  claimDeliveries,
  claimedDetails,
  dueCandidates,
  enabledEndpointIds,
  extendLease,
  pruneDeliveries,
  releaseClaim,
  type ClaimedDelivery,
  type EndpointRow,
} from './webhooks.repo.js';
import { sendAttempt, TIMEOUT_MS } from './attempt.js';
import { recordOutcome, type AttemptResult, type Observed, type OutcomeDeps } from './outcome.js';
import { envelopeOf, outboxFollower } from './webhooks.outbox.js';
import { signedHeaders } from './signing.js';
import { Chain, deliverySlots, MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_ORG } from './slots.js';
import { guardedLookup, urlProblem, type Resolver } from './url-policy.js';

export { envelopeOf, pendingDelivery, webhookId } from './webhooks.outbox.js';
export { RETRY_SCHEDULE_MS, JITTER, retryAfterMs, retryDelay, nextAttemptWait } from './retry-schedule.js';
export { TIMEOUT_MS, RESPONSE_READ_LIMIT, RESPONSE_EXCERPT_LIMIT } from './attempt.js';
export { DISABLE_AFTER_FAILING_MS, disableEndpoint, type AttemptResult, type DisabledReason } from './outcome.js';

// Due deliveries looked at per claim, and the most one endpoint's chain takes at once.
const CANDIDATES = 500;
const CHAIN_ROWS = 50;
const USER_AGENT = 'Lanebridge-Webhooks/1';

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
  /** Deliveries sent at once by this process (default 64), and by one organization's endpoints (default 16). */
  maxInFlight?: number;
  maxInFlightPerOrg?: number;
}

interface AttemptContext extends OutcomeDeps {
  allowInsecure: boolean;
  timeoutMs: number;
  dispatcher: Dispatcher;
}

/**
 * Sends one claimed delivery (an attempt of `chain`, which can cut it) and records its outcome; null
 * when nothing was recorded: the claim was lost, the endpoint went away, or the process is stopping
 * (then the claim is given back at once: the receiver may have it already, at least once).
 */
function deliver(ctx: AttemptContext, c: ClaimedDelivery, claim: string, chain: Chain): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  // A trace of its own per attempt (whichever request woke the worker is not its cause); the
  // statements that claim nothing but record this attempt's outcome are its children.
  return inSpan(
    'webhook attempt',
    {
      [ORGANIZATION_ATTRIBUTE]: ep.org_id,
      'lanebridge.webhook.endpoint_id': ep.id,
      'lanebridge.webhook.delivery_id': d.id,
      'lanebridge.webhook.attempt': d.attempt + 1,
      'lanebridge.event.id': d.event_id,
      'lanebridge.event.type': d.event_type,
      ...hostOf(ep.url),
    },
    async (span) => {
      const result = await attempt(ctx, c, claim, chain);
      if (!result) span.setAttribute('lanebridge.webhook.outcome', 'not_recorded');
      else {
        span.setAttribute('lanebridge.webhook.outcome', result.status);
        if (result.response_status !== null) span.setAttribute('http.response.status_code', result.response_status);
        if (result.status !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? undefined });
      }
      return result;
    },
    { root: true },
  );
}

/** The receiver's host and port for a span (never the whole URL: a receiver may carry a token in it). */
function hostOf(url: string): Record<string, string | number> {
  try {
    const u = new URL(url);
    return { 'server.address': u.hostname, 'server.port': Number(u.port) || (u.protocol === 'https:' ? 443 : 80) };
  } catch {
    return {};
  }
}

async function attempt(ctx: AttemptContext, c: ClaimedDelivery, claim: string, chain: Chain): Promise<AttemptResult | null> {
  const { delivery: d, endpoint: ep } = c;
  const startedAt = ctx.clock.now();
  const body = d.payload ?? (c.event ? envelopeOf(c.event) : null);
  const unsent = { startedAt, responseStatus: null, retryAfter: null, responseExcerpt: null, durationMs: null };
  let seen: Observed;
  if (body === null) {
    seen = { ...unsent, error: 'The event is no longer kept (retention); it cannot be sent', sendable: false };
  } else {
    // The URL's form and an address literal are checked here; a host name's addresses by the
    // connection itself (guardedLookup), once, as they are resolved to connect.
    const problem = await urlProblem(ep.url, { allowInsecure: ctx.allowInsecure, resolveNames: false });
    if (problem) {
      seen = { ...unsent, error: `URL refused: ${problem}`, sendable: true };
    } else {
      const secrets = [
        ep.secret,
        ...(ep.previous_secret && ep.previous_secret_until && ep.previous_secret_until > toIso(startedAt) ? [ep.previous_secret] : []),
      ];
      const headers = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        ...signedHeaders(secrets, d.event_id, Math.floor(startedAt.getTime() / 1000), body),
      };
      const answer = await sendAttempt({ url: ep.url, headers, body, deadlineMs: ctx.timeoutMs, dispatcher: ctx.dispatcher }, chain.nextAttempt());
      if (answer.cut === 'stopping') {
        await releaseClaim(ctx.db, d.id, claim).catch(() => undefined);
        return null;
      }
      // Deleted (its rows are gone) or disabled (its pending rows failed): nothing left to record.
      if (answer.cut === 'endpoint_removed') return null;
      seen = { startedAt, ...answer, sendable: true };
    }
  }
  return recordOutcome(ctx, c, claim, seen);
}

/**
 * The delivery worker (docs/webhooks.md, "The worker"), a loop over claimed rows: the outbox is turned
 * into deliveries per endpoint (a cursor per endpoint, moved in the transaction that inserts them), then
 * due deliveries are claimed with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED) into the process's
 * in-flight slots (src/modules/webhooks/slots.ts: one chain per endpoint, a share per organization),
 * sent (attempt.ts: each by its deadline, its answer read within a bound) and their outcome recorded by
 * the claim's holder (outcome.ts). A process that dies leaves its claims to expire and be taken again:
 * at least once, never lost. `wake` is called after a write commits; `start` polls as well (what other
 * instances committed, retries coming due, endpoints deleted or disabled elsewhere).
 */
export function deliveryWorker(deps: DeliveryWorkerDeps) {
  const { db, clock } = deps;
  const slots = deliverySlots({ total: deps.maxInFlight ?? MAX_IN_FLIGHT, perOrg: deps.maxInFlightPerOrg ?? MAX_IN_FLIGHT_PER_ORG });
  // An attempt never outlives its claim: the 10 s limit is shortened to fit a shorter lease.
  const timeoutMs = Math.max(500, Math.min(TIMEOUT_MS, deps.leaseMs - 1000));
  const ctx: AttemptContext = {
    db,
    clock,
    random: deps.random ?? Math.random,
    log: deps.log,
    ...(deps.outcomes ? { outcomes: deps.outcomes } : {}),
    allowInsecure: deps.allowInsecure,
    timeoutMs,
    // undici's own fetch and connection pool (keep-alive per receiver). Under the URL rules
    // (url-policy.ts) the sockets are opened only to addresses checked as they are resolved
    // (guardedLookup): the check before an attempt alone would leave a window between it and the
    // connection's own resolution.
    dispatcher: new Agent({ connect: deps.allowInsecure ? {} : { lookup: guardedLookup(deps.resolve) } }),
  };
  const running = new Set<Promise<void>>();
  // Test events, sent outside the slots (one per dashboard request); stopping cuts them too.
  const loose = new Set<Chain>();
  const outbox = outboxFollower(db, clock);

  /** One endpoint's claimed deliveries, one after another in sequence order, until done or cut. */
  async function runChain(chain: Chain, items: ClaimedDelivery[], claim: string, leasedUntil: number): Promise<void> {
    for (let i = 0; i < items.length; i++) {
      const c = items[i]!;
      if (chain.cut) {
        // Stopping: the rest is given back at once. Endpoint gone: its rows were deleted or failed.
        if (chain.cut === 'stopping') for (const rest of items.slice(i)) await releaseClaim(db, rest.delivery.id, claim).catch(() => undefined);
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
      const r = await deliver(ctx, c, claim, chain);
      // The rest were failed with the endpoint; their claims are void.
      if (r?.endpoint_disabled) return;
    }
  }

  function startChain(chain: Chain, items: ClaimedDelivery[], claim: string, leasedUntil: number): void {
    const run: Promise<void> = runChain(chain, items, claim, leasedUntil)
      .catch((err: unknown) => deps.log.warn({ err, endpoint: chain.endpointId }, 'webhook deliveries failed to run; retried when their claim ends'))
      .finally(() => {
        slots.close(chain);
        running.delete(run);
        // The endpoint's next deliveries, or another's (claimed only when a slot is free).
        void loop.tick();
      });
    running.add(run);
  }

  /** Due deliveries claimed at once, by endpoint, under one claim and lease. */
  interface Claimed {
    picks: { endpointId: string; orgId: string }[];
    byEndpoint: Map<string, ClaimedDelivery[]>;
    claim: string;
    leasedUntil: number;
  }
  // A round's claims: at most 100, and none after one that saw fewer than CANDIDATES due.
  let round = { claims: 0, done: false };

  /** Claims due deliveries into free slots (each organization within its share); null when none is to be claimed now. */
  async function claimDue(): Promise<Claimed | null> {
    if (round.done || round.claims >= 100 || slots.room() <= 0) return null;
    round.claims++;
    const now = clock.now();
    const candidates = await dueCandidates(db, { now: toIso(now), busy: slots.busyEndpoints(), fullOrgs: slots.fullOrgs(), limit: CANDIDATES });
    const picks = slots.choose(candidates, CHAIN_ROWS);
    if (picks.length === 0) return null;
    const claim = randomUUID();
    const leasedUntil = now.getTime() + deps.leaseMs;
    const ids = await claimDeliveries(db, { ids: picks.flatMap((p) => p.ids), now: toIso(now), leasedUntil: toIso(new Date(leasedUntil)), claim });
    const byEndpoint = new Map<string, ClaimedDelivery[]>();
    for (const c of await claimedDetails(db, ids)) byEndpoint.set(c.endpoint.id, [...(byEndpoint.get(c.endpoint.id) ?? []), c]);
    if (candidates.length < CANDIDATES) round.done = true;
    return { picks, byEndpoint, claim, leasedUntil };
  }

  /**
   * The worker loop (src/lib/worker-loop.ts, the import runner's too), one round at a time: the outbox's
   * marked organizations enqueued, then due deliveries claimed into free slots and their chains started
   * (not awaited: a chain's end ticks the loop for the endpoint's next ones, or another's).
   */
  const loop = workerLoop<Claimed>({
    async beforeRound() {
      round = { claims: 0, done: false };
      if (outbox.marked()) await outbox.enqueue();
    },
    fetch: claimDue,
    async run({ picks, byEndpoint, claim, leasedUntil }) {
      for (const pick of picks) {
        const items = byEndpoint.get(pick.endpointId);
        if (items && !loop.stopping) startChain(slots.open(pick.endpointId, pick.orgId), items, claim, leasedUntil);
      }
    },
    pollMs: deps.pollMs ?? 1000,
    poll: () => pollOnce(),
    onError: (err) => deps.log.warn({ err }, 'webhook worker pass failed; tried again at the next poll'),
  });

  // The log's housekeeping, at most every ten minutes (real time), a few small deletes each.
  let prunedAt = 0;
  async function pruneLog(): Promise<void> {
    if (!deps.retentionDays || Date.now() - prunedAt < 600_000) return;
    prunedAt = Date.now();
    const cutoff = toIso(new Date(clock.now().getTime() - deps.retentionDays * 86_400_000));
    for (let i = 0; i < 20 && (await pruneDeliveries(db, cutoff, 1000)) === 1000; i++);
  }

  /** Cuts the chains of endpoints deleted or disabled (by another process too): their slots free at once. */
  async function cutRemoved(): Promise<void> {
    const busy = slots.busyEndpoints();
    if (busy.length === 0) return;
    const alive = new Set(await enabledEndpointIds(db, busy));
    for (const id of busy) if (!alive.has(id)) slots.cut(id, 'endpoint_removed');
  }

  let polling: Promise<void> | null = null;
  function pollOnce(): Promise<void> {
    if (loop.stopping) return Promise.resolve();
    polling ??= pollPass().finally(() => (polling = null));
    return polling;
  }

  async function pollPass(): Promise<void> {
    try {
      await pruneLog();
      await outbox.refresh();
      await cutRemoved();
    } catch (err) {
      deps.log.warn({ err }, 'webhook worker could not read its endpoints; tried again at the next poll');
      return;
    }
    outbox.markAll();
    await loop.tick();
  }

  return {
    /** After a write of `orgId` committed: its events are turned into deliveries and sent, beside the request. */
    wake(orgId: string): void {
      if (!loop.started || loop.stopping || !outbox.concerns(orgId)) return;
      outbox.mark(orgId);
      loop.notify();
    },
    /** An endpoint of `orgId` was created or enabled here: its organization's writes wake the worker from now on. */
    watch(orgId: string): void {
      outbox.watch(orgId);
    },
    /**
     * The endpoint was deleted or disabled here: its attempt in flight is cut and its slot freed now
     * (other processes notice at their next poll).
     */
    endpointRemoved(endpointId: string): void {
      slots.cut(endpointId, 'endpoint_removed');
    },
    /** Polls every `pollMs` (default 1 s) on a timer that never keeps the process alive. */
    start: (): void => loop.start(),
    /**
     * Works until nothing is due now: the outbox enqueued, every due delivery sent and recorded (tests,
     * after moving the clock; the worker process at shutdown does not wait for this).
     */
    async drain(): Promise<void> {
      await outbox.refresh();
      outbox.markAll();
      for (let i = 0; i < 1000; i++) {
        await loop.tick();
        if (running.size === 0 && !loop.busy) {
          if (!(await anyDue(db, toIso(clock.now())))) return;
        }
        await Promise.all([...running]);
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
      if (!c) return null;
      const chain = new Chain(c.endpoint.id, c.endpoint.org_id);
      loose.add(chain);
      try {
        return await deliver(ctx, c, claim, chain);
      } finally {
        loose.delete(chain);
      }
    },
    /** Stops polling; attempts in flight are cut and their claims given back, as are the rest. */
    async stop(): Promise<void> {
      if (loop.stopping) return;
      // The loop's flag and timer are set when stop() returns (its rounds are awaited below).
      const rounds = loop.stop();
      slots.cutAll('stopping');
      for (const chain of loose) chain.stop('stopping');
      await polling;
      await rounds;
      await Promise.all([...running]);
      await ctx.dispatcher.destroy().catch(() => undefined);
    },
    /** Deliveries being sent by this process now (one chain per endpoint). */
    inFlight: () => slots.size(),
    /** Chains in flight per organization (tests). */
    inFlightByOrg: () => slots.byOrg(),
  };
}

export type DeliveryWorker = ReturnType<typeof deliveryWorker>;
export type { EndpointRow };
