import type { Executor } from '../../lib/db/index.js';
import { holdOrganization } from '../../lib/db/locks.js';
import { prepared } from '../../lib/db/prepared.js';
import type { ApiKeysTable, DashboardSessionsTable, OrganizationsTable, UsersTable } from '../../lib/db/types.js';

const keyByHash = prepared<{ hash: string }, ApiKeysTable>((db, p) => db.selectFrom('api_keys').selectAll().where('key_hash', '=', p('hash')));

/** Organizations, their TMS integration and the dashboard's settings (the first run, the setup code). */
function organizationsRepo(db: Executor) {
  return {
    insertOrganization: (row: OrganizationsTable, tx: Executor = db) => tx.insertInto('organizations').values(row).execute(),
    findOrganization: (id: string, tx: Executor = db) => tx.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst(),
    listOrganizations: (tx: Executor = db) => tx.selectFrom('organizations').selectAll().orderBy('created_at').orderBy('id').execute(),
    countOrganizations: async (tx: Executor = db) => {
      const r = await tx
        .selectFrom('organizations')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    setOnTimeGrace: (id: string, minutes: number | null, tx: Executor = db) =>
      tx.updateTable('organizations').set({ on_time_grace_minutes: minutes }).where('id', '=', id).execute(),
    findIntegration: (orgId: string, tx: Executor = db) => tx.selectFrom('tms_integrations').selectAll().where('org_id', '=', orgId).executeTakeFirst(),
    insertIntegration: (orgId: string, connectedAt: string, tx: Executor = db) =>
      tx.insertInto('tms_integrations').values({ org_id: orgId, connected_at: connectedAt }).execute(),

    /** The marker of the dashboard's first run (its unique name makes a second one fail). */
    markFirstRun: (orgId: string, at: string, tx: Executor = db) =>
      tx.insertInto('dashboard_settings').values({ name: 'first_run', value: orgId, created_at: at }).execute(),
    findSetting: async (name: string, tx: Executor = db) =>
      (await tx.selectFrom('dashboard_settings').select('value').where('name', '=', name).executeTakeFirst())?.value,
    /** Fails on a unique violation when the setting exists (another instance made it first). */
    insertSetting: (name: string, value: string, at: string, tx: Executor = db) =>
      tx.insertInto('dashboard_settings').values({ name, value, created_at: at }).execute(),

    deleteSetting: (name: string, tx: Executor = db) => tx.deleteFrom('dashboard_settings').where('name', '=', name).executeTakeFirst(),
  };
}

/** The dashboard's sessions. */
function sessionsRepo(db: Executor) {
  return {
    insertSession: (row: DashboardSessionsTable, tx: Executor = db) => tx.insertInto('dashboard_sessions').values(row).execute(),
    /** A session with its user's and organization's names; none when the user is gone. */
    findSession: (id: string, tx: Executor = db) =>
      tx
        .selectFrom('dashboard_sessions as s')
        .innerJoin('users as u', (j) => j.onRef('u.id', '=', 's.user_id').onRef('u.org_id', '=', 's.org_id'))
        .innerJoin('organizations as o', 'o.id', 's.org_id')
        .select([
          's.id',
          's.org_id',
          's.user_id',
          's.csrf_token',
          's.last_seen_at',
          's.expires_at',
          'u.name as user_name',
          'u.email as user_email',
          'u.role as user_role',
          'o.name as org_name',
        ])
        .where('s.id', '=', id)
        .executeTakeFirst(),
    touchSession: (id: string, at: string, tx: Executor = db) => tx.updateTable('dashboard_sessions').set({ last_seen_at: at }).where('id', '=', id).execute(),
    deleteSession: (id: string, tx: Executor = db) => tx.deleteFrom('dashboard_sessions').where('id', '=', id).execute(),
    /** Every session of a user, or all but one (`except`: the session that changed its own password). */
    deleteUserSessions: (userId: string, except: string | null, tx: Executor = db) => {
      const q = tx.deleteFrom('dashboard_sessions').where('user_id', '=', userId);
      return (except ? q.where('id', '<>', except) : q).executeTakeFirst();
    },
    deleteSessionsExpiredBy: (at: string, tx: Executor = db) => tx.deleteFrom('dashboard_sessions').where('expires_at', '<', at).execute(),
  };
}

/** API keys, stored by their hash (docs/api.md, "Authentication and scopes"). */
function keysRepo(db: Executor) {
  return {
    insertKey: (row: ApiKeysTable, tx: Executor = db) => tx.insertInto('api_keys').values(row).execute(),
    findKey: (orgId: string, id: string, tx: Executor = db) =>
      tx.selectFrom('api_keys').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
    // On every request: built and compiled once.
    findKeyByHash: async (hash: string, tx: Executor = db) => (await keyByHash(tx, { hash }))[0],
    listKeys: (orgId: string, tx: Executor = db) =>
      tx.selectFrom('api_keys').selectAll().where('org_id', '=', orgId).orderBy('created_at').orderBy('id').execute(),
    revokeKey: (orgId: string, id: string, at: string, replacedBy: string | null, tx: Executor = db) =>
      tx
        .updateTable('api_keys')
        .set({ revoked_at: at, replaced_by_key_id: replacedBy })
        .where('org_id', '=', orgId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    /** A rotated key's end of grace: it keeps working until `at` (not revoked), once. */
    endKeyAt: (orgId: string, id: string, at: string, replacedBy: string, tx: Executor = db) =>
      tx
        .updateTable('api_keys')
        .set({ expires_at: at, replaced_by_key_id: replacedBy })
        .where('org_id', '=', orgId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .where('replaced_by_key_id', 'is', null)
        .executeTakeFirst(),
    touchKey: (id: string, at: string, tx: Executor = db) => tx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute(),
    setKeyStrict: (orgId: string, id: string, strict: boolean, tx: Executor = db) =>
      tx
        .updateTable('api_keys')
        .set({ strict: strict ? 1 : 0 })
        .where('org_id', '=', orgId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
    updateKeyLimits: (orgId: string, id: string, perMinute: number, perDay: number, tx: Executor = db) =>
      tx
        .updateTable('api_keys')
        .set({ per_minute: perMinute, per_day: perDay })
        .where('org_id', '=', orgId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst(),
  };
}

/** The dashboard's users. */
function usersRepo(db: Executor) {
  return {
    insertUser: (row: UsersTable, tx: Executor = db) => tx.insertInto('users').values(row).execute(),
    listUsers: (orgId: string, tx: Executor = db) =>
      tx.selectFrom('users').selectAll().where('org_id', '=', orgId).orderBy('created_at').orderBy('id').execute(),

    /** Emails are unique across organizations (users.email_lower), so sign-in needs no organization. */
    findUserByEmail: (email: string, tx: Executor = db) =>
      tx.selectFrom('users').selectAll().where('email_lower', '=', email.trim().toLowerCase()).executeTakeFirst(),
    /** The organization's admins; in a transaction, counted under its row lock (two removals at once take turns). */
    countAdmins: async (orgId: string, tx: Executor = db) => {
      if (tx.isTransaction) await holdOrganization(tx, orgId);
      const r = await tx
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('org_id', '=', orgId)
        .where('role', '=', 'admin')
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    setUserRole: (orgId: string, id: string, role: string, tx: Executor = db) =>
      tx.updateTable('users').set({ role }).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
    setUserPassword: (id: string, passwordHash: string, tx: Executor = db) =>
      tx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', id).executeTakeFirst(),
    deleteUser: (orgId: string, id: string, tx: Executor = db) => tx.deleteFrom('users').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
    findUser: (orgId: string, id: string, tx: Executor = db) =>
      tx.selectFrom('users').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  };
}

/** The accounts module's statements: organizations, sessions, API keys and users, each over `db` unless given a transaction. */
export function accountsRepo(db: Executor) {
  return { ...organizationsRepo(db), ...sessionsRepo(db), ...keysRepo(db), ...usersRepo(db) };
}

export type AccountsRepo = ReturnType<typeof accountsRepo>;
