import type { Executor } from '../../lib/db/index.js';
import type { ValidationIssue } from '../../lib/http/errors.js';
import { parseIsoTimestamp } from '../../lib/time.js';
import { ruleIssue, unknownLocationIssue, windowIssue } from '../../domain/load.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { findByRefs } from './loads.repo.js';
import { LOAD_CARRIER, LOAD_CUSTOMER, LOAD_STOP_LOCATION, type LoadReference } from './references.js';

/** The 422 (docs/api.md, "Loads") for a customer or carrier the organization does not have (the loc names the field). */
export function unknownReferenceIssue(reference: LoadReference, ref: string): ValidationIssue {
  return ruleIssue(
    ['body', reference.field],
    `no ${RECORD_KINDS[reference.kind].noun} with external_reference_id '${ref}' in your organization: create it first`,
  );
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
  for (const reference of [LOAD_CUSTOMER, LOAD_CARRIER]) {
    const ref = body[reference.field];
    if (typeof ref === 'string' && ref.length > 0 && (await findByRefs(tx, reference.kind, orgId, [ref])).length === 0) {
      issues.push(unknownReferenceIssue(reference, ref));
    }
  }
  if (Array.isArray(body.stops)) {
    const stops = body.stops.map((s) => (isObject(s) ? s : {}));
    const field = LOAD_STOP_LOCATION.field;
    const refs = stops.flatMap((s) => (typeof s[field] === 'string' && s[field].length > 0 ? [s[field]] : []));
    const known = new Set((await findByRefs(tx, LOAD_STOP_LOCATION.kind, orgId, refs)).map((l) => l.external_reference_id));
    stops.forEach((s, i) => {
      const ref = s[field];
      if (typeof ref === 'string' && ref.length > 0 && !known.has(ref)) issues.push(unknownLocationIssue(i, ref));
      const early = typeof s.early_arrival === 'string' ? parseIsoTimestamp(s.early_arrival) : null;
      const late = typeof s.late_arrival === 'string' ? parseIsoTimestamp(s.late_arrival) : null;
      if (early !== null && late !== null && late < early) issues.push(windowIssue(i, early, late));
    });
  }
  return issues;
}
