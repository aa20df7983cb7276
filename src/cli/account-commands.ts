import { MAX_GRACE_HOURS, parseExpiry, parseScopes, type AccountsService } from '../modules/accounts/accounts.service.js';
import { ROLES, isRole } from '../modules/accounts/users.js';
import { optionalInt, passwordOption, print, required } from './io.js';
import { UsageError, type CliValues } from './usage.js';
import { userAccessCommand } from './user-access.js';

type Values = CliValues;

/** The commands over an open store: setup-code, org, user and key (their usage: src/cli/usage.ts). */
export async function accountCommand(accounts: AccountsService, command: string, values: Values): Promise<number> {
  switch (command) {
    case 'setup-code': {
      const code = await accounts.setupCode();
      if (code === null)
        throw new UsageError('this Lanebridge already has an organization: the first-run page is closed, and no setup code is needed (sign in instead)', {
          usage: false,
        });
      process.stderr.write(`lanebridge: open the dashboard and enter this setup code on its first-run page\n`);
      print({ setup_code: code });
      return 0;
    }
    case 'org create':
      print(await accounts.createOrganization(required(values, 'name')));
      return 0;
    case 'org list':
      print({ items: await accounts.listOrganizations() });
      return 0;
    case 'user create':
      return createUser(accounts, values);
    case 'user set-password': {
      const email = required(values, 'email');
      const password = await passwordOption(values);
      if (password === undefined) throw new UsageError('--password or --password-stdin is required');
      const user = await accounts.setPassword(email, password);
      process.stderr.write(`lanebridge: ${user.email} can now sign in to the dashboard\n`);
      print(user);
      return 0;
    }
    case 'user sessions-end':
    case 'user remove':
      return userAccessCommand(accounts, command, required(values, 'email'), { print, refuse: (m) => new UsageError(m, { usage: false }) });
    case 'key create':
      return createKey(accounts, values);
    case 'key revoke': {
      const key = await accounts.revokeKey(required(values, 'org'), required(values, 'id'));
      print({ id: key.id, status: key.status, revoked_at: key.revoked_at });
      return 0;
    }
    case 'key rotate': {
      const grace = values['grace-hours'];
      if (grace !== undefined && (!/^\d{1,4}$/.test(grace) || Number(grace) > MAX_GRACE_HOURS))
        throw new UsageError(`--grace-hours must be a whole number from 0 to ${MAX_GRACE_HOURS}`);
      print(await accounts.rotateKey(required(values, 'org'), required(values, 'id'), { graceHours: grace === undefined ? 0 : Number(grace) }));
      return 0;
    }
    case 'key list':
      print({ items: await accounts.listKeys(required(values, 'org')) });
      return 0;
    default:
      throw new UsageError(`Unknown command '${command}'`);
  }
}

/** `user create`: the role (admin for an organization's first user, else member) and an optional password. */
async function createUser(accounts: AccountsService, values: Values): Promise<number> {
  const password = await passwordOption(values);
  const role = values.role;
  if (role !== undefined && !isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  print(
    await accounts.createUser(required(values, 'org'), {
      email: required(values, 'email'),
      name: required(values, 'name'),
      ...(role !== undefined ? { role } : {}),
      ...(password !== undefined ? { password } : {}),
    }),
  );
  return 0;
}

/** `key create`: its scopes, limits per minute and per day, expiry and strictness. */
async function createKey(accounts: AccountsService, values: Values): Promise<number> {
  const perMinute = optionalInt(values, 'per-minute');
  const perDay = optionalInt(values, 'per-day');
  const expiresAt = values['expires-at'] !== undefined ? parseExpiry(values['expires-at'], new Date(), 'expires-at') : undefined;
  print(
    await accounts.createKey(required(values, 'org'), {
      name: required(values, 'name'),
      externalSystem: required(values, 'system'),
      scopes: parseScopes(required(values, 'scopes')),
      ...(perMinute !== undefined ? { perMinute } : {}),
      ...(perDay !== undefined ? { perDay } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
      ...(values.strict ? { strict: true } : {}),
    }),
  );
  return 0;
}
