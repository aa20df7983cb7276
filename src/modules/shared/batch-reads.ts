import type { Executor } from '../../lib/db/index.js';

/**
 * Rows a batch reads for all its items at once, at its start, inside its transaction (one statement
 * per kind instead of a point read per item: src/modules/loads/loads.batch.ts). Repos ask here before
 * reading. A kind the batch writes is served once per key (a later item naming the same record reads
 * it again, seeing the earlier item's write); a kind it only reads is served every time, and a miss on
 * it reads the database (a record created since the batch began is still found).
 */
export class BatchReads {
  private readonly kinds = new Map<string, { once: boolean; rows: Map<string, unknown> }>();

  /** `rows` by key for `kind`; `found` lists keys looked for, absent ones remembered as absent. */
  set(kind: string, once: boolean, keys: Iterable<string>, rows: Map<string, unknown>): void {
    const all = new Map<string, unknown>();
    for (const k of keys) all.set(k, rows.get(k) ?? null);
    this.kinds.set(kind, { once, rows: all });
  }

  /** `undefined`: not read for the batch (read it); `null`: read and absent; else the row. */
  take<R>(kind: string, key: string): R | null | undefined {
    const entry = this.kinds.get(kind);
    if (!entry || !entry.rows.has(key)) return undefined;
    const row = entry.rows.get(key) as R | null;
    if (entry.once) entry.rows.delete(key);
    else if (row === null) return undefined;
    return row;
  }
}

// A batch's transaction is one executor object for all its items.
const attached = new WeakMap<object, BatchReads>();

export function attachBatchReads(tx: Executor, reads: BatchReads): void {
  attached.set(tx, reads);
}

export function batchReadsOf(tx: Executor): BatchReads | undefined {
  return attached.get(tx);
}
