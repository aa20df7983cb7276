import type { Scope } from './scopes.js';

/** Who is calling: resolved from the API key on every request. */
export interface Principal {
  orgId: string;
  keyId: string;
  /** The key's name (the audit log's actor). */
  keyName: string;
  /** When the key stops working (ms since the epoch; its expires_at, or a rotated key's grace end); null: never. */
  expiresAt: number | null;
  scopes: ReadonlySet<Scope>;
  perMinute: number;
  perDay: number;
  /** The key answers unknown fields 422 on every request (a strict key). */
  strict?: boolean;
}

/** What a data statement found of the caller's key (its current limits); null when it is revoked. */
export interface KeyState {
  per_minute: number;
  per_day: number;
  expires_at?: string | null;
  strict?: number;
}

/**
 * A key check left to the route's data statement (PostgreSQL, routes that fold it: see auth.ts). The
 * route passes `keyId` into its one statement and hands back what the statement found; `settle` throws
 * the 401 for a revoked key (and forgets it), so the answer never leaves for a key revoked before it.
 */
export interface KeyGuard {
  readonly keyId: string;
  /** Whether a statement has said what it found of the key. */
  readonly settled: boolean;
  settle(found: KeyState | null | undefined): void;
  /** Reads the key now (a route that ends before its statement ran): throws the 401 when revoked. */
  confirm(): Promise<void>;
}
