import { randomUUID } from 'node:crypto';
import { Agent } from 'undici';
import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { workerLoop, type WorkerLoop } from '../../lib/worker-loop.js';
import { pruneDeliveries, type EndpointRow } from './webhooks.repo.js';
import { anyDue, claimDeliveries, claimedDetails, dueCandidates, enabledEndpointIds, extendLease, releaseClaim, type ClaimedDelivery } from './claims.repo.js';
import { TIMEOUT_MS } from './attempt.js';
import { deliver, type AttemptContext } from './deliver.js';
import type { AttemptResult } from './outcome.js';
import { outboxFollower } from './webhooks.outbox.js';
import { Chain, deliverySlots, MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_ORG } from './slots.js';
import { guardedLookup, type Resolver } from './url-policy.js';

export { envelopeOf, pendingDelivery, webhookId } from './webhooks.outbox.js';
export { RETRY_SCHEDULE_MS, JITTER, retryAfterMs, retryDelay, nextAttemptWait } from './retry-schedule.js';
export { TIMEOUT_MS, RESPONSE_READ_LIMIT, RESPONSE_EXCERPT_LIMIT } from './attempt.js';
export { DISABLE_AFTER_FAILING_MS, disableEndpoint, type AttemptResult, type DisabledReason } from './outcome.js';

// Due deliveries looked at per claim, and the most one endpoint's chain takes at once.
const CANDIDATES = 500;
const CHAIN_ROWS = 50;

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

/** Due deliveries claimed at once, by endpoint, under one claim and lease. */
interface Claimed {
  picks: { endpointId: string; orgId: string }[];
  byEndpoint: Map<string, ClaimedDelivery[]>;
  claim: string;
  leasedUntil: number;
}

/** One worker's state, which its steps below take (docs/architecture.md, "Sizes"). */
interface WorkerState {
  deps: DeliveryWorkerDeps;
  db: Executor;
  clock: Clock;
  ctx: AttemptContext;
  slots: ReturnType<typeof deliverySlots>;
  outbox: ReturnType<typeof outboxFollower>;
  loop: WorkerLoop<Claimed>;
  /** The chains running (their promises). */
  running: Set<Promise<void>>;
  /** Test events, sent outside the slots (one per dashboard request); stopping cuts them too. */
  loose: Set<Chain>;
  /** A round's claims: at most 100, and none after one that saw fewer than CANDIDATES due. */
  round: { claims: number; done: boolean };
  /** When the log was last pruned (real time). */
  prunedAt: number;
  polling: Promise<void> | null;
}

/** What every attempt of this worker shares; its time limit fits within the lease. */
function attemptContext(deps: DeliveryWorkerDeps): AttemptContext {
  return {
    db: deps.db,
    clock: deps.clock,
    random: deps.random ?? Math.random,
    log: deps.log,
    ...(deps.outcomes ? { outcomes: deps.outcomes } : {}),
    allowInsecure: deps.allowInsecure,
    // An attempt never outlives its claim: the 10 s limit is shortened to fit a shorter lease.
    timeoutMs: Math.max(500, Math.min(TIMEOUT_MS, deps.leaseMs - 1000)),
    // undici's own fetch and connection pool (keep-alive per receiver). Under the URL rules
    // (url-policy.ts) the sockets are opened only to addresses checked as they are resolved
    // (guardedLookup): the check before an attempt alone would leave a window between it and the
    // connection's own resolution.
    dispatcher: new Agent({ connect: deps.allowInsecure ? {} : { lookup: guardedLookup(deps.resolve) } }),
  };
}

/** Claims due deliveries into free slots (each organization within its share); null when none is to be claimed now. */
async function claimDue(w: WorkerState): Promise<Claimed | null> {
  const { db, slots, round } = w;
  if (round.done || round.claims >= 100 || slots.room() <= 0) return null;
  round.claims++;
  const now = w.clock.now();
  const candidates = await dueCandidates(db, { now: toIso(now), busy: slots.busyEndpoints(), fullOrgs: slots.fullOrgs(), limit: CANDIDATES });
  const picks = slots.choose(candidates, CHAIN_ROWS);
  if (picks.length === 0) return null;
  const claim = randomUUID();
  const leasedUntil = now.getTime() + w.deps.leaseMs;
  const ids = await claimDeliveries(db, { ids: picks.flatMap((p) => p.ids), now: toIso(now), leasedUntil: toIso(new Date(leasedUntil)), claim });
  const byEndpoint = new Map<string, ClaimedDelivery[]>();
  for (const c of await claimedDetails(db, ids)) byEndpoint.set(c.endpoint.id, [...(byEndpoint.get(c.endpoint.id) ?? []), c]);
  if (candidates.length < CANDIDATES) round.done = true;
  return { picks, byEndpoint, claim, leasedUntil };
}

/** The claimed deliveries' chains started, one per endpoint (not awaited). */
function startChains(w: WorkerState, { picks, byEndpoint, claim, leasedUntil }: Claimed): void {
  for (const pick of picks) {
    const items = byEndpoint.get(pick.endpointId);
    if (items && !w.loop.stopping) startChain(w, w.slots.open(pick.endpointId, pick.orgId), items, claim, leasedUntil);
  }
}

function startChain(w: WorkerState, chain: Chain, items: ClaimedDelivery[], claim: string, leasedUntil: number): void {
  const run: Promise<void> = runChain(w, chain, items, claim, leasedUntil)
    .catch((err: unknown) => w.deps.log.warn({ err, endpoint: chain.endpointId }, 'webhook deliveries failed to run; retried when their claim ends'))
    .finally(() => {
      w.slots.close(chain);
      w.running.delete(run);
      // The endpoint's next deliveries, or another's (claimed only when a slot is free).
      void w.loop.tick();
    });
  w.running.add(run);
}

/** One endpoint's claimed deliveries, one after another in sequence order, until done or cut. */
async function runChain(w: WorkerState, chain: Chain, items: ClaimedDelivery[], claim: string, leasedUntil: number): Promise<void> {
  const { db, clock, ctx } = w;
  for (let i = 0; i < items.length; i++) {
    const c = items[i]!;
    if (chain.cut) {
      // Stopping: the rest is given back at once. Endpoint gone: its rows were deleted or failed.
      if (chain.cut === 'stopping') for (const rest of items.slice(i)) await releaseClaim(db, rest.delivery.id, claim).catch(() => undefined);
      return;
    }
    // A long chain keeps its claim: an attempt never starts on a lease shorter than its time limit.
    const at = clock.now().getTime();
    if (at + ctx.timeoutMs + 1000 > leasedUntil) {
      const until = at + w.deps.leaseMs;
      if (!(await extendLease(db, c.delivery.id, claim, toIso(new Date(until))))) continue;
      // Each row's lease is its own: the ones after this keep the claim's, so extend each in turn.
      if (i + 1 < items.length) leasedUntil = 0;
    }
    const r = await deliver(ctx, c, claim, chain);
    // The rest were failed with the endpoint; their claims are void.
    if (r?.endpoint_disabled) return;
  }
}

/** The log's housekeeping, at most every ten minutes (real time), a few small deletes each. */
async function pruneLog(w: WorkerState): Promise<void> {
  const days = w.deps.retentionDays;
  if (!days || Date.now() - w.prunedAt < 600_000) return;
  w.prunedAt = Date.now();
  const cutoff = toIso(new Date(w.clock.now().getTime() - days * 86_400_000));
  for (let i = 0; i < 20 && (await pruneDeliveries(w.db, cutoff, 1000)) === 1000; i++);
}

/** Cuts the chains of endpoints deleted or disabled (by another process too): their slots free at once. */
async function cutRemoved(w: WorkerState): Promise<void> {
  const busy = w.slots.busyEndpoints();
  if (busy.length === 0) return;
  const alive = new Set(await enabledEndpointIds(w.db, busy));
  for (const id of busy) if (!alive.has(id)) w.slots.cut(id, 'endpoint_removed');
}

function pollOnce(w: WorkerState): Promise<void> {
  if (w.loop.stopping) return Promise.resolve();
  w.polling ??= pollPass(w).finally(() => (w.polling = null));
  return w.polling;
}

async function pollPass(w: WorkerState): Promise<void> {
  try {
    await pruneLog(w);
    await w.outbox.refresh();
    await cutRemoved(w);
  } catch (err) {
    w.deps.log.warn({ err }, 'webhook worker could not read its endpoints; tried again at the next poll');
    return;
  }
  w.outbox.markAll();
  await w.loop.tick();
}

/** Works until nothing is due now: the outbox enqueued, every due delivery sent and recorded. */
async function drain(w: WorkerState): Promise<void> {
  await w.outbox.refresh();
  w.outbox.markAll();
  for (let i = 0; i < 1000; i++) {
    await w.loop.tick();
    if (w.running.size === 0 && !w.loop.busy) {
      if (!(await anyDue(w.db, toIso(w.clock.now())))) return;
    }
    await Promise.all([...w.running]);
  }
}

/** Sends one delivery now, outside the queue (a test event): it must be inserted with `claim`. */
async function sendNow(w: WorkerState, deliveryId: string, claim: string): Promise<AttemptResult | null> {
  const [c] = await claimedDetails(w.db, [deliveryId]);
  if (!c) return null;
  const chain = new Chain(c.endpoint.id, c.endpoint.org_id);
  w.loose.add(chain);
  try {
    return await deliver(w.ctx, c, claim, chain);
  } finally {
    w.loose.delete(chain);
  }
}

/** Stops polling; attempts in flight are cut and their claims given back, as are the rest. */
async function stop(w: WorkerState): Promise<void> {
  if (w.loop.stopping) return;
  // The loop's flag and timer are set when stop() returns (its rounds are awaited below).
  const rounds = w.loop.stop();
  w.slots.cutAll('stopping');
  for (const chain of w.loose) chain.stop('stopping');
  await w.polling;
  await rounds;
  await Promise.all([...w.running]);
  await w.ctx.dispatcher.destroy().catch(() => undefined);
}

/**
 * The delivery worker (docs/webhooks.md, "The worker"), a loop over claimed rows: the outbox is turned
 * into deliveries per endpoint (a cursor per endpoint, moved in the transaction that inserts them), then
 * due deliveries are claimed with a lease (PostgreSQL: FOR UPDATE SKIP LOCKED) into the process's
 * in-flight slots (src/modules/webhooks/slots.ts: one chain per endpoint, a share per organization),
 * sent (deliver.ts, attempt.ts: signed, each by its deadline, its answer read within a bound) and their
 * outcome recorded by the claim's holder (outcome.ts: retry and backoff). A process that dies leaves its
 * claims to expire and be taken again: at least once, never lost. `wake` is called after a write
 * commits; `start` polls as well (what other instances committed, retries coming due, endpoints deleted
 * or disabled elsewhere).
 */
export function deliveryWorker(deps: DeliveryWorkerDeps) {
  const w: WorkerState = {
    deps,
    db: deps.db,
    clock: deps.clock,
    ctx: attemptContext(deps),
    slots: deliverySlots({ total: deps.maxInFlight ?? MAX_IN_FLIGHT, perOrg: deps.maxInFlightPerOrg ?? MAX_IN_FLIGHT_PER_ORG }),
    outbox: outboxFollower(deps.db, deps.clock),
    // Set just below: the loop's callbacks take this state.
    loop: undefined as unknown as WorkerLoop<Claimed>,
    running: new Set(),
    loose: new Set(),
    round: { claims: 0, done: false },
    prunedAt: 0,
    polling: null,
  };
  /**
   * The worker loop (src/lib/worker-loop.ts, the import runner's too), one round at a time: the outbox's
   * marked organizations enqueued, then due deliveries claimed into free slots and their chains started
   * (not awaited: a chain's end ticks the loop for the endpoint's next ones, or another's).
   */
  const loop = (w.loop = workerLoop<Claimed>({
    async beforeRound() {
      w.round = { claims: 0, done: false };
      if (w.outbox.marked()) await w.outbox.enqueue();
    },
    fetch: () => claimDue(w),
    run: async (claimed) => startChains(w, claimed),
    pollMs: deps.pollMs ?? 1000,
    poll: () => pollOnce(w),
    onError: (err) => deps.log.warn({ err }, 'webhook worker pass failed; tried again at the next poll'),
  }));

  return {
    /** After a write of `orgId` committed: its events are turned into deliveries and sent, beside the request. */
    wake(orgId: string): void {
      if (!loop.started || loop.stopping || !w.outbox.concerns(orgId)) return;
      w.outbox.mark(orgId);
      loop.notify();
    },
    /** An endpoint of `orgId` was created or enabled here: its organization's writes wake the worker from now on. */
    watch: (orgId: string): void => w.outbox.watch(orgId),
    /**
     * The endpoint was deleted or disabled here: its attempt in flight is cut and its slot freed now
     * (other processes notice at their next poll).
     */
    endpointRemoved(endpointId: string): void {
      w.slots.cut(endpointId, 'endpoint_removed');
    },
    /** Polls every `pollMs` (default 1 s) on a timer that never keeps the process alive. */
    start: (): void => loop.start(),
    /** Works until nothing is due now (tests, after moving the clock; the worker process at shutdown does not wait for this). */
    drain: (): Promise<void> => drain(w),
    /** Deletes delivered and failed deliveries older than the retention (tests; the poll does it by itself). */
    async prune(): Promise<void> {
      w.prunedAt = 0;
      await pruneLog(w);
    },
    /** Sends one delivery now, outside the queue (a test event): it must be inserted with `claim`. */
    sendNow: (deliveryId: string, claim: string): Promise<AttemptResult | null> => sendNow(w, deliveryId, claim),
    /** Stops polling; attempts in flight are cut and their claims given back, as are the rest. */
    stop: (): Promise<void> => stop(w),
    /** Deliveries being sent by this process now (one chain per endpoint). */
    inFlight: () => w.slots.size(),
    /** Chains in flight per organization (tests). */
    inFlightByOrg: () => w.slots.byOrg(),
  };
}

export type DeliveryWorker = ReturnType<typeof deliveryWorker>;
export type { EndpointRow };
