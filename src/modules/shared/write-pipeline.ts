import { CompiledQuery } from 'kysely';
import type { DataStore, Executor } from '../../lib/db/index.js';
import { beginBatch, savepointsAreCheap } from '../../lib/db/locks.js';
import { isForeignKeyViolation, isTransactionConflict, isUniqueViolation } from '../../lib/db/errors.js';
import { bumpVersions } from '../../lib/db/versions.js';
import { ChangeSet, type Outbox } from './change-set.js';

// The change set and the outbox's types live in change-set.ts; the write path's modules import them from here.
export { ChangeSet, type Announcement, type ChangeOp, type EventDraft, type Outbox, type Presenter, type RecordChange } from './change-set.js';

/**
 * Writers of kept counters, by name: each gets the net moves of a unit of work (zero moves left out) in
 * key order. Written at seal, at the end of the transaction: a batch holds counter rows only for its
 * last moment, and every transaction takes them in the same order (no deadlock between a batch and a
 * single write on PostgreSQL).
 */
export type Counters = Record<string, (tx: Executor, orgId: string, moves: [key: string, delta: number][]) => Promise<void>>;

/** The work that follows a commit: the lane analytics run (docs/api.md, "Lane history and carrier recommendations"), counted for load writes. */
export type AfterCommit = (orgId: string, committed: ChangeSet, opts: { analyticsRun: boolean }) => Promise<void>;

export interface WriteOptions {
  /** Counts as a lane analytics run (load writes). */
  analyticsRun?: boolean;
  /** Upserts race (two requests both see "absent"): the loser runs again once and finds the winner's row. */
  retryUniqueRace?: boolean;
}

/**
 * What a unit of work holds of the records it writes, beside its transaction (loads: their rows and parts,
 * src/modules/loads/loads.workspace.ts). Handed to every write step of the unit; each item of a batch
 * sees what the items before it wrote. A deferred workspace holds its writes until `flush`, which writes
 * them set-based; `begin`/`release`/`rollback` bracket one item (a failed item leaves it as it was).
 */
export interface Workspace {
  readonly deferred: boolean;
  begin(): void;
  release(): void;
  rollback(): void;
  flush(tx: Executor): Promise<void>;
}

/** The workspace of record kinds that write at once (customers, carriers, locations, market rates). */
export const IMMEDIATE: Workspace = { deferred: false, begin() {}, release() {}, rollback() {}, flush: async () => {} };

/** One step of work inside a unit: its transaction, its change set, its workspace. */
export type Work<R, W extends Workspace = Workspace> = (tx: Executor, changes: ChangeSet, ws: W) => Promise<R>;

/** Runs one item of a batch: whole or nothing, never undoing another item. */
export type ItemRunner<W extends Workspace = Workspace> = <R>(work: Work<R, W>, opts?: Pick<WriteOptions, 'retryUniqueRace'>) => Promise<R>;

// One fixed savepoint name: items run one after another, and a fixed text stays in the statement cache.
const SAVEPOINT = CompiledQuery.raw('savepoint lb_item');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint lb_item');
const RELEASE = CompiledQuery.raw('release savepoint lb_item');

async function inSavepoint<R>(tx: Executor, work: () => Promise<R>): Promise<R> {
  await tx.executeQuery(SAVEPOINT);
  try {
    const result = await work();
    await tx.executeQuery(RELEASE);
    return result;
  } catch (err) {
    await tx.executeQuery(ROLLBACK_TO);
    await tx.executeQuery(RELEASE);
    throw err;
  }
}

/**
 * Thrown through a batch's body when its items, run together, cannot stand as they are: an item that
 * wrote at once failed without a savepoint (PostgreSQL), or the set-based writes were refused (a record
 * written by another request since the batch read it). The transaction rolls back and the batch runs
 * again, each item in a savepoint with its own writes. The batch runner lets it pass (batch.ts).
 */
export class BatchRestart extends Error {
  constructor() {
    super('batch restarts with a savepoint per item');
  }
}

/** A batch item's upsert that lost its insert race runs again once, in its savepoint (it finds the winner's row). */
async function retryingUniqueRace<R>(retry: boolean | undefined, attempt: () => Promise<R>): Promise<R> {
  if (!retry) return attempt();
  try {
    return await attempt();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return attempt();
  }
}

/** How often a unit of work runs again when the engine gave it up for another's sake (a deadlock, a serialization failure). */
const CONFLICT_RETRIES = 3;

/**
 * Runs a unit of work again, whole, where the engine says to (docs/reliability.md "One load"): after a
 * deadlock or serialization failure (a bounded number of times), and after an upsert lost its insert race
 * (once, `uniqueRace`: it finds the winner's row).
 */
async function retrying<R>(uniqueRace: boolean | undefined, attempt: () => Promise<R>): Promise<R> {
  let conflicts = 0;
  let raced = false;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (isTransactionConflict(err) && conflicts < CONFLICT_RETRIES) conflicts++;
      else if (uniqueRace && !raced && isUniqueViolation(err)) raced = true;
      else throw err;
    }
  }
}

/** What the pipeline writes through: the store, the after-commit work, the kept counters' writers and the outbox. */
export interface PipelineDeps {
  store: DataStore;
  afterCommit: AfterCommit;
  counters?: Counters;
  outbox?: Outbox;
}

/**
 * Writes what must commit with a unit of work's changes, at the end of its transaction: its events (data
 * read first, before the organization's counter row is locked, held to commit), its kept counters, and the
 * organization's record counters, whose row gives the events their sequences (its lock orders them as the
 * commits: docs/events.md, "The promise").
 */
async function seal(deps: PipelineDeps, tx: Executor, orgId: string, changes: ChangeSet): Promise<void> {
  const drafts =
    deps.outbox && (changes.records.length > 0 || changes.announcements.length > 0)
      ? await deps.outbox.draft(tx, orgId, changes.records, changes.announcements)
      : [];
  for (const [counter, moves] of changes.tallies) {
    const write = deps.counters?.[counter];
    if (!write) throw new Error(`no writer for counter ${counter}`);
    const net = [...moves].filter(([, d]) => d !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (net.length > 0) await write(tx, orgId, net);
  }
  const lastSequence = await bumpVersions(tx, orgId, changes.kinds(), drafts.length);
  if (drafts.length > 0) await deps.outbox!.write(tx, orgId, drafts, lastSequence - drafts.length + 1);
}

/** One unit of work in its own transaction (run again where the engine says to); its changes join `committed`. */
async function inOwnTransaction<R, W extends Workspace>(
  deps: PipelineDeps,
  orgId: string,
  work: Work<R, W>,
  workspace: () => W,
  committed: ChangeSet,
  retry?: boolean,
): Promise<R> {
  return retrying(retry, async () => {
    const changes = new ChangeSet();
    const result = await deps.store.db.transaction().execute(async (tx) => {
      const ws = workspace();
      const r = await work(tx, changes, ws);
      await ws.flush(tx);
      await seal(deps, tx, orgId, changes);
      return r;
    });
    committed.absorb(changes);
    return result;
  });
}

/** One write in its own transaction; `workspace`: what its steps hold (a load write's LoadWorkspace). */
async function writeUnit<R, W extends Workspace>(
  deps: PipelineDeps,
  orgId: string,
  work: Work<R, W>,
  opts: WriteOptions & { workspace?: () => W },
): Promise<R> {
  const committed = new ChangeSet();
  const result = await inOwnTransaction(deps, orgId, work, opts.workspace ?? (() => IMMEDIATE as W), committed, opts.retryUniqueRace);
  await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
  return result;
}

/** One attempt of a batch's items: in one transaction, together or apart (see batchUnits). */
interface BatchAttempt<W extends Workspace> {
  tx: Executor;
  ws: W;
  /** What the items saved so far (sealed at the end, committed with the transaction). */
  pending: ChangeSet;
  /** An item that wrote at once failed while together: the batch runs again apart. */
  restart: boolean;
}

/** An item run together with the others: no savepoint; a deferred workspace holds its writes until the batch's flush. */
async function itemTogether<R, W extends Workspace>(at: BatchAttempt<W>, work: Work<R, W>): Promise<R> {
  const changes = new ChangeSet();
  at.ws.begin();
  try {
    const out = await work(at.tx, changes, at.ws);
    at.ws.release();
    at.pending.absorb(changes);
    return out;
  } catch (err) {
    at.ws.rollback();
    // An item that wrote at once may have left part of its writes: the batch runs again apart.
    if (!at.ws.deferred) at.restart = true;
    throw err;
  }
}

/** An item run apart: in a savepoint with its own writes flushed inside it (an upsert that lost its insert race runs again once). */
function itemApart<R, W extends Workspace>(at: BatchAttempt<W>, work: Work<R, W>, retryUniqueRace: boolean | undefined): Promise<R> {
  return retryingUniqueRace(retryUniqueRace, async () => {
    const itemChanges = new ChangeSet();
    at.ws.begin();
    try {
      const out = await inSavepoint(at.tx, async () => {
        const done = await work(at.tx, itemChanges, at.ws);
        await at.ws.flush(at.tx);
        return done;
      });
      at.ws.release();
      at.pending.absorb(itemChanges);
      return out;
    } catch (err) {
      at.ws.rollback();
      throw err;
    }
  });
}

type BatchOptions<W extends Workspace> = Pick<WriteOptions, 'analyticsRun'> & { workspace?: (tx: Executor) => Promise<W>; deadlineAt?: number };

/** A batch's items run once, together or apart, in one transaction; its changes join `committed` when it commits. */
async function batchAttempt<R, W extends Workspace>(
  deps: PipelineDeps,
  orgId: string,
  body: (item: ItemRunner<W>) => Promise<R>,
  opts: BatchOptions<W>,
  together: boolean,
  committed: ChangeSet,
): Promise<R> {
  const pending = new ChangeSet();
  const deadlineAt = opts.deadlineAt ?? Infinity;
  const result = await deps.store.db.transaction().execute(async (tx) => {
    await beginBatch(tx, orgId, deadlineAt - Date.now());
    const at: BatchAttempt<W> = { tx, ws: opts.workspace ? await opts.workspace(tx) : (IMMEDIATE as W), pending, restart: false };
    const r = await body(async (work, o) => {
      if (at.restart) throw new BatchRestart();
      return together ? itemTogether(at, work) : itemApart(at, work, o?.retryUniqueRace);
    });
    if (at.restart) throw new BatchRestart();
    if (together) {
      try {
        await at.ws.flush(tx);
      } catch (err) {
        // A record another request wrote since the batch read it: each item on its own decides.
        if (isUniqueViolation(err) || isForeignKeyViolation(err)) throw new BatchRestart();
        throw err;
      }
    }
    await seal(deps, tx, orgId, pending);
    return r;
  });
  committed.absorb(pending);
  return result;
}

/**
 * A batch: `body` runs its items through the runner it is given, in ONE transaction (a commit per
 * item cost more than the item's writes on both engines), whole or nothing per item, never undoing
 * another (docs/api.md, "Batches"). `workspace` opens what the items share (a load batch's reads,
 * made at once, and its writes, held and written set-based at the end). How the items run:
 *   - together: no savepoints; a deferred workspace's writes go to the database once, after the last
 *     item (a failed item wrote nothing, so nothing needs undoing);
 *   - apart: each item in a savepoint with its own writes flushed inside it.
 * Items run together unless they write at once and savepoints are cheap (SQLite); a batch run together
 * that cannot stand (an immediate item failed, or the set-based writes were refused) runs again apart.
 * `deadlineAt` is the request's one deadline, whichever way and however often the items run:
 * the runner fails the items it reaches after it, and no lock wait outlasts it. After-commit work
 * runs once; a failed closing commit is thrown after it (no item was saved).
 */
async function batchUnits<R, W extends Workspace>(
  deps: PipelineDeps,
  orgId: string,
  body: (item: ItemRunner<W>) => Promise<R>,
  opts: BatchOptions<W>,
): Promise<R> {
  const committed = new ChangeSet();
  try {
    // Decided on the transaction's engine (lib/db): deferred workspaces always start together.
    const together = opts.workspace !== undefined || !savepointsAreCheap(deps.store.db);
    // A deadlock or serialization failure anywhere in the batch runs the whole batch again.
    return await retrying(false, async () => {
      if (!together) return await batchAttempt(deps, orgId, body, opts, false, committed);
      try {
        return await batchAttempt(deps, orgId, body, opts, true, committed);
      } catch (err) {
        if (!(err instanceof BatchRestart)) throw err;
        return await batchAttempt(deps, orgId, body, opts, false, committed);
      }
    });
  } finally {
    await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
  }
}

/**
 * The one path every write takes, single or batch item, from a route, the dashboard, the CLI or a test:
 * the work runs in a transaction and reports what it changed; `seal` writes what must commit with the
 * change (the organization's record counters; events and idempotency records join here); after commit
 * the lanes it touched get their stats refreshed.
 */
export function writePipeline(deps: PipelineDeps) {
  return {
    /** Where reads outside a write go. */
    reader: deps.store.db as Executor,
    /** One write in its own transaction; `workspace`: what its steps hold (a load write's LoadWorkspace). */
    write: <R, W extends Workspace = Workspace>(orgId: string, work: Work<R, W>, opts: WriteOptions & { workspace?: () => W } = {}): Promise<R> =>
      writeUnit(deps, orgId, work, opts),
    /** A batch's items in one transaction (batchUnits). */
    batch: <R, W extends Workspace = Workspace>(orgId: string, body: (item: ItemRunner<W>) => Promise<R>, opts: BatchOptions<W> = {}): Promise<R> =>
      batchUnits(deps, orgId, body, opts),
  };
}

export type WritePipeline = ReturnType<typeof writePipeline>;
