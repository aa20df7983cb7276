import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { AuditEntryPage, AuditListQuery } from './audit.schema.js';
import type { AuditService } from './audit.js';

/** The organization's audit log, newest first (scope read:audit; docs/api.md, "The audit log"). */
export function auditRoutes(app: FastifyInstance, audit: AuditService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/v2/tms-api/audit-log', {
    config: { scope: 'read:audit' },
    schema: {
      tags: ['Audit log'],
      operationId: 'listAuditLog',
      summary: 'The audit log: every change to users, keys, webhook endpoints, imports and settings, newest first',
      description:
        'One entry per change, written in the same transaction as the change (an entry exists exactly when its change committed). Kept 400 days. `action` filters one action (`key.rotated`) or, ending in a dot, a kind (`key.`).',
      querystring: AuditListQuery,
      response: { 200: Type.Ref(AuditEntryPage, { description: 'A page of entries, newest first.' }) },
    },
    handler: (req) => audit.list(principalOf(req).orgId, req.query),
  });
}
