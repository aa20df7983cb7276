/**
 * The scopes of specification section 5, write:webhooks (managing webhook endpoints, GET too) and
 * write:imports (every imports route, reads included).
 * GET needs read:<resource>; writes and batches need write:<resource>. read:audit: the audit log.
 * (docs/api.md, "Authentication and scopes"; docs/webhooks.md; docs/imports.md.)
 */
export const SCOPES = [
  'read:locations',
  'write:locations',
  'read:loads',
  'write:loads',
  'read:carriers',
  'write:carriers',
  'read:customers',
  'write:customers',
  'write:rates',
  'write:webhooks',
  'write:imports',
  'read:audit',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
