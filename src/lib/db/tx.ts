import type { DataStore, Executor } from './index.js';

/** Runs `work` in its own transaction: everything it writes commits together or not at all. */
export function inTransaction<T>(store: DataStore, work: (tx: Executor) => Promise<T>): Promise<T> {
  return store.db.transaction().execute(work);
}
