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
import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';

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
  /** When it stops working (docs/api.md, "Authentication and scopes"); null: never. A key rotated with a grace period has its grace end here. */
  expires_at: string | null;
  /** The key that replaced it (rotation). */
  replaced_by_key_id: string | null;
  /** `expired`: past expires_at (or a rotated key's grace period). */
  status: 'active' | 'expired' | 'revoked';
  /** Unknown fields are answered 422 on every request of this key (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`"). */
  strict: boolean;
}

export interface CreateKeyInput {
  name: string;
  externalSystem: string;
  scopes: Scope[];
  perMinute?: number;
  perDay?: number;
  /** ISO 8601; must be in the future. */
  expiresAt?: string;
  strict?: boolean;
}

/** Most hours a rotated key may keep working beside its replacement (30 days). */
export const MAX_GRACE_HOURS = 720;

/** An expiry time as given (CLI, dashboard): a real ISO 8601 time, in the future. */
export function parseExpiry(text: string, now: Date, field = 'expires_at'): string {
  const t = text.trim();
  let ms = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(t) ? Date.parse(t.length === 10 ? `${t}T00:00:00Z` : t) : NaN;
  // Date.parse takes 2030-02-30 as 2 March: the day must exist.
  const [y, m, d] = t.slice(0, 10).split('-').map(Number) as [number, number, number];
  const real = new Date(Date.UTC(y, m - 1, d));
  if (real.getUTCMonth() !== m - 1 || real.getUTCDate() !== d) ms = NaN;
  if (Number.isNaN(ms)) throw ValidationError.single([field], `${field} must be an ISO 8601 date or time with a zone, like 2027-01-31 or 2027-01-31T17:00:00Z`);
  if (ms <= now.getTime()) throw ValidationError.single([field], `${field} must be in the future (it is ${toIso(now)} now)`);
  return toIso(new Date(ms));
}

/** Minute precision: when a key was last used is told to the minute, as it is written at most once a minute. */
const toMinute = (iso: string | null) => (iso ? `${iso.slice(0, 16)}:00.000Z` : null);

function checkLimits(perMinute: number, perDay: number) {
  for (const [field, v] of [
    ['per_minute', perMinute],
    ['per_day', perDay],
  ] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_LIMIT) {
      throw ValidationError.single([field], `${field} must be a whole number from 1 to ${MAX_LIMIT}`);
    }
  }
}

function summarize(row: ApiKeysTable, now: Date): KeySummary {
  const expired = row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime();
  return {
    id: row.id,
    name: row.name,
    external_system: row.external_system,
    key_prefix: row.key_prefix,
    scopes: row.scopes.split(',').filter(isScope),
    per_minute: row.per_minute,
    per_day: row.per_day,
    created_at: row.created_at,
    last_used_at: toMinute(row.last_used_at),
    revoked_at: row.revoked_at,
    expires_at: row.expires_at,
    replaced_by_key_id: row.replaced_by_key_id,
    status: row.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
    strict: Number(row.strict) === 1,
  };
}

function keyRow(clock: Clock, orgId: string, input: CreateKeyInput): { row: ApiKeysTable; key: string } {
  const perMinute = input.perMinute ?? DEFAULT_PER_MINUTE;
  const perDay = input.perDay ?? DEFAULT_PER_DAY;
  checkLimits(perMinute, perDay);
  if (!input.name.trim()) throw ValidationError.single(['name'], 'name must not be empty');
  if (!input.externalSystem.trim()) throw ValidationError.single(['external_system'], 'external_system must not be empty');
  if (input.expiresAt !== undefined && Date.parse(input.expiresAt) <= clock.now().getTime()) {
    throw ValidationError.single(['expires_at'], `expires_at must be in the future (it is ${toIso(clock.now())} now)`);
  }
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
    expires_at: input.expiresAt ?? null,
    strict: input.strict ? 1 : 0,
  };
  return { row, key };
}

async function existingKey(repo: AccountsRepo, orgId: string, keyId: string): Promise<ApiKeysTable> {
  const row = await repo.findKey(orgId, keyId);
  if (!row) throw new NotFoundByIdError('API key', keyId);
  return row;
}

/** What the key actions take: the store, the repo, the clock and the organization's lookups. */
interface KeysContext {
  store: DataStore;
  repo: AccountsRepo;
  clock: Clock;
  org: { require(orgId: string): Promise<unknown>; ensureIntegration(orgId: string, actor?: AuditActor): Promise<void> };
}

/** A new key, shown once; the TMS API integration is connected first unless `connectIntegration` is false (then 409 without it). */
async function createKey(
  ctx: KeysContext,
  orgId: string,
  input: CreateKeyInput,
  opts: { connectIntegration: boolean } = { connectIntegration: true },
  actor: AuditActor = cliActor(),
) {
  const { store, repo, clock, org } = ctx;
  await org.require(orgId);
  if (opts.connectIntegration) await org.ensureIntegration(orgId, actor);
  else if (!(await repo.findIntegration(orgId))) {
    throw new ConflictError('Connect the TMS API integration before creating API keys');
  }
  const { row, key } = keyRow(clock, orgId, input);
  await inTransaction(store, async (tx) => {
    await repo.insertKey(row, tx);
    await bumpVersions(tx, orgId, API_KEYS);
    await recordAudit(tx, clock, orgId, actor, 'key.created', { type: 'key', id: row.id });
  });
  // The shape of `key create` (README.md, "Command line"); `expires_at` only on a key that expires,
  // `strict` only on a strict key.
  return {
    id: row.id,
    key,
    scopes: input.scopes,
    per_minute: row.per_minute,
    per_day: row.per_day,
    ...(row.expires_at !== null ? { expires_at: row.expires_at } : {}),
    ...(row.strict === 1 ? { strict: true as const } : {}),
  };
}

/**
 * A new key with the same settings (and the same end, if any). The old one stops at once, or, with
 * `graceHours`, keeps working that long beside the new one (its expires_at moves to then, never
 * later than it was), so a TMS can switch without an outage.
 */
async function rotateKey(ctx: KeysContext, orgId: string, keyId: string, opts: { graceHours?: number } = {}, actor: AuditActor = cliActor()) {
  const { store, repo, clock } = ctx;
  const graceHours = opts.graceHours ?? 0;
  if (!Number.isInteger(graceHours) || graceHours < 0 || graceHours > MAX_GRACE_HOURS) {
    throw ValidationError.single(['grace_hours'], `grace_hours must be a whole number of hours from 0 to ${MAX_GRACE_HOURS}`);
  }
  const old = await existingKey(repo, orgId, keyId);
  const now = clock.now();
  if (old.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked and cannot be rotated`);
  if (old.replaced_by_key_id)
    throw new ConflictError(`API key '${keyId}' was already rotated (replaced by '${old.replaced_by_key_id}'): rotate that key instead`);
  if (old.expires_at && Date.parse(old.expires_at) <= now.getTime())
    throw new ConflictError(`API key '${keyId}' expired at ${old.expires_at} and cannot be rotated: create a new key`);
  const { row, key } = keyRow(clock, orgId, {
    name: old.name,
    externalSystem: old.external_system,
    scopes: old.scopes.split(',').filter(isScope),
    perMinute: old.per_minute,
    perDay: old.per_day,
    ...(old.expires_at ? { expiresAt: old.expires_at } : {}),
    strict: Number(old.strict) === 1,
  });
  const graceEnd = new Date(now.getTime() + graceHours * 3_600_000);
  await inTransaction(store, async (tx) => {
    await repo.insertKey(row, tx);
    const done =
      graceHours === 0
        ? await repo.revokeKey(orgId, keyId, toIso(now), row.id, tx)
        : await repo.endKeyAt(orgId, keyId, old.expires_at && Date.parse(old.expires_at) < graceEnd.getTime() ? old.expires_at : toIso(graceEnd), row.id, tx);
    // Rotated or revoked meanwhile (another request): this rotation did not happen.
    if (Number(done.numUpdatedRows) === 0) throw new ConflictError(`API key '${keyId}' was revoked or rotated meanwhile`);
    await bumpVersions(tx, orgId, API_KEYS);
    await recordAudit(tx, clock, orgId, actor, 'key.rotated', { type: 'key', id: keyId });
  });
  const oldKey: { id: string; works_until: string | null; revoked_at: string | null } =
    graceHours > 0
      ? { id: keyId, works_until: old.expires_at && Date.parse(old.expires_at) < graceEnd.getTime() ? old.expires_at : toIso(graceEnd), revoked_at: null }
      : { id: keyId, works_until: null, revoked_at: toIso(now) };
  return { id: row.id, key, old_key: oldKey };
}

/**
 * API keys (docs/api.md, "Authentication and scopes"): shown once, stored as a hash. Every write moves
 * the organization's `api_keys` counter in its transaction, so a key checked and kept in memory is read
 * again after any change.
 */
export function apiKeys(
  store: DataStore,
  repo: AccountsRepo,
  clock: Clock,
  org: { require(orgId: string): Promise<unknown>; ensureIntegration(orgId: string, actor?: AuditActor): Promise<void> },
) {
  const ctx: KeysContext = { store, repo, clock, org };
  return {
    createKey: (orgId: string, input: CreateKeyInput, opts?: { connectIntegration: boolean }, actor?: AuditActor) => createKey(ctx, orgId, input, opts, actor),

    async revokeKey(orgId: string, keyId: string, actor: AuditActor = cliActor()) {
      const existing = await existingKey(repo, orgId, keyId);
      if (!existing.revoked_at) {
        await inTransaction(store, async (tx) => {
          // Only the transaction that revoked it records it (two revocations at once: one entry).
          const done = await repo.revokeKey(orgId, keyId, toIso(clock.now()), existing.replaced_by_key_id, tx);
          if (Number(done.numUpdatedRows) === 0) return;
          await bumpVersions(tx, orgId, API_KEYS);
          await recordAudit(tx, clock, orgId, actor, 'key.revoked', { type: 'key', id: keyId });
        });
      }
      return summarize((await repo.findKey(orgId, keyId))!, clock.now());
    },

    rotateKey: (orgId: string, keyId: string, opts?: { graceHours?: number }, actor?: AuditActor) => rotateKey(ctx, orgId, keyId, opts, actor),

    async listKeys(orgId: string) {
      await org.require(orgId);
      const now = clock.now();
      return (await repo.listKeys(orgId)).map((row) => summarize(row, now));
    },

    getKey: async (orgId: string, keyId: string): Promise<KeySummary> => summarize(await existingKey(repo, orgId, keyId), clock.now()),

    /** New per-minute and per-day limits; they apply from the key's next request. */
    async updateKeyLimits(orgId: string, keyId: string, limits: { perMinute: number; perDay: number }, actor: AuditActor = cliActor()): Promise<KeySummary> {
      checkLimits(limits.perMinute, limits.perDay);
      const existing = await existingKey(repo, orgId, keyId);
      if (existing.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked; its limits cannot change`);
      // The same limits again change nothing: no write, no audit entry.
      if (existing.per_minute === limits.perMinute && existing.per_day === limits.perDay) return summarize(existing, clock.now());
      await inTransaction(store, async (tx) => {
        await repo.updateKeyLimits(orgId, keyId, limits.perMinute, limits.perDay, tx);
        await bumpVersions(tx, orgId, API_KEYS);
        await recordAudit(tx, clock, orgId, actor, 'key.limits_changed', { type: 'key', id: keyId });
      });
      return summarize((await repo.findKey(orgId, keyId))!, clock.now());
    },

    /** Strict handling for every request of the key (from its next request on, on every instance). */
    async setKeyStrict(orgId: string, keyId: string, strict: boolean, actor: AuditActor = cliActor()): Promise<KeySummary> {
      const existing = await existingKey(repo, orgId, keyId);
      if (existing.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked; its handling cannot change`);
      await inTransaction(store, async (tx) => {
        await repo.setKeyStrict(orgId, keyId, strict, tx);
        await bumpVersions(tx, orgId, API_KEYS);
        await recordAudit(tx, clock, orgId, actor, 'key.handling_changed', { type: 'key', id: keyId });
      });
      return summarize((await repo.findKey(orgId, keyId))!, clock.now());
    },
  };
}
