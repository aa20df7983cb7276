import type { DataStore } from '../../lib/db/index.js';
import { type Clock, systemClock } from '../../lib/clock.js';
import { ValidationError } from '../../lib/http/errors.js';
import { SCOPES, isScope, type Scope } from '../../lib/http/scopes.js';
import { accountsRepo } from './accounts.repo.js';
import { apiKeys } from './api-keys.js';
import { keyCheck, type KeyCacheCounters } from './key-check.js';
import { organizations } from './organizations.js';
import { users } from './users.js';

export type { Principal } from '../../lib/http/principal.js';
export { DEFAULT_PER_DAY, DEFAULT_PER_MINUTE, MAX_GRACE_HOURS, MAX_LIMIT, parseExpiry, type CreateKeyInput, type KeySummary } from './api-keys.js';
export { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordProblem, type SignedInUser } from './users.js';

export function parseScopes(text: string): Scope[] {
  if (text.trim().toLowerCase() === 'all') return [...SCOPES];
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = parts.filter((p) => !isScope(p));
  if (parts.length === 0 || unknown.length > 0) {
    throw ValidationError.single(
      ['scopes'],
      `Unknown scope${unknown.length === 1 ? '' : 's'} ${unknown.map((u) => `'${u}'`).join(', ') || "''"}: use 'all' or a comma-separated list of ${SCOPES.join(', ')}`,
    );
  }
  return [...new Set(parts as Scope[])];
}

/** Organizations, users, API keys and the per-request key check, as one service. */
export function accountsService(store: DataStore, clock: Clock = systemClock, keyCacheCounters?: KeyCacheCounters) {
  const repo = accountsRepo(store.db);
  const orgs = organizations(store, repo, clock);
  const { require: _require, ensureIntegration: _ensure, ...orgApi } = orgs;
  return {
    ...orgApi,
    ...users(store, repo, clock, orgs),
    ...apiKeys(store, repo, clock, orgs),
    ...keyCheck(repo, clock, keyCacheCounters),
  };
}

export type AccountsService = ReturnType<typeof accountsService>;
