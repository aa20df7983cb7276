import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction } from '../../lib/db/tx.js';
import { bumpVersions } from '../../lib/db/versions.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, DetailError, NotFoundByIdError, ValidationError } from '../../lib/http/errors.js';
import type { AccountsRepo } from './accounts.repo.js';
import { userRow } from './users.js';
import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import { constantTimeEqualText, generateSetupCode } from './secrets.js';

const SETUP_CODE_SETTING = 'setup_code';
/** The largest on-time grace an organization may set (a day), as ON_TIME_GRACE_MINUTES (docs/dashboard.md, "Recommendation evidence"). */
export const MAX_GRACE_MINUTES = 1440;

/** The first-run page without the right setup code (docs/dashboard.md, "Roles, the first run and the audit log"): refused, and nothing made. */
export class SetupCodeError extends DetailError {
  constructor() {
    super('forbidden', 'The setup code is missing or wrong: `lanebridge serve` prints it at start, and `bin/lanebridge setup-code` prints it again');
  }
}

/** The first-run form: the organization's name, its first user, and the setup code. */
interface FirstRunInput {
  organizationName: string;
  name: string;
  email: string;
  password: string;
  setupCode: string;
}

/** What a person types may carry spaces, dashes or lower case: the code is compared without them. */
function normalizeSetupCode(text: string): string {
  return text.toUpperCase().replace(/[^0-9A-Z]/g, '');
}

/**
 * The one-time code the first-run page asks for, made once and kept in the database (every
 * instance and `bin/lanebridge setup-code` read the same one); null once an organization exists.
 */
async function setupCode(repo: AccountsRepo, clock: Clock): Promise<string | null> {
  if ((await repo.countOrganizations()) > 0) return null;
  const kept = await repo.findSetting(SETUP_CODE_SETTING);
  if (kept !== undefined) return kept;
  try {
    await repo.insertSetting(SETUP_CODE_SETTING, generateSetupCode(), toIso(clock.now()));
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  return (await repo.findSetting(SETUP_CODE_SETTING)) ?? null;
}

/**
 * The dashboard's first run: the first organization and its first user, together. A marker row
 * (unique name) makes two concurrent first runs end with one organization, on either engine.
 */
async function setUpFirstOrganization(store: DataStore, repo: AccountsRepo, clock: Clock, input: FirstRunInput, ip: string | null = null) {
  const orgName = input.organizationName.trim();
  if (!orgName) throw ValidationError.single(['organization_name'], 'Organization name must not be empty');
  const org = { id: newId('org'), name: orgName, created_at: toIso(clock.now()) };
  const alreadySetUp = () => new ConflictError('This Lanebridge already has an organization: sign in instead');
  const checkCode = async (tx?: Executor) => {
    const code = await repo.findSetting(SETUP_CODE_SETTING, tx);
    if (code === undefined || !constantTimeEqualText(normalizeSetupCode(input.setupCode), normalizeSetupCode(code))) throw new SetupCodeError();
  };
  // The code first: a wrong one costs a read, never a password hash
  // (docs/dashboard.md, "Throttled forms").
  if ((await repo.countOrganizations()) > 0) throw alreadySetUp();
  await checkCode();
  const user = await userRow(org.id, input, clock);
  try {
    await inTransaction(store, async (tx) => {
      if ((await repo.countOrganizations(tx)) > 0) throw alreadySetUp();
      // Again in the transaction: the code is used once, and another first run may have taken it.
      await checkCode(tx);
      // Used once: gone with the first run's commit.
      await repo.deleteSetting(SETUP_CODE_SETTING, tx);
      await repo.markFirstRun(org.id, org.created_at, tx);
      await repo.insertOrganization(org, tx);
      await repo.insertUser(user, tx);
      await bumpVersions(tx, org.id, new Set(['users']));
      await recordAudit(tx, clock, org.id, { type: 'user', id: user.id, name: user.name, ip }, 'user.created', { type: 'user', id: user.id });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw alreadySetUp();
    throw err;
  }
  return { organization: { id: org.id, name: org.name }, user: { id: user.id, org_id: org.id, name: user.name, email: user.email } };
}

/** Organizations and their TMS API integration (spec section 5: keys need it connected). */
export function organizations(store: DataStore, repo: AccountsRepo, clock: Clock) {
  async function requireOrganization(orgId: string) {
    const org = await repo.findOrganization(orgId);
    if (!org) throw new NotFoundByIdError('Organization', orgId);
    return org;
  }

  async function ensureIntegration(orgId: string, actor: AuditActor = cliActor()) {
    if (await repo.findIntegration(orgId)) return;
    try {
      await inTransaction(store, async (tx) => {
        await repo.insertIntegration(orgId, toIso(clock.now()), tx);
        await recordAudit(tx, clock, orgId, actor, 'settings.changed', { type: 'settings', id: 'tms_integration' });
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
  }

  return {
    require: requireOrganization,
    ensureIntegration,

    async createOrganization(name: string) {
      const trimmed = name.trim();
      if (!trimmed) throw ValidationError.single(['name'], 'Organization name must not be empty');
      const row = { id: newId('org'), name: trimmed, created_at: toIso(clock.now()) };
      await repo.insertOrganization(row);
      return { id: row.id, name: row.name };
    },

    countOrganizations: () => repo.countOrganizations(),
    /** Every organization, oldest first (the CLI's `org list`). */
    listOrganizations: async () => (await repo.listOrganizations()).map((o) => ({ id: o.id, name: o.name, created_at: o.created_at })),
    getOrganization: (orgId: string) => repo.findOrganization(orgId),
    getIntegration: (orgId: string) => repo.findIntegration(orgId),
    isIntegrationConnected: async (orgId: string) => (await repo.findIntegration(orgId)) !== undefined,

    /**
     * The organization's own on-time grace in minutes (0–1440), or null for the server's default
     * (ON_TIME_GRACE_MINUTES). Loads' answers carry the evidence it changes: their version moves, so no
     * cached answer outlives it. Audited as `settings.changed` (target `settings`/`on_time_grace_minutes`).
     */
    async setOnTimeGrace(orgId: string, minutes: number | null, actor: AuditActor = cliActor()) {
      if (minutes !== null && (!Number.isInteger(minutes) || minutes < 0 || minutes > MAX_GRACE_MINUTES)) {
        throw ValidationError.single(
          ['on_time_grace_minutes'],
          `The on-time grace is a whole number of minutes from 0 to ${MAX_GRACE_MINUTES}, or empty for the server's default`,
        );
      }
      const org = await requireOrganization(orgId);
      // The same value again changes nothing: no write, no audit entry, no cached answer dropped.
      if ((org.on_time_grace_minutes ?? null) === minutes) return { on_time_grace_minutes: minutes };
      await inTransaction(store, async (tx) => {
        await repo.setOnTimeGrace(orgId, minutes, tx);
        await bumpVersions(tx, orgId, new Set(['loads', 'lane_history'] as const));
        await recordAudit(tx, clock, orgId, actor, 'settings.changed', { type: 'settings', id: 'on_time_grace_minutes' });
      });
      return { on_time_grace_minutes: minutes };
    },

    async connectIntegration(orgId: string, actor: AuditActor = cliActor()) {
      await requireOrganization(orgId);
      await ensureIntegration(orgId, actor);
      return repo.findIntegration(orgId);
    },

    setupCode: () => setupCode(repo, clock),
    setUpFirstOrganization: (input: FirstRunInput, ip?: string | null) => setUpFirstOrganization(store, repo, clock, input, ip),
  };
}
