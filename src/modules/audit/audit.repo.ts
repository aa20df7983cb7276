import type { Executor } from '../../lib/db/index.js';
import type { AuditLogTable } from '../../lib/db/types.js';

export interface AuditFilter {
  action?: string | undefined;
  actorType?: string | undefined;
  actorId?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  since?: string | undefined;
  before?: string | undefined;
}

function filtered(tx: Executor, orgId: string, f: AuditFilter) {
  let q = tx.selectFrom('audit_log').where('org_id', '=', orgId);
  // A kind (`key.`) is a range of the byte-ordered text (collate "C" on PostgreSQL): no LIKE wildcards to escape.
  if (f.action)
    q = f.action.endsWith('.') ? q.where('action', '>=', f.action).where('action', '<', `${f.action.slice(0, -1)}/`) : q.where('action', '=', f.action);
  if (f.actorType) q = q.where('actor_type', '=', f.actorType);
  if (f.actorId) q = q.where('actor_id', '=', f.actorId);
  if (f.targetType) q = q.where('target_type', '=', f.targetType);
  if (f.targetId) q = q.where('target_id', '=', f.targetId);
  if (f.since) q = q.where('at', '>=', f.since);
  if (f.before) q = q.where('at', '<', f.before);
  return q;
}

export const auditRepo = {
  insert: (tx: Executor, row: AuditLogTable) => tx.insertInto('audit_log').values(row).execute(),
  /** An organization's entries older than `cutoff` (ISO); the (org_id, at) index keeps it a short range. */
  prune: (tx: Executor, orgId: string, cutoff: string) => tx.deleteFrom('audit_log').where('org_id', '=', orgId).where('at', '<', cutoff).execute(),
  /** A page of an organization's entries, newest first (then id, newest first). */
  async page(tx: Executor, orgId: string, f: AuditFilter, offset: number, limit: number) {
    const [rows, total] = await Promise.all([
      filtered(tx, orgId, f).selectAll().orderBy('at', 'desc').orderBy('id', 'desc').offset(offset).limit(limit).execute(),
      filtered(tx, orgId, f)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst(),
    ]);
    return { rows, total: Number(total?.n ?? 0) };
  },
};
