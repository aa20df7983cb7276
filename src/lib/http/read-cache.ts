/**
 * Serialised answers of `GET /<resource>/{ref}` and of the lists reused while the database is unchanged.
 *
 * Every entry belongs to the database's change token (DataStore.changeToken: on SQLite this
 * connection's row changes plus other connections' commits) taken before the answer was read. A
 * different token at the next request means something was written somewhere since; every entry is
 * then dropped at once. A write therefore shows from the very next request (read-your-writes), a
 * revoked key or a deleted record is never answered from memory, and entries of one organization are
 * keyed by its id, so they can only be answered to that organization (lists by their query string as
 * sent). Integrators polling a load or a page between their writes are answered from memory; during a
 * steady stream of writes the cache simply misses (BENCHMARKS.md gives both figures). Where no cheap
 * token exists (PostgreSQL) nothing is kept.
 *
 * Bounded by the total length of the kept bodies (8 Mi characters by default, 2,000 loads and 100
 * pages take about 4 Mi): past it the cache starts again.
 */
export interface ReadCache {
  /** The token to read under (null: do not cache); entries of an older token are dropped. */
  begin(): string | null;
  get(key: string): string | undefined;
  /** Keeps `body` unless the token changed since `begin` returned `token`. */
  set(token: string | null, key: string, body: string): void;
}

export function readCache(changeToken: () => string | null, opts: { enabled?: boolean; maxChars?: number } = {}): ReadCache {
  const maxChars = opts.maxChars ?? 8 * 1024 * 1024;
  let current: string | null = null;
  const bodies = new Map<string, string>();
  let chars = 0;
  const reset = () => {
    bodies.clear();
    chars = 0;
  };
  if (opts.enabled === false) return { begin: () => null, get: () => undefined, set: () => {} };
  return {
    begin() {
      const token = changeToken();
      if (token !== current) {
        reset();
        current = token;
      }
      return token;
    },
    get: (key) => bodies.get(key),
    set(token, key, body) {
      if (token === null || token !== current) return;
      if (chars + body.length > maxChars) reset();
      bodies.set(key, body);
      chars += body.length;
    },
  };
}
