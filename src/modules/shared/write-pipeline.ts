import { CompiledQuery, sql } from 'kysely';
import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
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
  /** The row as written, and its presenter: the event's data (D11) is built from them at seal. */
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
 * The change feed's writer (D11), called at seal inside the writing transaction: `draft` builds the
 * events of a unit of work's changes, `write` stores them from the first sequence given.
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
    const withParts = parts !== undefined && change.op !== 'deleted' ? { ...change, parts } : change;
    this.records.push(lanes.length > 0 ? { ...withParts, lanes } : withParts);
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

  kinds(): Set<VersionedKind> {
    return new Set(this.records.map((r) => r.kind));
  }
}

/**
 * Writers of kept counters, by name: each gets the net moves of a unit of work (zero moves left out) in
 * key order. Written at seal, at the end of the transaction: a batch holds counter rows only for its
 * last moment, and every transaction takes them in the same order (no deadlock between a batch and a
 * single write on PostgreSQL).
 */
export type Counters = Record<string, (tx: Executor, orgId: string, moves: [key: string, delta: number][]) => Promise<void>>;

/** The work that follows a commit: D7's analytics run, counted for load writes. */
export type AfterCommit = (orgId: string, committed: ChangeSet, opts: { analyticsRun: boolean }) => Promise<void>;

export interface WriteOptions {
  /** Counts as D7's analytics run (load writes). */
  analyticsRun?: boolean;
  /** Upserts race (two requests both see "absent"): the loser runs again once and finds the winner's row. */
  retryUniqueRace?: boolean;
}

/** Runs one unit of work of a batch: whole or nothing, never undoing another item. */
export type ItemRunner = <R>(work: (tx: Executor, changes: ChangeSet) => Promise<R>, opts?: Pick<WriteOptions, 'retryUniqueRace'>) => Promise<R>;

// The advisory lock class of an organization's batches (PostgreSQL), beside the organization's hash.
const BATCH_LOCK_CLASS = 7215;

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
 * Thrown through a batch's body, by the item after one that failed while the items ran without
 * savepoints (PostgreSQL's first attempt), or after the body: the transaction rolls back and the batch
 * runs again, each item in a savepoint. The batch runner lets it pass (src/modules/batch/batch.ts).
 */
export class BatchRestart extends Error {
  constructor() {
    super('batch restarts with a savepoint per item');
  }
}

async function retryingUniqueRace<R>(retry: boolean | undefined, attempt: () => Promise<R>): Promise<R> {
  if (!retry) return attempt();
  try {
    return await attempt();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return attempt();
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
    const drafts = deps.outbox && (changes.records.length > 0 || changes.announcements.length > 0) ? await deps.outbox.draft(tx, orgId, changes.records, changes.announcements) : [];
    for (const [counter, moves] of changes.tallies) {
      const write = deps.counters?.[counter];
      if (!write) throw new Error(`no writer for counter ${counter}`);
      const net = [...moves].filter(([, d]) => d !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      if (net.length > 0) await write(tx, orgId, net);
    }
    // The events' sequences come from the same counter row (D11: its lock orders them as the commits).
    const lastSequence = await bumpVersions(tx, orgId, changes.kinds(), drafts.length);
    if (drafts.length > 0) await deps.outbox!.write(tx, orgId, drafts, lastSequence - drafts.length + 1);
  }

  async function inOwnTransaction<R>(orgId: string, work: (tx: Executor, changes: ChangeSet) => Promise<R>, committed: ChangeSet, retry?: boolean): Promise<R> {
    return retryingUniqueRace(retry, async () => {
      const changes = new ChangeSet();
      const result = await store.db.transaction().execute(async (tx) => {
        const r = await work(tx, changes);
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
    /** The engine (PostgreSQL answers a load read in one statement: src/modules/loads/loads.documents.ts). */
    dialect: store.dialect,

    /** One write in its own transaction. */
    async write<R>(orgId: string, work: (tx: Executor, changes: ChangeSet) => Promise<R>, opts: WriteOptions = {}): Promise<R> {
      const committed = new ChangeSet();
      const result = await inOwnTransaction(orgId, work, committed, opts.retryUniqueRace);
      await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      return result;
    },

    /**
     * A batch: `body` runs its items through the runner it is given, in one transaction with each item
     * in a savepoint (whole or nothing per item, never undoing another; a commit per item cost more
     * than the item's writes on both engines). `prepare` runs first in the transaction (reads for all
     * items at once). On PostgreSQL the organization's batches take turns (an advisory lock): two
     * batches never hold each other's rows, and counters are taken last (seal), so a batch and single
     * writes cannot deadlock either. The after-commit work runs once; a failed closing commit is thrown
     * after it (no item was saved).
     */
    async batch<R>(
      orgId: string,
      body: (item: ItemRunner) => Promise<R>,
      opts: Pick<WriteOptions, 'analyticsRun'> & { prepare?: (tx: Executor) => Promise<void> } = {},
    ): Promise<R> {
      const committed = new ChangeSet();
      // PostgreSQL first runs the items without savepoints (a savepoint and its release are two round
      // trips per item, a quarter of a changed load's): when every item succeeds that is the same
      // outcome. The first item to fail rolls the whole attempt back and the batch runs again with a
      // savepoint per item, so a failed item still leaves nothing and undoes no other (D6); a batch
      // with failures costs its successful items twice. SQLite's savepoints cost microseconds.
      const attempt = async (savepoints: boolean): Promise<R> => {
        const pending = new ChangeSet();
        const result = await store.db.transaction().execute(async (tx) => {
          if (store.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${BATCH_LOCK_CLASS}, hashtext(${orgId}))`.execute(tx);
          await opts.prepare?.(tx);
          let failed = false;
          const r = await body((work, o) => {
            if (failed) throw new BatchRestart();
            if (!savepoints) {
              const changes = new ChangeSet();
              // The body sees the item's own error; the next item, or the end of the body, restarts.
              return work(tx, changes).then(
                (out) => (pending.absorb(changes), out),
                (err: unknown) => {
                  failed = true;
                  throw err;
                },
              );
            }
            return retryingUniqueRace(o?.retryUniqueRace, async () => {
              const changes = new ChangeSet();
              const out = await inSavepoint(tx, () => work(tx, changes));
              pending.absorb(changes);
              return out;
            });
          });
          if (failed) throw new BatchRestart();
          await seal(tx, orgId, pending);
          return r;
        });
        committed.absorb(pending);
        return result;
      };
      try {
        if (store.dialect !== 'postgres') return await attempt(true);
        try {
          return await attempt(false);
        } catch (err) {
          if (!(err instanceof BatchRestart)) throw err;
          return await attempt(true);
        }
      } finally {
        await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      }
    },
  };
}

export type WritePipeline = ReturnType<typeof writePipeline>;
