import { sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';

// Locks and transaction shapes, the one place that knows how each engine takes them: PostgreSQL runs
// writers side by side and locks rows; SQLite has one writer at a time (its transactions are serial).

/**
 * How a batch's transaction starts on this engine. PostgreSQL: the organization's batches take turns (an
 * advisory lock held to commit, so two batches never hold each other's rows), and no lock wait outlives
 * the request's deadline (`lock_timeout`: the batch answers 503 instead of running past it). SQLite runs
 * one write transaction at a time already.
 */
export async function beginBatch(tx: Executor, orgId: string, remainingMs: number): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  // One round trip: the bound on lock waits is set (in a subquery kept apart by `offset 0`, so it runs
  // first) before the lock is waited for. '0' is no bound.
  const timeout = Number.isFinite(remainingMs) ? `${Math.max(1, Math.ceil(remainingMs))}ms` : '0';
  await sql`select pg_advisory_xact_lock(${BATCH_LOCK_CLASS}, hashtext(${orgId})) from (select set_config('lock_timeout', ${timeout}, true) offset 0) bound`.execute(
    tx,
  );
}

// The advisory lock class of an organization's batches (PostgreSQL), beside the organization's hash.
const BATCH_LOCK_CLASS = 7215;

/**
 * An organization's recommendations follow-up takes turns across processes (PostgreSQL: an advisory
 * lock held to commit, of a class of its own, so it never waits for a batch nor a batch for it; the
 * counters row, which writers lock at seal, is left to the end). SQLite's transactions are serial already.
 */
export async function holdFollowUp(tx: Executor, orgId: string): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(${FOLLOW_UP_LOCK_CLASS}, hashtext(${orgId}))`.execute(tx);
}

const FOLLOW_UP_LOCK_CLASS = 7216;

/**
 * An organization's lane stats change one transaction at a time (PostgreSQL: an advisory lock held to
 * commit, of a class of its own), so a recount never overwrites what another writer added meanwhile.
 * Taken by a write as it finishes with the history, before the counters row it locks at seal. SQLite's
 * transactions are serial already.
 */
export async function holdLaneStats(tx: Executor, orgId: string): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(${LANE_STATS_LOCK_CLASS}, hashtext(${orgId}))`.execute(tx);
}

const LANE_STATS_LOCK_CLASS = 7217;

/**
 * Whether a savepoint costs round trips (PostgreSQL: two per item, a quarter of a changed load's) or
 * microseconds (SQLite, in process). A batch of immediate writes runs its items without savepoints where
 * they cost, and again with them only when an item fails.
 */
export const savepointsAreCheap = (tx: Executor): boolean => dialectOf(tx) !== 'postgres';

/** Whether reads of rows a batch will change lock them (PostgreSQL: FOR UPDATE, in reference order). */
export const locksRowsForUpdate = (tx: Executor): boolean => dialectOf(tx) === 'postgres';

/** ` for update` where the engine locks the rows a transaction reads to change (PostgreSQL); nothing on SQLite, whose writer is alone. */
export const forUpdate = (tx: Executor) => (dialectOf(tx) === 'postgres' ? sql` for update` : sql``);

/** A select that locks the rows it reads until the transaction ends (PostgreSQL); as it is on SQLite. */
export const lockedRead = <Q extends { forUpdate(): Q }>(tx: Executor, q: Q): Q => (dialectOf(tx) === 'postgres' ? q.forUpdate() : q);

/** A select of rows to claim: locked, skipping those another process holds (PostgreSQL); as it is on SQLite. */
export const claimingRead = <Q extends { forUpdate(): { skipLocked(): Q } }>(tx: Executor, q: Q): Q =>
  dialectOf(tx) === 'postgres' ? q.forUpdate().skipLocked() : q;

/** `for update of <alias> skip locked` on PostgreSQL (a claim query's CTE); nothing on SQLite. */
export const skipLockedOf = (tx: Executor, alias: string) => (dialectOf(tx) === 'postgres' ? sql`for update of ${sql.raw(alias)} skip locked` : sql``);

/**
 * The organization's row, locked to the end of the transaction (PostgreSQL): what is counted next (its
 * admins, its imports awaiting upload, its webhook endpoints) cannot change under another transaction
 * that counts the same way. SQLite serialises writers already.
 */
export async function holdOrganization(tx: Executor, orgId: string): Promise<void> {
  await lockedRead(tx, tx.selectFrom('organizations').select('id').where('id', '=', orgId)).execute();
}
