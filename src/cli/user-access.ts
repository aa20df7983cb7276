import { ConflictError } from '../lib/http/errors.js';
import type { AccountsService } from '../modules/accounts/accounts.service.js';

/**
 * `user sessions-end --email E` and `user remove --email E` (docs/dashboard.md, "Sessions"): the
 * dashboard's buttons from the command line, audited as the operating-system user. Refusing to remove
 * an organization's last admin is a usage error (exit 2), as any command used wrongly.
 */
export async function userAccessCommand(
  accounts: AccountsService,
  command: 'user sessions-end' | 'user remove',
  email: string,
  io: { print(value: unknown): void; refuse(message: string): Error },
): Promise<number> {
  const user = await accounts.requireUserByEmail(email);
  if (command === 'user sessions-end') {
    const ended = await accounts.endSessions(user.org_id, user.id);
    process.stderr.write(`lanebridge: ${user.email} is signed out of the dashboard everywhere (${ended} session${ended === 1 ? '' : 's'} ended)\n`);
    io.print({ id: user.id, org_id: user.org_id, email: user.email, sessions_ended: ended });
    return 0;
  }
  try {
    const removed = await accounts.removeUser(user.org_id, user.id);
    process.stderr.write(`lanebridge: ${removed.email} is removed; the organization's API keys are unchanged\n`);
    io.print({ ...removed, removed: true });
    return 0;
  } catch (err) {
    if (err instanceof ConflictError) throw io.refuse(err.detail);
    throw err;
  }
}
