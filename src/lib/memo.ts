/**
 * A map kept in memory with bounds, least recently used first out: at most `maxEntries` entries and, when
 * `weight` is given, at most `maxWeight` in all (an entry heavier than that on its own is not kept).
 * `get` moves an entry to the end; `set` replaces what the key held (its weight given back first), so two
 * requests that both missed and both `set` the same key keep one entry and the right total.
 */
export interface BoundedMemo<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  readonly size: number;
  /** The weight of everything kept. */
  readonly weight: number;
}

export function boundedMemo<V>(opts: { maxEntries: number; maxWeight?: number; weight?: (value: V) => number }): BoundedMemo<V> {
  const entries = new Map<string, V>();
  const weightOf = opts.weight ?? (() => 0);
  const maxWeight = opts.maxWeight ?? Number.POSITIVE_INFINITY;
  let total = 0;
  const drop = (key: string) => {
    const held = entries.get(key);
    if (held === undefined) return;
    entries.delete(key);
    total -= weightOf(held);
  };
  return {
    get(key) {
      const kept = entries.get(key);
      if (kept !== undefined) {
        entries.delete(key);
        entries.set(key, kept);
      }
      return kept;
    },
    set(key, value) {
      drop(key);
      const w = weightOf(value);
      if (w > maxWeight) return;
      entries.set(key, value);
      total += w;
      while (entries.size > opts.maxEntries || total > maxWeight) drop(entries.keys().next().value!);
    },
    get size() {
      return entries.size;
    },
    get weight() {
      return total;
    },
  };
}
