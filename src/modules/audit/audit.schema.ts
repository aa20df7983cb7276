import { Type, type Static } from '@sinclair/typebox';
import { DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE, pageSchema } from '../../lib/http/pagination.js';
import { CiEnum, Nullable, Text, Timestamp } from '../../lib/http/schema-helpers.js';

export const AUDIT_ACTOR_TYPES = ['user', 'key', 'cli'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** Every action the log records (docs/api.md, "The audit log"); `target.type` is the part before the dot. */
export const AUDIT_ACTIONS = [
  'user.created',
  'user.role_changed',
  'user.password_set',
  'user.sessions_ended',
  'user.removed',
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.limits_changed',
  'key.handling_changed',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.secret_rotated',
  'webhook_endpoint.replayed',
  'settings.changed',
  'import.created',
  'import.cancelled',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an entry's change was done to: the part of its action before the dot. */
export const AUDIT_TARGET_TYPES = ['user', 'key', 'webhook_endpoint', 'import', 'settings'] as const;
export type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number];

/** Days an entry is kept. */
export const AUDIT_RETENTION_DAYS = 400;

export const AuditEntry = Type.Object(
  {
    id: Type.String({ description: 'aud_…' }),
    at: Type.String({ format: 'date-time', description: 'When the change committed (UTC).' }),
    action: Type.String({ enum: [...AUDIT_ACTIONS], description: `What was done: ${AUDIT_ACTIONS.join(', ')}.` }),
    actor: Type.Object(
      {
        type: Type.Union(
          AUDIT_ACTOR_TYPES.map((t) => Type.Literal(t)),
          { description: 'A dashboard user, an API key, or the command line (bin/lanebridge).' },
        ),
        id: Nullable(Type.String({ description: 'The user or key id; null for the command line.' })),
        name: Type.String({ description: 'The user’s name, the key’s name, or the operating-system user that ran the command line.' }),
      },
      { description: 'Who did it.' },
    ),
    target: Type.Object(
      {
        type: Type.String({ enum: [...AUDIT_TARGET_TYPES], description: 'user, key, webhook_endpoint, import or settings.' }),
        id: Type.String(),
        name: Type.Optional(
          Type.String({
            description: 'What the target was called at the time, kept where the target itself is gone: a removed user’s name and email (`user.removed`).',
          }),
        ),
      },
      { description: 'What it was done to.' },
    ),
    ip: Nullable(
      Type.String({ description: 'The client address of the request (TRUST_PROXY decides whether X-Forwarded-For is believed); null for the command line.' }),
    ),
  },
  { $id: 'AuditEntry' },
);
export type AuditEntry = Static<typeof AuditEntry>;

export const AuditEntryPage = pageSchema(Type.Ref(AuditEntry), 'AuditEntryPage');

export const AuditListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, 1-indexed.' }),
  page_size: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: 'Items per page, at most 100.' }),
  action: Type.Optional(Text(64, 'One action (`key.rotated`), or every action on a kind of target with its prefix (`key.`).')),
  actor_type: Type.Optional(CiEnum(AUDIT_ACTOR_TYPES, { description: 'user, key or cli.' })),
  actor_id: Type.Optional(Text(64, 'A user or key id.')),
  target_type: Type.Optional(Text(64, 'user, key, webhook_endpoint, import or settings.')),
  target_id: Type.Optional(Text(64, 'The id of what was changed.')),
  created_since: Type.Optional(Timestamp('Only entries at or after this time (ISO 8601).')),
  created_before: Type.Optional(Timestamp('Only entries before this time (ISO 8601).')),
});
export type AuditListQuery = Static<typeof AuditListQuery>;
