import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError, type LocPart, type ValidationIssue } from './errors.js';

/**
 * Unknown body fields and query parameters
 * (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`") are ignored
 * (as the contract's own service does), and named in `Lanebridge-Ignored-Fields`; `Prefer:
 * handling=strict` (RFC 7240) or a strict key turns them into a 422 `unknown_field` entry each, with a
 * "did you mean" when a known name is one or two edits away.
 *
 * One place for every API route: the route's own schemas say which names are known (a walk of the
 * parsed body beside them, no second list to keep). A batch item's data object is walked with the
 * schema of its operation; in strict mode an item with an unknown field fails alone, like an item
 * with refused text.
 */

export const IGNORED_FIELDS_HEADER = 'lanebridge-ignored-fields';
/** At most this many paths in the header (a client's header limit is a few KiB); the count goes to the dashboard. */
export const MAX_HEADER_PATHS = 100;
/**
 * The walk stops after this many unknown fields (docs/api.md "Bounds of a request"): each costs ~4 µs
 * in the walk, header and count, and a 1 MiB body of unknown fields holds 87,000 of them.
 */
export const MAX_UNKNOWN_FIELDS = 1000;
/**
 * Each batch item's data object is walked with a budget of its own (the request's would run out on the
 * first items and leave a later item's unknown field unseen: strict handling would write it). An item's
 * 422 lists at most 100; one more tells it that there were more (`truncated`).
 */
const MAX_ITEM_UNKNOWN_FIELDS = 101;
const MAX_NAME_CHARS = 100;

type Schema = Record<string, unknown>;

/** What a batch route tells the walk: the data object's key and the schemas of its operations. */
export interface BatchItemSchemas {
  dataKey: string;
  create: unknown;
  update: unknown;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A batch route: its items' data objects are walked with these schemas (the runtime schema keeps them open). */
    batchItemSchemas?: BatchItemSchemas;
  }
}

export interface UnknownField {
  loc: LocPart[];
  /** The names known where it was found (for the suggestion). */
  known: readonly string[];
}

const knownNames = new WeakMap<object, { set: ReadonlySet<string> | null; list: readonly string[] }>();

/** The property names a schema declares for an object, or null when it says nothing (an open value). */
function namesOf(schema: Schema): { set: ReadonlySet<string> | null; list: readonly string[] } {
  let found = knownNames.get(schema);
  if (found) return found;
  const props = schema.properties as Schema | undefined;
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  let list: string[] | null = null;
  if (props && schema.additionalProperties !== true && typeof schema.additionalProperties !== 'object') list = Object.keys(props);
  else if (variants) {
    // A union (a nullable object, a choice of shapes): a name any object branch knows is known.
    const objects = variants.filter((v) => v.properties);
    if (objects.length > 0 && objects.every((v) => v.additionalProperties !== true))
      list = [...new Set(objects.flatMap((v) => Object.keys(v.properties as Schema)))];
  }
  found = list ? { set: new Set(list), list } : { set: null, list: [] };
  knownNames.set(schema, found);
  return found;
}

/** The schema of `name` inside an object schema (through a union's object branches). */
function propertySchema(schema: Schema, name: string): Schema | undefined {
  const props = schema.properties as Schema | undefined;
  if (props && Object.prototype.hasOwnProperty.call(props, name)) return props[name] as Schema;
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (!variants) return undefined;
  for (const v of variants) {
    const p = v.properties as Schema | undefined;
    if (p && Object.prototype.hasOwnProperty.call(p, name)) return p[name] as Schema;
  }
  return undefined;
}

function itemsSchema(schema: Schema): Schema | undefined {
  if (schema.items && typeof schema.items === 'object') return schema.items as Schema;
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  return variants?.find((v) => v.items && typeof v.items === 'object')?.items as Schema | undefined;
}

/** Collects the fields of `value` its schema does not declare, at any depth (arrays by index). */
export function unknownFields(schema: unknown, value: unknown, loc: LocPart[], out: UnknownField[] = [], limit = MAX_UNKNOWN_FIELDS): UnknownField[] {
  if (value === null || typeof value !== 'object' || !schema || typeof schema !== 'object') return out;
  const s = schema as Schema;
  if (Array.isArray(value)) {
    const items = itemsSchema(s);
    if (items)
      for (let i = 0; i < value.length && out.length < limit; i++)
        if (value[i] !== null && typeof value[i] === 'object') unknownFields(items, value[i], [...loc, i], out, limit);
    return out;
  }
  const names = namesOf(s);
  if (!names.set) return out;
  for (const key in value as Record<string, unknown>) {
    if (out.length >= limit) return out;
    const child = (value as Record<string, unknown>)[key];
    if (!names.set.has(key)) out.push({ loc: [...loc, key], known: names.list });
    else if (child !== null && typeof child === 'object') unknownFields(propertySchema(s, key), child, [...loc, key], out, limit);
  }
  return out;
}

/** Optimal string alignment distance (a swap of two neighbours is one edit), stopped past `max`. */
export function editDistance(a: string, b: string, max = 2): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]![j] = j;
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
    if (i > 0 && Math.min(...rows[i]!) > max) return max + 1;
  }
  return rows[a.length]![b.length]!;
}

/** The known name one or two edits away (case ignored), nearest first; null when none is. */
export function suggestion(name: string, known: readonly string[]): string | null {
  const lower = name.toLowerCase();
  let best: string | null = null;
  let bestDistance = 3;
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

export function unknownFieldIssue(field: UnknownField): ValidationIssue {
  const name = String(field.loc[field.loc.length - 1]);
  const near = suggestion(name, field.known);
  const where = field.loc.length > 2 ? ` in ${fieldPath(field.loc.slice(1, -1))}` : '';
  const msg = `Unknown field '${name}'${where}${near ? `; did you mean '${near}'?` : ''}`;
  return { type: 'unknown_field', loc: field.loc, msg };
}

/** A name as it can travel in a header: printable ASCII without commas, else percent-encoded; capped. */
function headerName(part: string): string {
  const text = part.length > MAX_NAME_CHARS ? part.slice(0, MAX_NAME_CHARS) : part;
  return /^[\x21-\x2b\x2d-\x7e]*$/.test(text) ? text : encodeURIComponent(text);
}

/** `body.contacts[0].phone_number`, `query.custmer_id`. */
export function fieldPath(loc: readonly LocPart[]): string {
  let out = '';
  for (const part of loc) out += typeof part === 'number' ? `[${part}]` : `${out ? '.' : ''}${headerName(part)}`;
  return out;
}

/** The path without positions (`body.items[].load.nmae`): what the dashboard counts per field. */
export function fieldName(loc: readonly LocPart[]): string {
  return fieldPath(loc).replace(/\[\d+\]/g, '[]');
}

/** RFC 7240: whether a `Prefer` header asks for `handling=strict` (preferences are comma-separated, names case-insensitive). */
export function prefersStrict(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!/handling/i.test(text)) return false;
  for (const pref of text.split(',')) {
    const [token = '', value = ''] = (pref.split(';')[0] ?? '').split('=').map((s) => s.trim());
    // The first occurrence of a preference wins (RFC 7240 section 2).
    if (token.toLowerCase() === 'handling') return value.replace(/^"|"$/g, '').toLowerCase() === 'strict';
  }
  return false;
}

const NO_NAMES = { set: new Set<string>() as ReadonlySet<string>, list: [] as readonly string[] };

interface RequestFields {
  ignored: UnknownField[];
  strict: boolean;
  /** Strict: the request's own unknown fields (not a batch item's), answered 422 after validation. */
  refused: ValidationIssue[] | null;
}

const requestFields = new WeakMap<FastifyRequest, RequestFields>();
/** `__proto__` keys the body parser dropped (they can never be a schema's field): where they stood. */
const strippedKeys = new WeakMap<FastifyRequest, LocPart[][]>();

/** The body parser dropped these `__proto__` keys: they are unknown fields like any other. */
export function noteStrippedKeys(req: FastifyRequest, locs: LocPart[][]): void {
  strippedKeys.set(req, locs);
}

/** Strict issues of a request that also failed its schema: one 422 names both (see asApiError). */
export function strictIssuesOf(req: FastifyRequest): ValidationIssue[] | null {
  return requestFields.get(req)?.refused ?? null;
}

export interface IgnoredFieldsOptions {
  /** Whether the caller's key is strict for every request (the principal is set by then). */
  strictKey(req: FastifyRequest): boolean;
  /** Ignored fields of an answered request (lenient), to count per key and field. */
  record?(req: FastifyRequest, fields: readonly string[]): void;
  /** Batch items refused in strict mode: each fails 422 alone (the batch runner's refused items). */
  refuseBatchItems(req: FastifyRequest, byItem: Map<number, ValidationIssue[]>): void;
}

function walkRequest(req: FastifyRequest, bodySchema: unknown, querySchema: unknown, batch: BatchItemSchemas | undefined): UnknownField[] {
  const found: UnknownField[] = [];
  const query = req.query as Record<string, unknown> | undefined;
  if (query && typeof query === 'object') {
    const names = querySchema ? namesOf(querySchema as Schema) : NO_NAMES;
    if (names.set)
      for (const key in query) if (!names.set.has(key) && found.length < MAX_UNKNOWN_FIELDS) found.push({ loc: ['query', key], known: names.list });
  }
  const body = req.body;
  if (bodySchema && body !== null && typeof body === 'object') {
    unknownFields(bodySchema, body, ['body'], found);
    const items = (body as { items?: unknown }).items;
    if (batch && Array.isArray(items)) {
      for (let i = 0; i < items.length; i++) {
        const item = items[i] as Record<string, unknown> | null;
        if (item === null || typeof item !== 'object') continue;
        const data = item[batch.dataKey];
        const op = typeof item.operation === 'string' ? item.operation.toLowerCase() : '';
        if (op === 'delete' || data === null || typeof data !== 'object') continue;
        const mine = unknownFields(op === 'create' ? batch.create : batch.update, data, ['body', 'items', i, batch.dataKey], [], MAX_ITEM_UNKNOWN_FIELDS);
        for (const f of mine) found.push(f);
      }
    }
  }
  for (const loc of strippedKeys.get(req) ?? []) found.push({ loc, known: [] });
  return found;
}

/**
 * The hooks, on API routes only (those that declare a scope): the walk before validation (the body as
 * sent), the strict 422 before the handler and its Idempotency-Key claim, the header as the answer goes.
 */
export function installIgnoredFields(app: FastifyInstance, o: IgnoredFieldsOptions): void {
  const walkHook = (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const schema = req.routeOptions.schema;
    const found = walkRequest(req, schema?.body, schema?.querystring, req.routeOptions.config?.batchItemSchemas);
    const strictPreferred = prefersStrict(req.headers.prefer);
    const strict = strictPreferred || (req.principal !== undefined && o.strictKey(req));
    if (strictPreferred) reply.header('preference-applied', 'handling=strict');
    if (found.length === 0) return done();
    if (!strict) {
      requestFields.set(req, { ignored: found, strict, refused: null });
      return done();
    }
    const own: ValidationIssue[] = [];
    const byItem = new Map<number, ValidationIssue[]>();
    const isBatch = req.routeOptions.config?.batchItemSchemas !== undefined;
    for (const f of found) {
      const [root, items, index] = f.loc;
      if (isBatch && root === 'body' && items === 'items' && typeof index === 'number' && f.loc.length > 4)
        byItem.set(index, [...(byItem.get(index) ?? []), unknownFieldIssue(f)]);
      else own.push(unknownFieldIssue(f));
    }
    if (byItem.size > 0) o.refuseBatchItems(req, byItem);
    requestFields.set(req, { ignored: [], strict, refused: own.length > 0 ? own : null });
    done();
  };
  const refuseHook = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const refused = requestFields.get(req)?.refused;
    done(refused ? new ValidationError(refused) : undefined);
  };
  const headerHook = (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const fields = requestFields.get(req);
    if (fields && fields.ignored.length > 0) {
      const paths = [...new Set(fields.ignored.map((f) => fieldPath(f.loc)))];
      reply.header(IGNORED_FIELDS_HEADER, paths.slice(0, MAX_HEADER_PATHS).join(', '));
      // Counted once per request and field, when the answer is not a replay of one already counted.
      if (o.record && !reply.getHeader('idempotent-replayed')) o.record(req, [...new Set(fields.ignored.map((f) => fieldName(f.loc)))]);
    }
    done(null, payload);
  };
  const asList = <T>(hook: T | T[] | undefined): T[] => (hook === undefined ? [] : Array.isArray(hook) ? hook : [hook]);
  app.addHook('onRoute', (route) => {
    if (!route.config?.scope) return;
    // First among the route's own hooks: they run after the app-wide ones (content type, refused text).
    route.preValidation = [walkHook, ...asList(route.preValidation)] as never;
    route.preHandler = [refuseHook, ...asList(route.preHandler)] as never;
    route.onSend = [...asList(route.onSend), headerHook] as never;
  });
}
