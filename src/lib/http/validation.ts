import { Ajv, type ErrorObject, type ValidateFunction, type AnySchema } from 'ajv';
import { isIsoTimestamp, isOutOfRangeTimestamp, parseIsoTimestamp } from '../time.js';
import type { LocPart, ValidationIssue } from './errors.js';

/**
 * Enumerations are accepted in any letter case and rewritten to their canonical spelling while the
 * request is validated, so services only ever see canonical values. The keyword carries the canonical
 * list; the OpenAPI document shows it as a plain `enum` (see openapi.ts).
 */
export const CI_ENUM = 'x-enum-ci';

/** Timestamps are rewritten to UTC with milliseconds and a `Z` while validated (no zone means UTC). */
export const CANONICAL_TIMESTAMP = 'x-canonical-timestamp';

type AjvInstance = Ajv;

const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;

function addLanebridgeVocabulary(ajv: AjvInstance): AjvInstance {
  ajv.addFormat('date-time', { type: 'string', validate: isIsoTimestamp });
  ajv.addKeyword({
    keyword: CI_ENUM,
    type: 'string',
    modifying: true,
    errors: true,
    compile(allowed: string[]) {
      const canonical = new Map(allowed.map((v) => [v.toLowerCase(), v]));
      const check = (data: string, ctx?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
        const found = canonical.get(data.toLowerCase());
        if (found === undefined) {
          (check as unknown as ValidateFunction).errors = [
            // ajv fills in instancePath and schemaPath when they are left undefined.
            { keyword: CI_ENUM, params: { allowedValues: allowed }, message: 'enum' } as never,
          ];
          return false;
        }
        if (found !== data && ctx) ctx.parentData[ctx.parentDataProperty] = found;
        return true;
      };
      return check as unknown as (data: unknown) => boolean;
    },
  });
  ajv.addKeyword({
    keyword: CANONICAL_TIMESTAMP,
    type: 'string',
    modifying: true,
    compile(mode: unknown) {
      // `end-of-day`: a bare date is its last millisecond (an inclusive upper bound such as pickup_date_to).
      const endOfDay = mode === 'end-of-day';
      // Validity is the `date-time` format's job; this only canonicalises what passes it.
      return ((data: string, ctx?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
        const canonical = endOfDay && BARE_DATE.test(data) && parseIsoTimestamp(data) !== null ? `${data}T23:59:59.999Z` : parseIsoTimestamp(data);
        if (canonical !== null && ctx) ctx.parentData[ctx.parentDataProperty] = canonical;
        return true;
      }) as unknown as (data: unknown) => boolean;
    },
  });
  return ajv;
}

const common = { allErrors: true, strict: false, verbose: true, allowUnionTypes: true } as const;

/** Bodies: no type coercion (a number is not a string: `string_type`, as pydantic does), no defaults. */
export const bodyAjv = addLanebridgeVocabulary(new Ajv({ ...common, coerceTypes: false, useDefaults: false }));
/** Query strings and path parameters arrive as text: coerce to the declared types, apply defaults. */
export const queryAjv = addLanebridgeVocabulary(new Ajv({ ...common, coerceTypes: true, useDefaults: true }));

const LOC_ROOT: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

export function locRoot(part: string): string {
  return LOC_ROOT[part] ?? part;
}

function pathSegments(instancePath: string): LocPart[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function quoteList(values: unknown[]): string {
  const q = values.map((v) => `'${String(v)}'`);
  if (q.length <= 1) return q.join('');
  return `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

function typeIssue(expected: string, data: unknown, root: string): { type: string; msg: string } {
  const isText = typeof data === 'string';
  switch (expected) {
    case 'string':
      return { type: 'string_type', msg: 'Input should be a valid string' };
    case 'integer':
      if (typeof data === 'number') return { type: 'int_from_float', msg: 'Input should be a valid integer, got a number with a fractional part' };
      return isText || root !== 'body'
        ? { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }
        : { type: 'int_type', msg: 'Input should be a valid integer' };
    case 'number':
      return isText || root !== 'body'
        ? { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' }
        : { type: 'float_type', msg: 'Input should be a valid number' };
    case 'boolean':
      return isText || root !== 'body'
        ? { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' }
        : { type: 'bool_type', msg: 'Input should be a valid boolean' };
    case 'array':
      return { type: 'list_type', msg: 'Input should be a valid list' };
    case 'object':
      return { type: 'dict_type', msg: 'Input should be a valid dictionary or object' };
    default:
      return { type: `${expected}_type`, msg: `Input should be a valid ${expected}` };
  }
}

function toIssue(e: ErrorObject, root: string, prefix: LocPart[]): ValidationIssue | null {
  const loc: LocPart[] = [...prefix, ...pathSegments(e.instancePath)];
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { type: 'missing', loc: [...loc, String(p.missingProperty)], msg: 'Field required' };
    case 'type': {
      const expected =
        String(p.type)
          .split(',')
          .find((t) => t !== 'null') ?? String(p.type);
      return { ...typeIssue(expected, e.data, root), loc };
    }
    case 'maxLength':
      return { type: 'string_too_long', loc, msg: `String should have at most ${p.limit} character${p.limit === 1 ? '' : 's'}` };
    case 'minLength':
      return { type: 'string_too_short', loc, msg: `String should have at least ${p.limit} character${p.limit === 1 ? '' : 's'}` };
    case 'maxItems':
      return { type: 'too_long', loc, msg: `List should have at most ${p.limit} items after validation, not ${Array.isArray(e.data) ? e.data.length : '?'}` };
    case 'minItems':
      return {
        type: 'too_short',
        loc,
        msg: `List should have at least ${p.limit} item${p.limit === 1 ? '' : 's'} after validation, not ${Array.isArray(e.data) ? e.data.length : '?'}`,
      };
    case 'minimum':
      return { type: 'greater_than_equal', loc, msg: `Input should be greater than or equal to ${p.limit}` };
    case 'exclusiveMinimum':
      return { type: 'greater_than', loc, msg: `Input should be greater than ${p.limit}` };
    case 'maximum':
      return { type: 'less_than_equal', loc, msg: `Input should be less than or equal to ${p.limit}` };
    case 'exclusiveMaximum':
      return { type: 'less_than', loc, msg: `Input should be less than ${p.limit}` };
    case 'enum':
    case CI_ENUM:
      return { type: 'enum', loc, msg: `Input should be ${quoteList(p.allowedValues as unknown[])}` };
    case 'const':
      return { type: 'literal_error', loc, msg: `Input should be ${quoteList([p.allowedValue])}` };
    case 'format':
      if (p.format === 'date-time') {
        if (typeof e.data === 'string' && isOutOfRangeTimestamp(e.data)) {
          return {
            type: 'datetime_parsing',
            loc,
            msg: 'Input should be a valid datetime between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC (its offset moves it outside)',
          };
        }
        return { type: 'datetime_parsing', loc, msg: 'Input should be a valid datetime in ISO 8601 form, e.g. 2025-01-31T14:00:00Z' };
      }
      return { type: 'value_error', loc, msg: `Value error, input is not a valid ${String(p.format)}` };
    case 'pattern':
      return { type: 'string_pattern_mismatch', loc, msg: `String should match pattern '${String(p.pattern)}'` };
    case 'additionalProperties':
      return { type: 'extra_forbidden', loc: [...loc, String(p.additionalProperty)], msg: 'Extra inputs are not permitted' };
    case 'anyOf':
    case 'oneOf':
    case 'if':
      // The branch errors already say what is wrong.
      return null;
    default:
      return { type: 'value_error', loc, msg: e.message ?? 'Invalid value' };
  }
}

export function ajvErrorsToIssues(errors: ErrorObject[] | null | undefined, part: string, prefix?: LocPart[]): ValidationIssue[] {
  const root = locRoot(part);
  const base = prefix ?? [root];
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    const issue = toIssue(e, root, base);
    if (!issue) continue;
    const key = `${issue.type}|${issue.loc.join('.')}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  if (issues.length === 0) issues.push({ type: 'value_error', loc: base, msg: 'Invalid input' });
  return issues;
}

/** Validator for a data object checked outside the request cycle (batch items), with body rules. */
export function compileBodyValidator(schema: AnySchema): (data: unknown, prefix: LocPart[]) => ValidationIssue[] | null {
  const validate = bodyAjv.compile(schema);
  return (data, prefix) => (validate(data) ? null : ajvErrorsToIssues(validate.errors, 'body', prefix));
}
