import { CompiledQuery } from 'kysely';
import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { bumpVersions, type VersionedKind } from '../../lib/db/versions.js';
import { laneKeyId, type LaneKey } from '../../domain/lane.js';

export type ChangeOp = 'created' | 'updated' | 'deleted';

export interface RecordChange {
  kind: VersionedKind;
  op: ChangeOp;
  id: string;
  /** null for records callers do not name (market rate snapshots). */
  external_reference_id: string | null;
}

/** What one unit of work (a single write, or one batch item) changed, collected inside its transaction. */
export class ChangeSet {
  readonly records: RecordChange[] = [];
  readonly lanes = new Map<string, LaneKey>();

  record(change: RecordChange, lanes: readonly LaneKey[] = []): void {
    this.records.push(change);
    this.touchLanes(lanes);
  }

  /** Lanes whose history moved (their stats are refreshed after commit). */
  touchLanes(lanes: readonly LaneKey[]): void {
    for (const k of lanes) this.lanes.set(laneKeyId(k), k);
  }

  absorb(other: ChangeSet): void {
    this.records.push(...other.records);
    for (const [id, k] of other.lanes) this.lanes.set(id, k);
  }

  kinds(): Set<VersionedKind> {
    return new Set(this.records.map((r) => r.kind));
  }
}

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
export function writePipeline(deps: { store: DataStore; afterCommit: AfterCommit }) {
  const { store } = deps;

  async function seal(tx: Executor, orgId: string, changes: ChangeSet): Promise<void> {
    await bumpVersions(tx, orgId, changes.kinds());
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

    /** One write in its own transaction. */
    async write<R>(orgId: string, work: (tx: Executor, changes: ChangeSet) => Promise<R>, opts: WriteOptions = {}): Promise<R> {
      const committed = new ChangeSet();
      const result = await inOwnTransaction(orgId, work, committed, opts.retryUniqueRace);
      await deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      return result;
    },

    /**
     * A batch: `body` runs its items through the runner it is given. SQLite: one transaction with each
     * item in a savepoint (a commit costs about as much as a load's writes; SQLite writes one at a time
     * anyway). PostgreSQL: a transaction per item (holding every item's locks to the end would make
     * concurrent batches wait on, and deadlock with, each other). The after-commit work runs once; a
     * failed closing commit (SQLite) is thrown after it.
     */
    async batch<R>(orgId: string, body: (item: ItemRunner) => Promise<R>, opts: Pick<WriteOptions, 'analyticsRun'> = {}): Promise<R> {
      const committed = new ChangeSet();
      const after = () => deps.afterCommit(orgId, committed, { analyticsRun: opts.analyticsRun ?? false });
      if (store.dialect !== 'sqlite') {
        const result = await body((work, o) => inOwnTransaction(orgId, work, committed, o?.retryUniqueRace));
        await after();
        return result;
      }
      const pending = new ChangeSet();
      try {
        const result = await store.db.transaction().execute(async (tx) => {
          const r = await body((work, o) =>
            retryingUniqueRace(o?.retryUniqueRace, async () => {
              const changes = new ChangeSet();
              const out = await inSavepoint(tx, () => work(tx, changes));
              pending.absorb(changes);
              return out;
            }),
          );
          await seal(tx, orgId, pending);
          return r;
        });
        committed.absorb(pending);
        return result;
      } finally {
        await after();
      }
    },
  };
}

export type WritePipeline = ReturnType<typeof writePipeline>;
