import { userInfo } from 'node:os';
import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { pagination } from '../../lib/http/pagination.js';
import { auditRepo } from './audit.repo.js';
import { AUDIT_RETENTION_DAYS, type AuditAction, type AuditActorType, type AuditEntry, type AuditListQuery, type AuditTargetType } from './audit.schema.js';

/** Who made a change, and from where (docs/api.md, "The audit log"). */
export interface AuditActor {
  type: AuditActorType;
  id: string | null;
  name: string;
  /** The request's client address; null for the command line. */
  ip: string | null;
}

/** The command line (and code that calls a service without saying who): the operating-system user. */
export function cliActor(): AuditActor {
  let name = 'lanebridge CLI';
  try {
    name = `${userInfo().username} (CLI)`;
  } catch {
    // No user name in some containers: the generic name stands.
  }
  return { type: 'cli', id: null, name, ip: null };
}

export interface AuditTarget {
  /** The AuditEntry schema publishes these as an enum: a new kind of target is added to AUDIT_TARGET_TYPES. */
  type: AuditTargetType;
  id: string;
  /** Kept with the entry when the target itself will be gone (a removed user: "Name <email>"). */
  name?: string;
}

const DAY_MS = 86_400_000;

/**
 * Writes one entry in the caller's transaction, so a change and its record commit together or not at
 * all. The organization's entries past the 400 days are dropped in the same step (changes are rare;
 * the (org_id, at) index makes it a short range delete), so no timer is needed.
 */
export async function recordAudit(tx: Executor, clock: Clock, orgId: string, actor: AuditActor, action: AuditAction, target: AuditTarget): Promise<void> {
  const now = clock.now();
  await auditRepo.insert(tx, {
    id: newId('aud', now.getTime()),
    org_id: orgId,
    at: toIso(now),
    action,
    actor_type: actor.type,
    actor_id: actor.id,
    actor_name: actor.name.slice(0, 255),
    target_type: target.type,
    target_id: target.id,
    target_name: target.name?.slice(0, 512) ?? null,
    ip: actor.ip,
  });
  await auditRepo.prune(tx, orgId, toIso(new Date(now.getTime() - AUDIT_RETENTION_DAYS * DAY_MS)));
}

/** Reading the log: the API's list and the dashboard's page. */
export function auditService(db: Executor) {
  return {
    async list(orgId: string, q: AuditListQuery): Promise<{ items: AuditEntry[]; pagination: ReturnType<typeof pagination> }> {
      const { rows, total } = await auditRepo.page(
        db,
        orgId,
        {
          action: q.action?.trim(),
          actorType: q.actor_type,
          actorId: q.actor_id?.trim(),
          targetType: q.target_type?.trim(),
          targetId: q.target_id?.trim(),
          since: q.created_since,
          before: q.created_before,
        },
        (q.page - 1) * q.page_size,
        q.page_size,
      );
      return {
        items: rows.map((r) => ({
          id: r.id,
          at: r.at,
          action: r.action,
          actor: { type: r.actor_type as AuditActorType, id: r.actor_id, name: r.actor_name },
          target: r.target_name ? { type: r.target_type, id: r.target_id, name: r.target_name } : { type: r.target_type, id: r.target_id },
          ip: r.ip,
        })),
        pagination: pagination(q.page, q.page_size, total),
      };
    },
  };
}

export type AuditService = ReturnType<typeof auditService>;

/** An API key acting through the API. */
export const keyActor = (principal: { keyId: string; keyName: string }, ip: string): AuditActor => ({
  type: 'key',
  id: principal.keyId,
  name: principal.keyName,
  ip,
});

/** A signed-in dashboard user. */
export const userActor = (session: { userId: string; userName: string }, ip: string): AuditActor => ({
  type: 'user',
  id: session.userId,
  name: session.userName,
  ip,
});
