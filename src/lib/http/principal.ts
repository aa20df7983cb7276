import type { Scope } from './scopes.js';

/** Who is calling: resolved from the API key on every request. */
export interface Principal {
  orgId: string;
  keyId: string;
  scopes: ReadonlySet<Scope>;
  perMinute: number;
  perDay: number;
}
