import { randomBytes } from 'node:crypto';
import type { DataStore } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction } from '../../lib/db/tx.js';
import type { UsersTable } from '../../lib/db/types.js';
import { bumpVersions } from '../../lib/db/versions.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, DetailError, NotFoundByIdError, ValidationError } from '../../lib/http/errors.js';
import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import type { AccountsRepo } from './accounts.repo.js';
import { hashPassword, verifyPassword } from './secrets.js';

/** A user who may sign in to the dashboard. */
export interface SignedInUser {
  id: string;
  org_id: string;
  name: string;
  email: string;
}

/** Admins change users, keys, webhooks, imports and settings; members read every page (docs/dashboard.md, "Roles, the first run and the audit log"). */
export const ROLES = ['admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
export const isRole = (v: string): v is Role => (ROLES as readonly string[]).includes(v);

export interface UserInput {
  email: string;
  name: string;
  password?: string;
  /** Default: admin for an organization's first user, member after. */
  role?: Role;
}

/** Your own password needs the current one: a session left open must not be enough to take the account. */
export class CurrentPasswordError extends DetailError {
  constructor() {
    super('forbidden', 'The current password is not correct: your password was not changed');
  }
}

const USERS = new Set(['users'] as const);

/**
 * The email is already a user's. Emails are unique across organizations (they are the dashboard's
 * sign-in identity), so this can be another organization's user: `inOrganization` says which, for the
 * caller to decide what to tell (the dashboard tells another organization's admin nothing of it).
 */
export class EmailTakenError extends ConflictError {
  constructor(
    email: string,
    readonly inOrganization: boolean,
  ) {
    super(`User with email '${email}' already exists${inOrganization ? '' : ' in another organization'}`);
  }
}

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * The password rule (dashboard sign-in), the only one: what is wrong with a password, or null. Every
 * write of a password checks it here; a front end may ask first to show it beside its other fields.
 */
export function passwordProblem(password: string): string | null {
  if (password.length >= MIN_PASSWORD_LENGTH && password.length <= MAX_PASSWORD_LENGTH) return null;
  return `Use at least ${MIN_PASSWORD_LENGTH} characters: the password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`;
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw ValidationError.single(['password'], problem);
}

/** A checked user row (email shape, a name, a password if one is given), its password hashed. */
export async function userRow(orgId: string, input: UserInput, clock: Clock): Promise<UsersTable> {
  if (input.password !== undefined) checkPassword(input.password);
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
    role: input.role ?? 'admin',
  };
}

/** What the user actions take: the store, the repo, the clock and the organization lookup. */
interface UsersContext {
  store: DataStore;
  repo: AccountsRepo;
  clock: Clock;
  org: { require(orgId: string): Promise<unknown> };
}

async function createUser(ctx: UsersContext, orgId: string, input: UserInput, actor: AuditActor = cliActor()) {
  const { store, repo, clock, org } = ctx;
  await org.require(orgId);
  if (input.role !== undefined && !isRole(input.role)) throw ValidationError.single(['role'], `role must be one of ${ROLES.join(', ')}`);
  const row = await userRow(orgId, input, clock);
  try {
    await inTransaction(store, async (tx) => {
      // The first user of an organization is its admin; later ones are members unless said otherwise.
      // A member as the first user would leave the organization with no one to manage it.
      const admins = await repo.countAdmins(orgId, tx);
      if (input.role === undefined) row.role = admins === 0 ? 'admin' : 'member';
      else if (admins === 0 && input.role !== 'admin')
        throw ValidationError.single(
          ['role'],
          `the first user of an organization is its admin (it has none yet): make this user an admin, or create an admin first`,
        );
      await repo.insertUser(row, tx);
      await bumpVersions(tx, orgId, USERS);
      await recordAudit(tx, clock, orgId, actor, 'user.created', { type: 'user', id: row.id });
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      const holder = await repo.findUserByEmail(row.email);
      throw new EmailTakenError(row.email, holder?.org_id === orgId);
    }
    throw err;
  }
  return { id: row.id, email: row.email, name: row.name, role: row.role as Role };
}

/** One's own password: only with the current one; the user's other sessions end, `keepSessionId`'s stays. */
async function changeOwnPassword(
  ctx: UsersContext,
  orgId: string,
  userId: string,
  current: string,
  next: string,
  actor: AuditActor,
  keepSessionId: string | null = null,
) {
  const { store, repo, clock } = ctx;
  const user = await repo.findUser(orgId, userId);
  if (!user) throw new NotFoundByIdError('User', userId);
  checkPassword(next);
  const ok = current.length > 0 && current.length <= MAX_PASSWORD_LENGTH && user.password_hash !== null && (await verifyPassword(current, user.password_hash));
  if (!ok) throw new CurrentPasswordError();
  const hashed = await hashPassword(next);
  await inTransaction(store, async (tx) => {
    await repo.setUserPassword(user.id, hashed, tx);
    await repo.deleteUserSessions(user.id, keepSessionId, tx);
    await recordAudit(tx, clock, orgId, actor, 'user.password_set', { type: 'user', id: user.id });
  });
}

/**
 * Removes a user: their sessions end with them; the API keys of the organization stay (keys are the
 * organization's, not a user's). An organization's last admin stays (409). The audit entry keeps the
 * removed user's name and email, since the row is gone.
 */
async function removeUser(ctx: UsersContext, orgId: string, userId: string, actor: AuditActor = cliActor()) {
  const { store, repo, clock } = ctx;
  const user = await repo.findUser(orgId, userId);
  if (!user) throw new NotFoundByIdError('User', userId);
  await inTransaction(store, async (tx) => {
    await repo.deleteUserSessions(user.id, null, tx);
    await repo.deleteUser(orgId, user.id, tx);
    if ((await repo.countAdmins(orgId, tx)) === 0)
      throw new ConflictError(`${user.name} is the organization's last admin and cannot be removed: make another user an admin first`);
    await bumpVersions(tx, orgId, USERS);
    await recordAudit(tx, clock, orgId, actor, 'user.removed', { type: 'user', id: user.id, name: `${user.name} <${user.email}>` });
  });
  return { id: user.id, org_id: user.org_id, email: user.email, name: user.name };
}

/** Makes a user an admin or a member; an organization always keeps one admin. */
async function setRole(ctx: UsersContext, orgId: string, userId: string, role: string, actor: AuditActor) {
  const { store, repo, clock } = ctx;
  if (!isRole(role)) throw ValidationError.single(['role'], `role must be one of ${ROLES.join(', ')}`);
  const user = await repo.findUser(orgId, userId);
  if (!user) throw new NotFoundByIdError('User', userId);
  if (user.role === role) return { id: user.id, role };
  await inTransaction(store, async (tx) => {
    await repo.setUserRole(orgId, userId, role, tx);
    if ((await repo.countAdmins(orgId, tx)) === 0) throw new ConflictError('An organization needs at least one admin: make another user an admin first');
    await bumpVersions(tx, orgId, USERS);
    await recordAudit(tx, clock, orgId, actor, 'user.role_changed', { type: 'user', id: userId });
  });
  return { id: user.id, role };
}

/** Users of an organization; a write moves its `users` counter (loads match their reps to users). */
export function users(store: DataStore, repo: AccountsRepo, clock: Clock, org: { require(orgId: string): Promise<unknown> }) {
  // Compared against when the email is unknown, so an unknown email costs as much time as a wrong password.
  let decoyHash: Promise<string> | null = null;
  const ctx: UsersContext = { store, repo, clock, org };

  return {
    createUser: (orgId: string, input: UserInput, actor?: AuditActor) => createUser(ctx, orgId, input, actor),
    /**
     * The user with this email and password, or null; the same work is done whatever is wrong (a
     * password longer than any the rule lets be set is refused without hashing it).
     */
    async verifyCredentials(email: string, password: string): Promise<SignedInUser | null> {
      if (password.length > MAX_PASSWORD_LENGTH) return null;
      const user = await repo.findUserByEmail(email);
      const stored = user?.password_hash ?? (await (decoyHash ??= hashPassword(randomBytes(16).toString('hex'))));
      const matches = await verifyPassword(password, stored);
      if (!matches || !user?.password_hash) return null;
      return { id: user.id, org_id: user.org_id, name: user.name, email: user.email };
    },

    /**
     * Sets (or replaces) the dashboard password of the user with this email, in any organization
     * (emails are unique across them): how a user made without one, or who forgot it, signs in.
     */
    async setPassword(email: string, password: string, actor: AuditActor = cliActor()) {
      checkPassword(password);
      const user = await repo.findUserByEmail(email);
      if (!user) throw new DetailError('not_found', `No user with email '${email.trim()}': create one with user create`);
      const hashed = await hashPassword(password);
      await inTransaction(store, async (tx) => {
        await repo.setUserPassword(user.id, hashed, tx);
        // A reset (by an admin or the command line) ends every session of the user: whoever held one is out.
        await repo.deleteUserSessions(user.id, null, tx);
        await recordAudit(tx, clock, user.org_id, actor, 'user.password_set', { type: 'user', id: user.id });
      });
      return { id: user.id, org_id: user.org_id, email: user.email, name: user.name };
    },

    /**
     * An admin sets another user's password. One's own goes through changeOwnPassword, which
     * needs the current one.
     */
    async setUserPasswordByAdmin(orgId: string, adminId: string, userId: string, password: string, actor: AuditActor) {
      if (userId === adminId)
        throw ValidationError.single(['user_id'], 'To change your own password, use Account → Change password (it asks for your current one)');
      const user = await repo.findUser(orgId, userId);
      if (!user) throw new NotFoundByIdError('User', userId);
      return this.setPassword(user.email, password, actor);
    },

    changeOwnPassword: (orgId: string, userId: string, current: string, next: string, actor: AuditActor, keepSessionId?: string | null) =>
      changeOwnPassword(ctx, orgId, userId, current, next, actor, keepSessionId),

    /** Signs a user out everywhere (an admin, or the command line); returns how many sessions ended. */
    async endSessions(orgId: string, userId: string, actor: AuditActor = cliActor()): Promise<number> {
      const user = await repo.findUser(orgId, userId);
      if (!user) throw new NotFoundByIdError('User', userId);
      return inTransaction(store, async (tx) => {
        const ended = await repo.deleteUserSessions(user.id, null, tx);
        await recordAudit(tx, clock, orgId, actor, 'user.sessions_ended', { type: 'user', id: user.id, name: `${user.name} <${user.email}>` });
        return Number(ended.numDeletedRows);
      });
    },

    removeUser: (orgId: string, userId: string, actor?: AuditActor) => removeUser(ctx, orgId, userId, actor),

    /** The user with this email, in any organization (the command line names users by email). */
    async requireUserByEmail(email: string) {
      const user = await repo.findUserByEmail(email);
      if (!user) throw new DetailError('not_found', `No user with email '${email.trim()}'`);
      return user;
    },

    setRole: (orgId: string, userId: string, role: string, actor: AuditActor) => setRole(ctx, orgId, userId, role, actor),

    findUser: (orgId: string, userId: string) => repo.findUser(orgId, userId),
    listUsers: (orgId: string) => repo.listUsers(orgId),
  };
}
