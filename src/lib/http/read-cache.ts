import type { DataSnapshot } from '../db/index.js';
import type { OrgVersions, VersionedKind } from '../db/versions.js';

/**
 * Serialised answers of `GET /<resource>/{ref}` and of the lists, reused while nothing they depend on
 * changed.
 *
 * An entry remembers the request snapshot's token it was kept under and the organization's counters
 * (src/lib/db/versions.ts) of the kinds of record it depends on, as of its data (an answer is kept only
 * when nothing was written between the request's arrival and reading those counters). Same token:
 * nothing was written anywhere since, a hit at once. Another token: the organization's counters are
 * read (once per request) and the entry still holds when its kinds' counters are unchanged; so a write
 * in one organization, or to one kind (a load), leaves other organizations' and other kinds' (the
 * customers) kept answers in place. Every write moves its counters in its own transaction, whichever
 * process made it, so an answer is never older than what was committed before the request arrived.
 * Entries are keyed by organization. Bounded by the total length of the kept bodies; past it the cache
 * starts again.
 */
export interface ReadCache {
  /** The kept body for `key`, if it still holds under `snapshot`. */
  lookup(snapshot: DataSnapshot, orgId: string, key: string): string | undefined | Promise<string | undefined>;
  /** Keeps `body`, read under `snapshot` with the organization's counters `versions` of that moment. */
  keep(snapshot: DataSnapshot, versions: OrgVersions, orgId: string, key: string, kinds: readonly VersionedKind[], body: string): void;
  readonly enabled: boolean;
}

interface Entry {
  orgId: string;
  token: string;
  kinds: readonly VersionedKind[];
  counters: number[];
  body: string;
}

export interface CacheCounters {
  hit(): void;
  miss(): void;
}

const stillHolds = (entry: Entry, versions: OrgVersions) => entry.kinds.every((k, i) => versions[k] === entry.counters[i]);

export function readCache(opts: { enabled?: boolean; maxChars?: number; counters?: CacheCounters } = {}): ReadCache {
  const maxChars = opts.maxChars ?? 8 * 1024 * 1024;
  const counters = opts.counters ?? { hit() {}, miss() {} };
  const entries = new Map<string, Entry>();
  let chars = 0;
  if (opts.enabled === false) return { enabled: false, lookup: () => undefined, keep: () => {} };

  const drop = (key: string, entry: Entry) => {
    entries.delete(key);
    chars -= entry.body.length;
  };
  const answer = (entry: Entry | undefined) => {
    if (entry) counters.hit();
    else counters.miss();
    return entry?.body;
  };

  return {
    enabled: true,
    lookup(snapshot, orgId, key) {
      const fullKey = `${orgId}\u0000${key}`;
      const entry = entries.get(fullKey);
      if (!entry || entry.token === snapshot.token) return answer(entry);
      return snapshot.versions(orgId).then((versions) => {
        if (!stillHolds(entry, versions)) {
          if (entries.get(fullKey) === entry) drop(fullKey, entry);
          return answer(undefined);
        }
        entry.token = snapshot.token;
        return answer(entry);
      });
    },
    keep(snapshot, versions, orgId, key, kinds, body) {
      if (chars + body.length > maxChars) {
        entries.clear();
        chars = 0;
      }
      const fullKey = `${orgId}\u0000${key}`;
      const previous = entries.get(fullKey);
      if (previous) drop(fullKey, previous);
      entries.set(fullKey, { orgId, token: snapshot.token, kinds, counters: kinds.map((k) => versions[k]), body });
      chars += body.length;
    },
  };
}
