import type { DataStore, Executor } from './index.js';
import { isUniqueViolation } from './errors.js';

/** Runs `work` in its own transaction: everything it writes commits together or not at all. */
export function inTransaction<T>(store: DataStore, work: (tx: Executor) => Promise<T>): Promise<T> {
  return store.db.transaction().execute(work);
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
