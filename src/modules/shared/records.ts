import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';

/** external_reference_id cannot be changed: when a body carries one, it must be the record's own. */
export function assertSameReference(pathRef: string, bodyRef: string | undefined): void {
  if (bodyRef !== undefined && bodyRef !== pathRef) {
    throw ValidationError.single(
      ['body', 'external_reference_id'],
      `external_reference_id cannot be changed: the record is '${pathRef}' but the body says '${bodyRef}'`,
    );
  }
}

/** The subset of `patch` that differs from `row`, or null when nothing changes (updated_at then stays). */
export function changedFields<T extends object>(row: T, patch: Partial<T>): Partial<T> | null {
  const changed: Partial<T> = {};
  let any = false;
  for (const key of Object.keys(patch) as (keyof T)[]) {
    if (patch[key] !== row[key]) {
      changed[key] = patch[key];
      any = true;
    }
  }
  return any ? changed : null;
}

/** The fields of `input` that were sent (not undefined), as column values: a partial update's patch. */
export function sentFields<I extends object, K extends keyof I & string>(input: I, fields: readonly K[]): { [F in K]?: Exclude<I[F], undefined> } {
  const patch: Record<string, unknown> = {};
  for (const f of fields) if (input[f] !== undefined) patch[f] = input[f];
  return patch as { [F in K]?: Exclude<I[F], undefined> };
}

/** An external_reference_id of only white space (docs/api.md, "Errors") names nothing a caller could tell apart. */
export function blankReferenceIssues(ref: unknown): ValidationIssue[] {
  return typeof ref === 'string' && ref.length > 0 && ref.trim() === ''
    ? [{ type: 'value_error', loc: ['body', 'external_reference_id'], msg: 'Value error, external_reference_id must not be only white space' }]
    : [];
}

/** The schema's problems, then the other checks' (one entry per place: a field the schema refused is not checked again). */
export function allProblems(schemaIssues: readonly ValidationIssue[], others: readonly ValidationIssue[]): ValidationIssue[] {
  const refused = new Set(schemaIssues.map((i) => JSON.stringify(i.loc)));
  return [...schemaIssues, ...others.filter((i) => !refused.has(JSON.stringify(i.loc)))];
}
