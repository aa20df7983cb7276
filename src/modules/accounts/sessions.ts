import { createHash, randomBytes } from 'node:crypto';
import type { DataStore } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { type Clock, systemClock, toIso } from '../../lib/clock.js';
import { accountsRepo } from './accounts.repo.js';

/** What a dashboard request knows about the signed-in user. */
export interface DashboardSession {
  /** SHA-256 of the cookie's token: the row's id. */
  id: string;
  orgId: string;
  orgName: string;
  userId: string;
  userName: string;
  userEmail: string;
  /** `admin` or `member`, read at every request, so a role change holds from the next one (docs/dashboard.md, "Roles, the first run and the audit log"). */
  userRole: 'admin' | 'member';
  /** The synchronizer token every POST form of this session must carry. */
  csrfToken: string;
  expiresAt: string;
}

export interface SessionOptions {
  /** A session ends this long after sign-in, however active. */
  absoluteMs: number;
  /** A session ends after this long without a request. */
  idleMs: number;
}

export const DEFAULT_SESSION_OPTIONS: SessionOptions = { absoluteMs: 12 * 3_600_000, idleMs: 2 * 3_600_000 };

// last_seen_at is written at most this often per session, so browsing is not a stream of writes.
const TOUCH_INTERVAL_MS = 60_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

const COOKIE_SECRET_SETTING = 'cookie_secret';

/**
 * Server-side dashboard sessions. The cookie carries 256 random bits; the table keeps only their hash,
 * so a copy of the database cannot be used to sign in. Signing out deletes the row: the cookie is
 * then worthless everywhere, on every instance.
 */
export function sessionsService(store: DataStore, clock: Clock = systemClock, options: SessionOptions = DEFAULT_SESSION_OPTIONS) {
  const repo = accountsRepo(store.db);

  return {
    options,

    /**
     * The key that signs dashboard cookies when none is configured: made once and kept in the
     * database, so every instance of a deployment signs alike and a restart signs no one out. Two
     * instances making it at once agree on the first one stored.
     */
    async storedCookieSecret(): Promise<string> {
      const kept = await repo.findSetting(COOKIE_SECRET_SETTING);
      if (kept !== undefined) return kept;
      const fresh = randomBytes(32).toString('base64url');
      try {
        await repo.insertSetting(COOKIE_SECRET_SETTING, fresh, toIso(clock.now()));
        return fresh;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      // Another instance made it first: use theirs.
      return (await repo.findSetting(COOKIE_SECRET_SETTING)) ?? '';
    },

    async create(user: { id: string; org_id: string }): Promise<{ token: string; csrfToken: string; expiresAt: Date }> {
      const now = clock.now();
      const token = randomBytes(32).toString('base64url');
      const csrfToken = randomBytes(32).toString('base64url');
      const expiresAt = new Date(now.getTime() + options.absoluteMs);
      // Expired rows are swept on each sign-in, which keeps the table small without a timer.
      await repo.deleteSessionsExpiredBy(toIso(now));
      await repo.insertSession({
        id: hashToken(token),
        org_id: user.org_id,
        user_id: user.id,
        csrf_token: csrfToken,
        created_at: toIso(now),
        last_seen_at: toIso(now),
        expires_at: toIso(expiresAt),
      });
      return { token, csrfToken, expiresAt };
    },

    /** The live session of a token, or null (unknown, expired, idle too long, or its user gone). */
    async find(token: string): Promise<DashboardSession | null> {
      const id = hashToken(token);
      const row = await repo.findSession(id);
      if (!row) return null;
      const now = clock.now();
      const lastSeen = Date.parse(row.last_seen_at);
      if (Date.parse(row.expires_at) <= now.getTime() || now.getTime() - lastSeen > options.idleMs) {
        await repo.deleteSession(id);
        return null;
      }
      if (now.getTime() - lastSeen > TOUCH_INTERVAL_MS) {
        await repo.touchSession(id, toIso(now));
      }
      return {
        id: row.id,
        orgId: row.org_id,
        orgName: row.org_name,
        userId: row.user_id,
        userName: row.user_name,
        userEmail: row.user_email,
        userRole: row.user_role === 'member' ? 'member' : 'admin',
        csrfToken: row.csrf_token,
        expiresAt: row.expires_at,
      };
    },

    async destroy(token: string): Promise<void> {
      await repo.deleteSession(hashToken(token));
    },
  };
}

export type SessionsService = ReturnType<typeof sessionsService>;
