import type { DataSnapshot } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { KeyGuard, KeyState, Principal } from '../../lib/http/principal.js';
import { UnauthorizedError } from '../../lib/http/errors.js';
import { isScope } from '../../lib/http/scopes.js';
import type { AccountsRepo } from './accounts.repo.js';
import { KEY_PATTERN, constantTimeEqualHex, hashApiKey } from './secrets.js';

// Writing last_used_at on every request would turn every read into a write; once a minute is enough.
const TOUCH_INTERVAL_MS = 60_000;
const MAX_KEPT = 10_000;

interface KeptKey {
  principal: Principal;
  /** The snapshot token it was last found valid under. */
  token: string;
  /** The organization's api_keys counter read before the key row was; null on first sight (org unknown then). */
  keysVersion: number | null;
}

/**
 * The 401 of a key past its end (docs/api.md, "Authentication and scopes"): it says so, and when, so an
 * integrator knows to ask for a new key rather than look for a typo. A key rotated with a grace period
 * ends the same way.
 */
export function expiredKeyError(expiresAt: number): UnauthorizedError {
  return new UnauthorizedError(`API key expired at ${toIso(new Date(expiresAt))}: ask an admin of your organization for a new key`);
}

export interface KeyCacheCounters {
  hit(): void;
  miss(): void;
}

/** The key check's state: what it reads with, and the keys it keeps (the functions below take it). */
interface KeyCache {
  repo: AccountsRepo;
  clock: Clock;
  /** Keys found valid under a snapshot, by hash. */
  kept: Map<string, KeptKey>;
  /**
   * Keys found valid on this instance, for routes that fold the key check into their data statement
   * (PostgreSQL, where no cheap change token exists): the principal comes from memory and the route's
   * one statement says whether the key is still unrevoked, so a revocation committed before the
   * request's statement fails it on every instance, at no extra round trip.
   */
  folded: Map<string, Principal>;
}

async function read(k: KeyCache, hash: string, snapshot: DataSnapshot | null, previous: KeptKey | undefined): Promise<Principal | null> {
  // The counter is read before the row, so a revocation committed in between is seen next time.
  const keysVersion = snapshot && previous ? (await snapshot.versions(previous.principal.orgId)).api_keys : null;
  const row = await k.repo.findKeyByHash(hash);
  if (!row || row.revoked_at || !constantTimeEqualHex(row.key_hash, hash)) {
    k.kept.delete(hash);
    return null;
  }
  const principal: Principal = {
    orgId: row.org_id,
    keyId: row.id,
    keyName: row.name,
    expiresAt: row.expires_at ? Date.parse(row.expires_at) : null,
    scopes: new Set(row.scopes.split(',').filter(isScope)),
    perMinute: row.per_minute,
    perDay: row.per_day,
    strict: Number(row.strict) === 1,
  };
  if (snapshot) {
    if (k.kept.size >= MAX_KEPT) k.kept.clear();
    k.kept.set(hash, { principal, token: snapshot.token, keysVersion: previous?.principal.orgId === row.org_id ? keysVersion : null });
  }
  return principal;
}

function guardFor(k: KeyCache, hash: string, principal: Principal): KeyGuard {
  let settled = false;
  return {
    keyId: principal.keyId,
    get settled() {
      return settled;
    },
    async confirm() {
      settled = true;
      if ((await readForFolding(k, hash)) === null) throw new UnauthorizedError();
    },
    settle(found: KeyState | null | undefined) {
      if (found === undefined) return;
      settled = true;
      if (found === null) {
        k.folded.delete(hash);
        k.kept.delete(hash);
        throw new UnauthorizedError();
      }
      // An end set since this key was kept (a rotation with grace on another instance) holds at once.
      const expiresAt = found.expires_at ? Date.parse(found.expires_at) : null;
      if (expiresAt !== null && k.clock.now().getTime() >= expiresAt) {
        k.folded.delete(hash);
        throw expiredKeyError(expiresAt);
      }
      // New limits (changed on any instance) apply from the next request on.
      if (
        found.per_minute !== principal.perMinute ||
        found.per_day !== principal.perDay ||
        expiresAt !== principal.expiresAt ||
        (Number(found.strict) === 1) !== (principal.strict === true)
      ) {
        k.folded.set(hash, { ...principal, perMinute: found.per_minute, perDay: found.per_day, expiresAt, strict: Number(found.strict) === 1 });
      }
    },
  };
}

async function readForFolding(k: KeyCache, hash: string): Promise<Principal | null> {
  const principal = await read(k, hash, null, undefined);
  if (principal) {
    if (k.folded.size >= MAX_KEPT) k.folded.clear();
    k.folded.set(hash, principal);
  } else k.folded.delete(hash);
  return principal;
}

/**
 * The per-request key check: a key is looked up by its hash, and a revoked key fails from the next
 * request on, on every instance. A key checked before is reused while the request's snapshot shows
 * nothing written since, or its organization's api_keys counter unchanged (every key write moves it
 * in its own transaction); otherwise it is read again.
 */
export function keyCheck(repo: AccountsRepo, clock: Clock, counters: KeyCacheCounters = { hit() {}, miss() {} }) {
  const lastTouched = new Map<string, number>();
  const k: KeyCache = { repo, clock, kept: new Map(), folded: new Map() };
  const { kept, folded } = k;

  async function stillValid(entry: KeptKey, snapshot: DataSnapshot): Promise<boolean> {
    if (entry.token === snapshot.token) return true;
    if (entry.keysVersion === null || (await snapshot.versions(entry.principal.orgId)).api_keys !== entry.keysVersion) return false;
    entry.token = snapshot.token;
    return true;
  }

  /** Expiry is a matter of time, not of a write: checked on every request, kept key or not. */
  function checkExpiry(principal: Principal) {
    if (principal.expiresAt !== null && clock.now().getTime() >= principal.expiresAt) throw expiredKeyError(principal.expiresAt);
  }

  function touch(principal: Principal) {
    const now = clock.now().getTime();
    if (now - (lastTouched.get(principal.keyId) ?? 0) <= TOUCH_INTERVAL_MS) return;
    lastTouched.set(principal.keyId, now);
    repo.touchKey(principal.keyId, toIso(clock.now())).catch(() => lastTouched.delete(principal.keyId));
  }

  return {
    /**
     * For a route that checks the key in its own data statement: a key already found valid here comes
     * back with a guard for that statement (no read now); any other is read now (and the guard is null).
     * `confirm` reads it now after all (before answering an error the route's statement will not run for).
     */
    async authenticateFolded(presented: string | undefined): Promise<{ principal: Principal; guard: KeyGuard | null } | null> {
      if (!presented || !KEY_PATTERN.test(presented)) return null;
      const hash = hashApiKey(presented);
      const known = folded.get(hash);
      counters[known ? 'hit' : 'miss']();
      const principal = known ?? (await readForFolding(k, hash));
      if (!principal) return null;
      checkExpiry(principal);
      touch(principal);
      return { principal, guard: known ? guardFor(k, hash, known) : null };
    },

    async authenticate(presented: string | undefined, snapshot: DataSnapshot | null = null): Promise<Principal | null> {
      if (!presented || !KEY_PATTERN.test(presented)) return null;
      const hash = hashApiKey(presented);
      const entry = snapshot ? kept.get(hash) : undefined;
      let principal: Principal | null;
      if (entry && snapshot && (await stillValid(entry, snapshot))) {
        counters.hit();
        principal = entry.principal;
      } else {
        if (snapshot) counters.miss();
        principal = await read(k, hash, snapshot, entry);
      }
      if (principal) {
        checkExpiry(principal);
        touch(principal);
      }
      return principal;
    },
  };
}
