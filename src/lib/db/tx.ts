import { CompiledQuery } from 'kysely';
import type { DataStore, Executor } from './index.js';
import { isUniqueViolation } from './errors.js';

// One name for every item's savepoint: items run one after another, and a fixed text keeps the three
// statements in the statement cache (a new name per item would compile them anew and crowd it).
const SAVEPOINT = CompiledQuery.raw('savepoint lb_item');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint lb_item');
const RELEASE = CompiledQuery.raw('release savepoint lb_item');

/**
 * Runs `work` in its own transaction: everything it writes commits together or not at all. Given an
 * `outer` transaction (a SQLite batch, see batchTransaction), `work` runs in a savepoint of it instead:
 * a failure rolls back to the savepoint, undoing this work only.
 */
export async function inTransaction<T>(store: DataStore, work: (tx: Executor) => Promise<T>, outer?: Executor): Promise<T> {
  if (!outer) return store.db.transaction().execute(work);
  await outer.executeQuery(SAVEPOINT);
  let result: T;
  try {
    result = await work(outer);
  } catch (err) {
    await outer.executeQuery(ROLLBACK_TO);
    await outer.executeQuery(RELEASE);
    throw err;
  }
  await outer.executeQuery(RELEASE);
  return result;
}

/** One transaction around a whole batch, its items in savepoints (SQLite: see batchTransaction). */
export type BatchTransaction = <R>(work: (tx: Executor) => Promise<R>) => Promise<R>;

/**
 * SQLite commits a write transaction by appending its pages to the WAL: about 0.2 ms for a load with
 * its stops, rates and lane history, a fifth of a 100-load batch when every item commits alone. There
 * the batch runs in one transaction with each item in a savepoint, so an item still happens whole or
 * not at all and one item's failure undoes nothing else; if the final commit fails, no item is
 * reported saved. SQLite writes one at a time anyway, so nothing waits longer for locks. PostgreSQL
 * keeps a transaction per item (holding every item's row locks until the batch ends would make
 * concurrent batches wait on, and deadlock with, each other).
 */
export function batchTransaction(store: DataStore): BatchTransaction | undefined {
  if (store.dialect !== 'sqlite') return undefined;
  return (work) => store.db.transaction().execute(work);
}

/**
 * Upserts race: two requests may both see "absent" and both insert; the loser hits the unique index.
 * Its transaction is rolled back and run again once, when it finds the winner's row and updates it.
 */
export async function retryOnUniqueRace<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return attempt();
  }
}
