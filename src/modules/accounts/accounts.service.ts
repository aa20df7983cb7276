import { randomBytes } from 'node:crypto';
import type { DataStore } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction } from '../../lib/db/tx.js';
import type { ApiKeysTable, UsersTable } from '../../lib/db/types.js';
import { type Clock, systemClock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, NotFoundByIdError, ValidationError } from '../../lib/http/errors.js';
import { accountsRepo } from './accounts.repo.js';
import { SCOPES, isScope, type Scope } from './scopes.js';
import { KEY_PATTERN, constantTimeEqualHex, displayPrefix, generateApiKey, hashApiKey, hashPassword, verifyPassword } from './secrets.js';

export const DEFAULT_PER_MINUTE = 100;
export const DEFAULT_PER_DAY = 10_000;
/** Limits are stored in 32-bit integer columns (PostgreSQL `integer`). */
export const MAX_LIMIT = 2_147_483_647;

function checkLimits(perMinute: number, perDay: number) {
  for (const [field, v] of [['per_minute', perMinute], ['per_day', perDay]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_LIMIT) {
      throw ValidationError.single([field], `${field} must be a whole number from 1 to ${MAX_LIMIT}`);
    }
  }
}

/** A user who may sign in to the dashboard. */
export interface SignedInUser {
  id: string;
  org_id: string;
  name: string;
  email: string;
}

/** Who is calling: resolved from the API key on every request. */
export interface Principal {
  orgId: string;
  keyId: string;
  scopes: ReadonlySet<Scope>;
  perMinute: number;
  perDay: number;
}

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
}

export interface CreateKeyInput {
  name: string;
  externalSystem: string;
  scopes: Scope[];
  perMinute?: number;
  perDay?: number;
}

export function parseScopes(text: string): Scope[] {
  if (text.trim().toLowerCase() === 'all') return [...SCOPES];
  const parts = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = parts.filter((p) => !isScope(p));
  if (parts.length === 0 || unknown.length > 0) {
    throw ValidationError.single(
      ['scopes'],
      `Unknown scope${unknown.length === 1 ? '' : 's'} ${unknown.map((u) => `'${u}'`).join(', ') || "''"}: use 'all' or a comma-separated list of ${SCOPES.join(', ')}`,
    );
  }
  return [...new Set(parts as Scope[])];
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
  };
}

// Writing last_used_at on every request would turn every read into a write; once a minute is enough.
const TOUCH_INTERVAL_MS = 60_000;

export function accountsService(store: DataStore, clock: Clock = systemClock) {
  const repo = accountsRepo(store.db);
  const lastTouched = new Map<string, number>();
  const knownKeys = new Map<string, { token: string; principal: Principal }>();

  async function requireOrganization(orgId: string) {
    const org = await repo.findOrganization(orgId);
    if (!org) throw new NotFoundByIdError('Organization', orgId);
    return org;
  }

  async function ensureIntegration(orgId: string) {
    if (await repo.findIntegration(orgId)) return;
    try {
      await repo.insertIntegration(orgId, toIso(clock.now()));
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
  }

  async function insertKey(orgId: string, input: CreateKeyInput) {
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
    };
    await repo.insertKey(row);
    return { row, key };
  }

  async function userRow(orgId: string, input: { email: string; name: string; password?: string }): Promise<UsersTable> {
    const email = input.email.trim();
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw ValidationError.single(['email'], `'${input.email}' is not an email address`);
    if (!input.name.trim()) throw ValidationError.single(['name'], 'User name must not be empty');
    return {
      id: newId('user'),
      org_id: orgId,
      email,
      email_lower: email.toLowerCase(),
      name: input.name.trim(),
      password_hash: input.password ? await hashPassword(input.password) : null,
      created_at: toIso(clock.now()),
    };
  }

  // Compared against when the email is unknown, so an unknown email costs as much time as a wrong password.
  let decoyHash: Promise<string> | null = null;

  return {
    async createOrganization(name: string) {
      const trimmed = name.trim();
      if (!trimmed) throw ValidationError.single(['name'], 'Organization name must not be empty');
      const row = { id: newId('org'), name: trimmed, created_at: toIso(clock.now()) };
      await repo.insertOrganization(row);
      return { id: row.id, name: row.name };
    },

    countOrganizations: () => repo.countOrganizations(),

    async createUser(orgId: string, input: { email: string; name: string; password?: string }) {
      await requireOrganization(orgId);
      const row = await userRow(orgId, input);
      try {
        await repo.insertUser(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw new ConflictError(`User with email '${row.email}' already exists`);
        throw err;
      }
      return { id: row.id, email: row.email, name: row.name };
    },

    /**
     * The dashboard's first run: the first organization and its first user, together. A marker row
     * (unique name) makes two concurrent first runs end with one organization, on either engine.
     */
    async setUpFirstOrganization(input: { organizationName: string; name: string; email: string; password: string }) {
      const orgName = input.organizationName.trim();
      if (!orgName) throw ValidationError.single(['organization_name'], 'Organization name must not be empty');
      const org = { id: newId('org'), name: orgName, created_at: toIso(clock.now()) };
      const user = await userRow(org.id, input);
      const alreadySetUp = () => new ConflictError('This Lanebridge already has an organization: sign in instead');
      try {
        await inTransaction(store, async (tx) => {
          if ((await repo.countOrganizations(tx)) > 0) throw alreadySetUp();
          await tx.insertInto('dashboard_settings').values({ name: 'first_run', value: org.id, created_at: org.created_at }).execute();
          await repo.insertOrganization(org, tx);
          await repo.insertUser(user, tx);
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw alreadySetUp();
        throw err;
      }
      return { organization: { id: org.id, name: org.name }, user: { id: user.id, org_id: org.id, name: user.name, email: user.email } };
    },

    /** The user with this email and password, or null; the same work is done whatever is wrong. */
    async verifyCredentials(email: string, password: string): Promise<SignedInUser | null> {
      const user = await repo.findUserByEmail(email);
      const stored = user?.password_hash ?? (await (decoyHash ??= hashPassword(randomBytes(16).toString('hex'))));
      const matches = await verifyPassword(password, stored);
      if (!matches || !user?.password_hash) return null;
      return { id: user.id, org_id: user.org_id, name: user.name, email: user.email };
    },

    findUser: (orgId: string, userId: string) => repo.findUser(orgId, userId),
    getOrganization: (orgId: string) => repo.findOrganization(orgId),
    getIntegration: (orgId: string) => repo.findIntegration(orgId),

    listUsers: (orgId: string) => repo.listUsers(orgId),

    /** Spec section 5: keys can only be created once the TMS API integration is connected. */
    async connectIntegration(orgId: string) {
      await requireOrganization(orgId);
      await ensureIntegration(orgId);
      return repo.findIntegration(orgId);
    },

    isIntegrationConnected: async (orgId: string) => (await repo.findIntegration(orgId)) !== undefined,

    async createKey(orgId: string, input: CreateKeyInput, opts: { connectIntegration: boolean } = { connectIntegration: true }) {
      await requireOrganization(orgId);
      if (opts.connectIntegration) await ensureIntegration(orgId);
      else if (!(await repo.findIntegration(orgId))) {
        throw new ConflictError('Connect the TMS API integration before creating API keys');
      }
      const { row, key } = await insertKey(orgId, input);
      return { id: row.id, key, scopes: input.scopes, per_minute: row.per_minute, per_day: row.per_day };
    },

    async revokeKey(orgId: string, keyId: string) {
      const existing = await repo.findKey(orgId, keyId);
      if (!existing) throw new NotFoundByIdError('API key', keyId);
      if (!existing.revoked_at) await repo.revokeKey(orgId, keyId, toIso(clock.now()), null);
      const after = await repo.findKey(orgId, keyId);
      return summarize(after!);
    },

    /** A new key with the same settings; the old one is revoked at once. */
    async rotateKey(orgId: string, keyId: string) {
      const old = await repo.findKey(orgId, keyId);
      if (!old) throw new NotFoundByIdError('API key', keyId);
      if (old.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked and cannot be rotated`);
      const { row, key } = await insertKey(orgId, {
        name: old.name,
        externalSystem: old.external_system,
        scopes: old.scopes.split(',').filter(isScope),
        perMinute: old.per_minute,
        perDay: old.per_day,
      });
      await repo.revokeKey(orgId, keyId, toIso(clock.now()), row.id);
      return { id: row.id, key };
    },

    async listKeys(orgId: string) {
      await requireOrganization(orgId);
      return (await repo.listKeys(orgId)).map(summarize);
    },

    async getKey(orgId: string, keyId: string): Promise<KeySummary> {
      const row = await repo.findKey(orgId, keyId);
      if (!row) throw new NotFoundByIdError('API key', keyId);
      return summarize(row);
    },

    /** New per-minute and per-day limits; they apply from the key's next request (read on every request). */
    async updateKeyLimits(orgId: string, keyId: string, limits: { perMinute: number; perDay: number }): Promise<KeySummary> {
      checkLimits(limits.perMinute, limits.perDay);
      const existing = await repo.findKey(orgId, keyId);
      if (!existing) throw new NotFoundByIdError('API key', keyId);
      if (existing.revoked_at) throw new ConflictError(`API key '${keyId}' is revoked; its limits cannot change`);
      await repo.updateKeyLimits(orgId, keyId, limits.perMinute, limits.perDay);
      return summarize((await repo.findKey(orgId, keyId))!);
    },

    /**
     * The key is looked up by its hash; revocation is read from the database on every request, so a key
     * revoked through any instance fails on every instance from the next request on.
     */
    async authenticate(presented: string | undefined): Promise<Principal | null> {
      if (!presented || !KEY_PATTERN.test(presented)) return null;
      const hash = hashApiKey(presented);
      // A key checked under the database's current change token is still valid (nothing was written
      // since, so it cannot have been revoked); otherwise it is read again (SQLite only: see changeToken).
      // Called as each request arrives: the token takes in other connections' commits here.
      const token = store.changeToken(true);
      const cached = token === null ? undefined : knownKeys.get(hash);
      let principal: Principal;
      if (cached && cached.token === token) {
        principal = cached.principal;
      } else {
        const row = await repo.findKeyByHash(hash);
        if (!row || row.revoked_at || !constantTimeEqualHex(row.key_hash, hash)) return null;
        principal = {
          orgId: row.org_id,
          keyId: row.id,
          scopes: new Set(row.scopes.split(',').filter(isScope)),
          perMinute: row.per_minute,
          perDay: row.per_day,
        };
        if (token !== null) {
          if (knownKeys.size >= 10_000) knownKeys.clear();
          knownKeys.set(hash, { token, principal });
        }
      }
      const now = clock.now().getTime();
      if (now - (lastTouched.get(principal.keyId) ?? 0) > TOUCH_INTERVAL_MS) {
        lastTouched.set(principal.keyId, now);
        repo.touchKey(principal.keyId, toIso(clock.now())).catch(() => lastTouched.delete(principal.keyId));
      }
      return principal;
    },
  };
}

export type AccountsService = ReturnType<typeof accountsService>;
