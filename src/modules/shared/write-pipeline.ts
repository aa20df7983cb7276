import { CompiledQuery } from 'kysely';
import type { DataStore, Executor } from '../../lib/db/index.js';
import { beginBatch, savepointsAreCheap } from '../../lib/db/locks.js';
import { isForeignKeyViolation, isTransactionConflict, isUniqueViolation } from '../../lib/db/errors.js';
import { bumpVersions, type VersionedKind } from '../../lib/db/versions.js';
import { laneKeyId, type LaneKey } from '../../domain/lane.js';

export type ChangeOp = 'created' | 'updated' | 'deleted';

/**
 * Builds the answers of stored rows (a record kind's presenter): what an event's data is made of. `known`
 * (by row id) is what the writes already hold of the answers beside the rows (RecordChange.parts).
 */
export type Presenter = (tx: Executor, orgId: string, rows: never[], known?: ReadonlyMap<string, unknown>) => Promise<unknown[]>;

export interface RecordChange {
  kind: VersionedKind;
  op: ChangeOp;
  id: string;
  /** null for records callers do not name (market rate snapshots). */
  external_reference_id: string | null;
  /** The row as written, and its presenter: the event's data (docs/events.md, "The events") is built from them at seal. */
  row?: unknown;
  present?: Presenter;
  /** The row before an update (load.status_changed compares the statuses). */
  previous?: unknown;
  /** The event's data when already known (a single write's own answer, a market rate snapshot). */
  data?: unknown;
  /**
   * What the write holds of the record's answer beside its row (a load's stops, rates, customer and
   * carrier as written), handed to the presenter so it need not read them back (kind-specific).
   */
  parts?: unknown;
  /** The lanes whose history this change moved (kept with its event for the recommendations follow-up). */
  lanes?: readonly LaneKey[];
  /** The change may move recommendations by itself (a new, deleted or re-laned load): followed up after commit. */
  followUp?: boolean;
}

/** An event that is not a record's change (load.recommendations_changed), written as it is. */
export interface Announcement {
  kind: VersionedKind;
  type: string;
  record_id: string;
  data: unknown;
}

/**
 * The change feed's writer (docs/events.md, "The promise"), called at seal inside the writing
 * transaction: `draft` builds the events of a unit of work's changes, `write` stores them from the first
 * sequence given.
 */
export interface Outbox {
  draft(tx: Executor, orgId: string, records: readonly RecordChange[], announcements: readonly Announcement[]): Promise<EventDraft[]>;
  write(tx: Executor, orgId: string, drafts: readonly EventDraft[], firstSequence: number): Promise<void>;
}

export interface EventDraft {
  id: string;
  type: string;
  kind: VersionedKind;
  record_id: string | null;
  created_at: string;
  data: unknown;
  lanes: readonly LaneKey[] | null;
}

/** What one unit of work (a single write, or one batch item) changed, collected inside its transaction. */
export class ChangeSet {
  readonly records: RecordChange[] = [];
  readonly announcements: Announcement[] = [];
  readonly lanes = new Map<string, LaneKey>();
  /** Counter moves (counter → key → delta), written once at seal in key order (see Counters). */
  readonly tallies = new Map<string, Map<string, number>>();
  /** Parts of answers kept by a write step until its record is recorded (see keep). */
  private readonly kept = new Map<string, unknown>();

  record(change: RecordChange, lanes: readonly LaneKey[] = []): void {
    const parts = this.kept.get(change.id);
    if (parts !== undefined) this.kept.delete(change.id);
    const withParts = parts !== undefined && change.op !== 'deleted' ? Object.assign({}, change, { parts }) : change;
    this.records.push(lanes.length > 0 ? Object.assign({}, withParts, { lanes }) : withParts);
    this.touchLanes(lanes);
  }

  /**
   * A write step's knowledge of record `id`'s answer beside its row (RecordChange.parts), attached to the
   * record's change when it is recorded in this unit of work. Kept here, not in a cache beside the
   * transaction, so a batch item that fails takes it away with its change set.
   */
  keep(id: string, parts: unknown): void {
    this.kept.set(id, parts);
  }

  /** An event beside the records' own (it moves no record counter). */
  announce(announcement: Announcement): void {
    this.announcements.push(announcement);
  }

  /** Lanes whose history moved (their stats are refreshed after commit). */
  touchLanes(lanes: readonly LaneKey[]): void {
    for (const k of lanes) this.lanes.set(laneKeyId(k), k);
  }

  /** Moves a kept counter (e.g. the loads per status) by `delta`, applied when the unit of work seals. */
  tally(counter: string, key: string, delta: number): void {
    let m = this.tallies.get(counter);
    if (!m) this.tallies.set(counter, (m = new Map()));
    m.set(key, (m.get(key) ?? 0) + delta);
  }

  absorb(other: ChangeSet): void {
    this.records.push(...other.records);
    this.announcements.push(...other.announcements);
    for (const [id, k] of other.lanes) this.lanes.set(id, k);
    for (const [counter, moves] of other.tallies) for (const [key, delta] of moves) this.tally(counter, key, delta);
  }

  /** The answer a single write built for its record: the event's data, so seal does not build it again. */
  presented(id: string, data: unknown): void {
    for (const r of this.records) if (r.id === id && r.op !== 'deleted' && r.data === undefined) r.data = data;
  }

  /** Whether anything committed here is for the recommendations follow-up (moved lanes, or a change that may move them). */
  needsFollowUp(): boolean {
    return this.records.some((r) => r.followUp === true || (r.lanes !== undefined && r.lanes.length > 0));
  }

  /** The counters this unit of work moves: its records' kinds, and lane_history when it moved any lane's history. */
  kinds(): Set<VersionedKind> {
    const kinds = new Set<VersionedKind>(this.records.map((r) => r.kind));
    if (this.lanes.size > 0) kinds.add('lane_history');
    return kinds;
  }
}

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

/**
 * The one path every write takes, single or batch item, from a route, the dashboard, the CLI or a test:
 * the work runs in a transaction and reports what it changed; `seal` writes what must commit with the
 * change (the organization's record counters; events and idempotency records join here); after commit
 * the lanes it touched get their stats refreshed.
 */
export function writePipeline(deps: { store: DataStore; afterCommit: AfterCommit; counters?: Counters; outbox?: Outbox }) {
  const { store } = deps;

  async function seal(tx: Executor, orgId: string, changes: ChangeSet): Promise<void> {
    // The events' data is read first, before the organization's counter row is locked (held to commit).
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
    // The events' sequences come from the same counter row (its lock orders them as the commits:
    // docs/events.md, "The promise").
    const lastSequence = await bumpVersions(tx, orgId, changes.kinds(), drafts.length);
    if (drafts.length > 0) await deps.outbox!.write(tx, orgId, drafts, lastSequence - drafts.length + 1);
  }

  async function inOwnTransaction<R, W extends Workspace>(
    orgId: string,
    work: Work<R, W>,
    workspace: () => W,
    committed: ChangeSet,
    retry?: boolean,
  ): Promise<R> {
    return retrying(retry, async () => {
      const changes = new ChangeSet();
      const result = await store.db.transaction().execute(async (tx) => {
        const ws = workspace();
        const r = await work(tx, changes, ws);
        await ws.flush(tx);
        await seal(tx, orgId, changes);
        return r;
      });
      committed.absorb(changes);
      return result;
    });
  }

  return {
    /** Where reads outside a write go. */
    reader: store.db as Executor,

    /** One write in its own transaction; `workspace`: what its steps hold (a load write's LoadWorkspace). */
    async write<R, W extends Workspace = Workspace>(orgId: string, work: Work<R, W>, opts: WriteOptions & { workspace?: () => W } = {}): Promise<R> {
      const committed = new ChangeSet();
      const result = await inOwnTransaction(orgId, work, opts.workspace ?? (() => IMMEDIATE as W), committed, opts.retryUniqueRace);
      await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      return result;
    },

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
    async batch<R, W extends Workspace = Workspace>(
      orgId: string,
      body: (item: ItemRunner<W>) => Promise<R>,
      opts: Pick<WriteOptions, 'analyticsRun'> & { workspace?: (tx: Executor) => Promise<W>; deadlineAt?: number } = {},
    ): Promise<R> {
      const committed = new ChangeSet();
      const deadlineAt = opts.deadlineAt ?? Infinity;
      const attempt = async (together: boolean): Promise<R> => {
        const pending = new ChangeSet();
        const result = await store.db.transaction().execute(async (tx) => {
          await beginBatch(tx, orgId, deadlineAt - Date.now());
          const ws = opts.workspace ? await opts.workspace(tx) : (IMMEDIATE as W);
          let restart = false;
          const r = await body(async (work, o) => {
            if (restart) throw new BatchRestart();
            const changes = new ChangeSet();
            if (together) {
              ws.begin();
              try {
                const out = await work(tx, changes, ws);
                ws.release();
                pending.absorb(changes);
                return out;
              } catch (err) {
                ws.rollback();
                // An item that wrote at once may have left part of its writes: the batch runs again apart.
                if (!ws.deferred) restart = true;
                throw err;
              }
            }
            return retryingUniqueRace(o?.retryUniqueRace, async () => {
              const itemChanges = new ChangeSet();
              ws.begin();
              try {
                const out = await inSavepoint(tx, async () => {
                  const done = await work(tx, itemChanges, ws);
                  await ws.flush(tx);
                  return done;
                });
                ws.release();
                pending.absorb(itemChanges);
                return out;
              } catch (err) {
                ws.rollback();
                throw err;
              }
            });
          });
          if (restart) throw new BatchRestart();
          if (together) {
            try {
              await ws.flush(tx);
            } catch (err) {
              // A record another request wrote since the batch read it: each item on its own decides.
              if (isUniqueViolation(err) || isForeignKeyViolation(err)) throw new BatchRestart();
              throw err;
            }
          }
          await seal(tx, orgId, pending);
          return r;
        });
        committed.absorb(pending);
        return result;
      };
      try {
        // Decided on the transaction's engine (lib/db): deferred workspaces always start together.
        const together = opts.workspace !== undefined || !savepointsAreCheap(store.db);
        // A deadlock or serialization failure anywhere in the batch runs the whole batch again.
        return await retrying(false, async () => {
          if (!together) return await attempt(false);
          try {
            return await attempt(true);
          } catch (err) {
            if (!(err instanceof BatchRestart)) throw err;
            return await attempt(false);
          }
        });
      } finally {
        await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      }
    },
  };
}

export type WritePipeline = ReturnType<typeof writePipeline>;
