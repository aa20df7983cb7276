import { randomBytes } from 'node:crypto';
import type { DataStore } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction } from '../../lib/db/tx.js';
import type { UsersTable } from '../../lib/db/types.js';
import { bumpVersions } from '../../lib/db/versions.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, DetailError, ValidationError } from '../../lib/http/errors.js';
import type { AccountsRepo } from './accounts.repo.js';
import { hashPassword, verifyPassword } from './secrets.js';

/** A user who may sign in to the dashboard. */
export interface SignedInUser {
  id: string;
  org_id: string;
  name: string;
  email: string;
}

export interface UserInput {
  email: string;
  name: string;
  password?: string;
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
  };
}

/** Users of an organization; a write moves its `users` counter (loads match their reps to users). */
export function users(store: DataStore, repo: AccountsRepo, clock: Clock, org: { require(orgId: string): Promise<unknown> }) {
  // Compared against when the email is unknown, so an unknown email costs as much time as a wrong password.
  let decoyHash: Promise<string> | null = null;

  return {
    async createUser(orgId: string, input: UserInput) {
      await org.require(orgId);
      const row = await userRow(orgId, input, clock);
      try {
        await inTransaction(store, async (tx) => {
          await repo.insertUser(row, tx);
          await bumpVersions(tx, orgId, USERS);
        });
      } catch (err) {
        if (isUniqueViolation(err)) {
          const holder = await repo.findUserByEmail(row.email);
          throw new EmailTakenError(row.email, holder?.org_id === orgId);
        }
        throw err;
      }
      return { id: row.id, email: row.email, name: row.name };
    },

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
    async setPassword(email: string, password: string) {
      checkPassword(password);
      const user = await repo.findUserByEmail(email);
      if (!user) throw new DetailError('not_found', `No user with email '${email.trim()}': create one with user create`);
      await repo.setUserPassword(user.id, await hashPassword(password));
      return { id: user.id, org_id: user.org_id, email: user.email, name: user.name };
    },

    findUser: (orgId: string, userId: string) => repo.findUser(orgId, userId),
    listUsers: (orgId: string) => repo.listUsers(orgId),
  };
}
