import type { DataStore } from '../../lib/db/index.js';
import { inTransaction } from '../../lib/db/tx.js';
import type { ApiKeysTable } from '../../lib/db/types.js';
import { bumpVersions } from '../../lib/db/versions.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, NotFoundByIdError, ValidationError } from '../../lib/http/errors.js';
import { isScope, type Scope } from '../../lib/http/scopes.js';
import type { AccountsRepo } from './accounts.repo.js';
import { displayPrefix, generateApiKey, hashApiKey } from './secrets.js';

export const DEFAULT_PER_MINUTE = 100;
export const DEFAULT_PER_DAY = 10_000;
/** Limits are stored in 32-bit integer columns (PostgreSQL `integer`). */
export const MAX_LIMIT = 2_147_483_647;

const API_KEYS = new Set(['api_keys'] as const);

export interface KeySummary {
  id: string;
  name: string;
  external_system: string;
  key_prefix: string;
  scopes: Scope[];
  per_minute: number;
  per_day: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  status: 'active' | 'revoked';
  /** D16: unknown fields are answered 422 on every request of this key. */
  strict: boolean;
}

export interface CreateKeyInput {
  name: string;
  externalSystem: string;
  scopes: Scope[];
  perMinute?: number;
  perDay?: number;
  strict?: boolean;
}

function checkLimits(perMinute: number, perDay: number) {
  for (const [field, v] of [['per_minute', perMinute], ['per_day', perDay]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_LIMIT) {
      throw ValidationError.single([field], `${field} must be a whole number from 1 to ${MAX_LIMIT}`);
    }
  }
}

function summarize(row: ApiKeysTable): KeySummary {
  return {
    id: row.id,
    name: row.name,
    external_system: row.external_system,
    key_prefix: row.key_prefix,
    scopes: row.scopes.split(',').filter(isScope),
    per_minute: row.per_minute,
    per_day: row.per_day,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
    status: row.revoked_at ? 'revoked' : 'active',
    strict: Number(row.strict) === 1,
  };
}

/**
 * API keys (D9): shown once, stored as a hash. Every write moves the organization's `api_keys`
 * counter in its transaction, so a key checked and kept in memory is read again after any change.
 */
export function apiKeys(store: DataStore, repo: AccountsRepo, clock: Clock, org: { require(orgId: string): Promise<unknown>; ensureIntegration(orgId: string): Promise<void> }) {
  function keyRow(orgId: string, input: CreateKeyInput): { row: ApiKeysTable; key: string } {
    const perMinute = input.perMinute ?? DEFAULT_PER_MINUTE;
    const perDay = input.perDay ?? DEFAULT_PER_DAY;
    checkLimits(perMinute, perDay);
    if (!input.name.trim()) throw ValidationError.single(['name'], 'name must not be empty');
    if (!input.externalSystem.trim()) throw ValidationError.single(['external_system'], 'external_system must not be empty');
    const key = generateApiKey();
    const row: ApiKeysTable = {
      id: newId('key'),
      org_id: orgId,
      name: input.name.trim(),
      external_system: input.externalSystem.trim(),
      key_hash: hashApiKey(key),
      key_prefix: displayPrefix(key),
      scopes: input.scopes.join(','),
      per_minute: perMinute,
      per_day: perDay,
      created_at: toIso(clock.now()),
      last_used_at: null,
      revoked_at: null,
      replaced_by_key_id: null,
      strict: input.strict ? 1 : 0,
    };
    return { row, key };
  }

  async function existingKey(orgId: string, keyId: string): Promise<ApiKeysTable> {
    const row = await repo.findKey(orgId, keyId);
    if (!row) throw new NotFoundByIdError('API key', keyId);
    return row;
  }

  return {
    async createKey(orgId: string, input: CreateKeyInput, opts: { connectIntegration: boolean } = { connectIntegration: true }) {
      await org.require(orgId);
      if (opts.connectIntegration) await org.ensureIntegration(orgId);
      else if (!(await repo.findIntegration(orgId))) {
        throw new ConflictError('Connect the TMS API integration before creating API keys');
      }
      const { row, key } = keyRow(orgId, input);
      await inTransaction(store, async (tx) => {
        await repo.insertKey(row, tx);
        await bumpVersions(tx, orgId, API_KEYS);
      });
      // D10's shape; `strict` only on a strict key (D16).
      return { id: row.id, key, scopes: input.scopes, per_minute: row.per_minute, per_day: row.per_day, ...(row.strict === 1 ? { strict: true as const } : {}) };
    },

    async revokeKey(orgId: string, keyId: string) {
      const existing = await existingKey(orgId, keyId);
      if (!existing.revoked_at) {
        await inTransaction(store, async (tx) => {
          await repo.revokeKey(orgId, keyId, toIso(clock.now()), null, tx);
          await bumpVersions(tx, orgId, API_KEYS);
        });
      }
      return summarize((await repo.findKey(orgId, keyId))!);
    },

    /** A new key with the same settings; the old one is revoked at once. */
    async rotateKey(orgId: string, keyId: string) {
      const old = await existingKey(orgId, keyId);
      if (old.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked and cannot be rotated`);
      const { row, key } = keyRow(orgId, {
        name: old.name,
        externalSystem: old.external_system,
        scopes: old.scopes.split(',').filter(isScope),
        perMinute: old.per_minute,
        perDay: old.per_day,
        strict: Number(old.strict) === 1,
      });
      await inTransaction(store, async (tx) => {
        await repo.insertKey(row, tx);
        await repo.revokeKey(orgId, keyId, toIso(clock.now()), row.id, tx);
        await bumpVersions(tx, orgId, API_KEYS);
      });
      return { id: row.id, key };
    },

    async listKeys(orgId: string) {
      await org.require(orgId);
      return (await repo.listKeys(orgId)).map(summarize);
    },

    getKey: async (orgId: string, keyId: string): Promise<KeySummary> => summarize(await existingKey(orgId, keyId)),

    /** New per-minute and per-day limits; they apply from the key's next request. */
    async updateKeyLimits(orgId: string, keyId: string, limits: { perMinute: number; perDay: number }): Promise<KeySummary> {
      checkLimits(limits.perMinute, limits.perDay);
      const existing = await existingKey(orgId, keyId);
      if (existing.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked; its limits cannot change`);
      await inTransaction(store, async (tx) => {
        await repo.updateKeyLimits(orgId, keyId, limits.perMinute, limits.perDay, tx);
        await bumpVersions(tx, orgId, API_KEYS);
      });
      return summarize((await repo.findKey(orgId, keyId))!);
    },

    /** D16: strict handling for every request of the key (from its next request on, on every instance). */
    async setKeyStrict(orgId: string, keyId: string, strict: boolean): Promise<KeySummary> {
      const existing = await existingKey(orgId, keyId);
      if (existing.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked; its handling cannot change`);
      await inTransaction(store, async (tx) => {
        await repo.setKeyStrict(orgId, keyId, strict, tx);
        await bumpVersions(tx, orgId, API_KEYS);
      });
      return summarize((await repo.findKey(orgId, keyId))!);
    },
  };
}
