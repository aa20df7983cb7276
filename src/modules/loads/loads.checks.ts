import type { Executor } from '../../lib/db/index.js';
import type { ValidationIssue } from '../../lib/http/errors.js';
import { parseIsoTimestamp } from '../../lib/time.js';
import { ruleIssue, unknownLocationIssue, windowIssue } from '../../domain/load.js';
import { findByRefs } from './loads.repo.js';

/** The 422 (docs/api.md, "Loads") for a customer or carrier the organization does not have (the loc names the field). */
export function unknownReferenceIssue(table: 'customers' | 'carriers', field: string, ref: string): ValidationIssue {
  return ruleIssue(['body', field], `no ${table.slice(0, -1)} with external_reference_id '${ref}' in your organization: create it first`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The checks of a load body that need the database (unknown customer, carrier or stop location)
 * and the arrival windows, run on a body that failed its schema, so the one 422 lists them beside the
 * schema's problems. Only values of the right type are looked at (a wrong type is the schema's entry).
 * Bodies that pass their schema get the same checks, with the same messages, from loads.write.ts.
 */
export async function loadBodyProblems(tx: Executor, orgId: string, body: unknown): Promise<ValidationIssue[]> {
  if (!isObject(body)) return [];
  const issues: ValidationIssue[] = [];
  for (const [table, field] of [
    ['customers', 'customer_external_reference_id'],
    ['carriers', 'carrier_external_reference_id'],
  ] as const) {
    const ref = body[field];
    if (typeof ref === 'string' && ref.length > 0 && (await findByRefs(tx, table, orgId, [ref])).length === 0) {
      issues.push(unknownReferenceIssue(table, field, ref));
    }
  }
  if (Array.isArray(body.stops)) {
    const stops = body.stops.map((s) => (isObject(s) ? s : {}));
    const refs = stops.flatMap((s) =>
      typeof s.location_external_reference_id === 'string' && s.location_external_reference_id.length > 0 ? [s.location_external_reference_id] : [],
    );
    const known = new Set((await findByRefs(tx, 'locations', orgId, refs)).map((l) => l.external_reference_id));
    stops.forEach((s, i) => {
      const ref = s.location_external_reference_id;
      if (typeof ref === 'string' && ref.length > 0 && !known.has(ref)) issues.push(unknownLocationIssue(i, ref));
      const early = typeof s.early_arrival === 'string' ? parseIsoTimestamp(s.early_arrival) : null;
      const late = typeof s.late_arrival === 'string' ? parseIsoTimestamp(s.late_arrival) : null;
      if (early !== null && late !== null && late < early) issues.push(windowIssue(i, early, late));
    });
  }
  return issues;
}
