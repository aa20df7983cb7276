/**
 * The scopes of specification section 5, write:webhooks (D12: managing webhook endpoints, GET too) and
 * write:imports (D15: every imports route, reads included).
 * GET needs read:<resource>; writes and batches need write:<resource>. read:audit: the audit log (D17).
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
