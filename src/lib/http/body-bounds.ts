/**
 * A parsed body's lists checked against their schema's `maxItems` before the schema runs (docs/api.md
 * "Bounds of a request"). A list over its bound is named (`too_long`, ajv's own message) and cut to the
 * bound in place, so the full schema then looks at no more than the bound allows: a load of 10,000
 * invalid stops is answered with its `too_long` and the problems of its first 100 stops, not 40,000
 * problems found in seconds. A request with such an entry always fails: nothing reads the cut body.
 * A batch item's data object is not cut: the item fails with its size entries alone (before it is
 * validated), so a batch's Idempotency-Key fingerprint is always of the body as sent.
 * The walk follows the schema (never an unknown field), one call per level of the schema.
 */
import type { LocPart, ValidationIssue } from './errors.js';
import type { BatchItemSchemas } from './ignored-fields.js';

type Schema = Record<string, unknown>;

export interface CutLists {
  /** Entries of the request itself (a single record, a batch envelope). */
  request: ValidationIssue[];
  /** A batch: entries inside each item's data object, by index (each item fails on its own). */
  items: Map<number, ValidationIssue[]>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typesOf(schema: Schema): readonly unknown[] {
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

/** The branch of a union that describes `value` (by its JSON type), or the schema itself. */
function branchFor(schema: Schema, value: unknown): Schema | null {
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (!variants) return schema;
  const wanted = Array.isArray(value) ? 'array' : 'object';
  return variants.find((v) => typesOf(v).includes(wanted)) ?? null;
}

function walk(schema: unknown, value: unknown, loc: LocPart[], out: ValidationIssue[], cut: boolean): void {
  if (!schema || typeof schema !== 'object' || value === null || typeof value !== 'object') return;
  const s = branchFor(schema as Schema, value);
  if (!s) return;
  if (Array.isArray(value)) {
    const max = s.maxItems;
    if (typeof max === 'number' && value.length > max) {
      out.push({ type: 'too_long', loc, msg: `List should have at most ${max} items after validation, not ${value.length}` });
      if (cut) value.length = max;
    }
    const items = s.items;
    if (items && typeof items === 'object') for (let i = 0; i < value.length; i++) walk(items, value[i], [...loc, i], out, cut);
    return;
  }
  const props = s.properties as Schema | undefined;
  if (!props) return;
  for (const name of Object.keys(props)) {
    if (Object.prototype.hasOwnProperty.call(value, name)) walk(props[name], (value as Record<string, unknown>)[name], [...loc, name], out, cut);
  }
}

/**
 * Names and cuts every list of `body` longer than its schema allows (the envelope's or the record's own),
 * then names those of each batch item's data object, with the schema of its operation.
 */
export function cutListsToBounds(body: unknown, schema: unknown, batch?: BatchItemSchemas): CutLists {
  const request: ValidationIssue[] = [];
  const items = new Map<number, ValidationIssue[]>();
  walk(schema, body, ['body'], request, true);
  const list = isObject(body) ? body.items : undefined;
  if (batch && Array.isArray(list)) {
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      if (!isObject(item)) continue;
      const op = typeof item.operation === 'string' ? item.operation.toLowerCase() : '';
      if (op === 'delete') continue;
      const found: ValidationIssue[] = [];
      walk(op === 'create' ? batch.create : batch.update, item[batch.dataKey], ['body', 'items', i, batch.dataKey], found, false);
      if (found.length > 0) items.set(i, found);
    }
  }
  return { request, items };
}
