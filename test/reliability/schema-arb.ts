// fast-check arbitraries derived from the OpenAPI document: valid values from a JSON schema, and
// mutations of them (wrong types, missing and extra fields, boundary and huge values, unicode,
// injection strings). Only the JSON-schema keywords the document uses are handled; an unknown one makes
// the generator throw, so a schema change cannot silently narrow what is tested.
import fc from 'fast-check';
import { ACCEPTED_TIMESTAMP_PATTERN } from '../../src/lib/http/openapi.js';

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  required?: string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  default?: unknown;
  description?: string;
  deprecated?: boolean;
  /** Case-insensitive enums (the canonical enum or any spelling), batch items (one variant per operation). */
  anyOf?: JsonSchema[];
}

const KNOWN_KEYWORDS = new Set([
  'type',
  'enum',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'minItems',
  'maxItems',
  'required',
  'properties',
  'items',
  'default',
  'description',
  'deprecated',
  'title',
  'examples',
  'example',
  'anyOf',
  // A map (D15's csv.columns): generated as an object of its listed properties (none), which it accepts.
  'additionalProperties',
]);

/** The document with its local `$ref`s replaced by what they name (request bodies name components). */
export function dereference<T>(doc: T): T {
  const root = doc as Record<string, any>;
  const seen = new Map<string, unknown>();
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    const obj = node as Record<string, unknown>;
    if (typeof obj.$ref === 'string' && obj.$ref.startsWith('#/')) {
      const target = obj.$ref;
      if (!seen.has(target)) {
        const found = target
          .slice(2)
          .split('/')
          .reduce<any>((at, key) => at?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], root);
        seen.set(target, walk(found));
      }
      const { $ref: _ref, ...siblings } = obj;
      return { ...(seen.get(target) as object), ...(walk(siblings) as object) };
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, walk(v)]));
  };
  return walk(doc) as T;
}

/** The branch of an `anyOf` that describes a value (the schema itself when it has none). */
function branchFor(schema: JsonSchema | undefined, value: unknown): JsonSchema | undefined {
  if (!schema?.anyOf) return schema;
  const fits = (b: JsonSchema) => {
    if (value === null) return types(b).includes('null');
    if (typeof value === 'string')
      return types(b).includes('string') && (!b.enum || b.enum.includes(value)) && (!b.pattern || new RegExp(b.pattern).test(value));
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return types(b).includes('object') && (b.required ?? []).every((k) => k in value) && Object.keys(value).every((k) => k in (b.properties ?? {}));
    }
    return true;
  };
  return schema.anyOf.find(fits) ?? schema.anyOf[0];
}

export const INJECTIONS = [
  "' OR 1=1 --",
  "'; DROP TABLE loads; --",
  '" OR ""="',
  '1; SELECT pg_sleep(10)',
  "') UNION SELECT key_hash FROM api_keys --",
  '%',
  '_',
  '%%',
  '\\',
  '\\\\%',
  '*',
  '$where',
  '{"$ne":null}',
  '../../etc/passwd',
  '..%2F..%2F',
  '<script>alert(1)</script>',
  '${jndi:ldap://127.0.0.1/x}',
  '{{7*7}}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'null',
  'undefined',
  'NaN',
  'true',
  '[]',
  '{}',
  '-',
  '--',
  '+',
  ',',
  ',,,',
  'id',
  'org_id',
  'created_at;',
  'name desc',
];

export const UNICODE = [
  '💥🚚',
  'Ünïcödé',
  'ﬃ',
  'ß',
  'İstanbul',
  'ı',
  'Ǆ',
  '\u202eevil',
  'a\u200bb',
  '\ufeffbom',
  'e\u0301',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '日本語のテキスト',
  'עברית',
  'العربية',
  '\ud800',
  '\udfff',
  'a\ud83d',
  '\u0000',
  'tab\there',
  'new\nline',
  'cr\rlf',
  '\u0085',
  '\u2028',
  '０１２３',
  'Ⅻ',
  '🏳️‍🌈',
  'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǫ̗̻',
];

const WRONG_TYPED: unknown[] = [0, -1, 1.5, 1e308, true, false, null, '', 'text', [], [1, 'a'], {}, { nested: { deeper: true } }];

function check(schema: JsonSchema) {
  for (const k of Object.keys(schema)) if (!KNOWN_KEYWORDS.has(k)) throw new Error(`schema keyword '${k}' is not handled by the generator`);
}

function types(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

/** Hints that make generated values meet the data (known references, codes that geocode). */
export interface Hints {
  /** By property name: values that exist or make sense. Used half of the time. */
  byName: Record<string, readonly unknown[]>;
  /** The schema of the data object of a batch item (`customer`, `load`, …), for create/upsert and update. */
  batchData?: Record<string, { create: JsonSchema; update: JsonSchema }>;
}

function randomCase(s: string): fc.Arbitrary<string> {
  return fc.constantFrom(s, s.toLowerCase(), s.toUpperCase(), s.charAt(0).toUpperCase() + s.slice(1).toLowerCase());
}

/** Valid text for a string schema (pattern, format, length). */
function validString(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'date-time' || schema.pattern === ACCEPTED_TIMESTAMP_PATTERN) {
    // Timestamps: canonical, or (for inputs, which accept them) without an offset.
    return fc
      .tuple(fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }), fc.boolean())
      .map(([d, withZone]) => (withZone || schema.format ? d.toISOString() : d.toISOString().slice(0, 19)));
  }
  if (schema.format) throw new Error(`format '${schema.format}' is not handled`);
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? Infinity));
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, Math.max(minLength, 40));
  return fc
    .oneof({ weight: 4, arbitrary: fc.string({ minLength, maxLength }) }, { weight: 1, arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme' }) })
    .filter((s) => s.trim().length >= minLength);
}

/** Values that the schema accepts (and, with hints, values the data makes meaningful). */
export function validArb(schema: JsonSchema, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  check(schema);
  const hinted = hints.byName[name];
  const plain = plainValidArb(schema, hints, name);
  if (hinted && hinted.length > 0) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...hinted) }, { weight: 2, arbitrary: plain });
  return plain;
}

function plainValidArb(schema: JsonSchema, hints: Hints, name: string): fc.Arbitrary<unknown> {
  const ts = types(schema);
  const nullable = ts.includes('null');
  const nonNull = ts.filter((t) => t !== 'null');
  let arb: fc.Arbitrary<unknown>;
  if (schema.anyOf) {
    arb = fc.oneof(...schema.anyOf.map((branch) => validArb(branch, hints, name)));
  } else if (schema.enum) {
    const values = schema.enum.filter((v) => v !== null);
    arb = fc.constantFrom(...values).chain((v) => (typeof v === 'string' ? randomCase(v) : fc.constant(v)));
  } else if (nonNull.length === 0) {
    // No type: a batch item's data object, validated per item with the resource's own schema.
    const data = hints.batchData?.[name];
    if (!data) return fc.anything({ maxDepth: 2 });
    arb = fc.oneof(validArb(data.create, hints), validArb(data.update, hints));
  } else {
    const t = nonNull[0]!;
    switch (t) {
      case 'string':
        arb = validString(schema);
        break;
      case 'integer':
        arb = fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
        break;
      case 'number': {
        const min = schema.exclusiveMinimum ?? schema.minimum ?? -1e6;
        const max = schema.maximum ?? 1e6;
        arb = fc.oneof(
          fc.double({ min, max, noNaN: true, noDefaultInfinity: true, minExcluded: schema.exclusiveMinimum !== undefined }),
          fc.integer({ min: Math.ceil(min + (schema.exclusiveMinimum !== undefined ? 1 : 0)), max: Math.floor(max) }),
        );
        break;
      }
      case 'boolean':
        arb = fc.boolean();
        break;
      case 'array': {
        const minLength = schema.minItems ?? 0;
        const maxLength = Math.min(schema.maxItems ?? 5, minLength + 4);
        arb = fc.array(validArb(schema.items ?? {}, hints, name), { minLength, maxLength });
        break;
      }
      case 'object': {
        const props = schema.properties ?? {};
        const model: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, s] of Object.entries(props)) model[k] = validArb(s, hints, k);
        arb = fc.record(model, { requiredKeys: schema.required ?? [] });
        break;
      }
      default:
        throw new Error(`type '${t}' is not handled`);
    }
  }
  return nullable ? fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(null) }) : arb;
}

// ---------------------------------------------------------------------------------------------
// Mutations of a valid value

type Path = (string | number)[];

interface Node {
  path: Path;
  schema: JsonSchema | undefined;
  value: unknown;
}

/** Every node of a value with the schema that describes it (undefined where the schema says nothing). */
function nodes(value: unknown, schema: JsonSchema | undefined, hints: Hints, path: Path = [], out: Node[] = []): Node[] {
  schema = branchFor(schema, value);
  out.push({ path, schema, value });
  if (Array.isArray(value)) value.forEach((v, i) => nodes(v, schema?.items, hints, [...path, i], out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      let s = branchFor(schema?.properties?.[k], v);
      if (s && types(s).length === 0 && !s.enum) s = hints.batchData?.[k]?.create;
      nodes(v, s, hints, [...path, k], out);
    }
  }
  return out;
}

function setAt(root: unknown, path: Path, v: unknown | typeof REMOVE): unknown {
  if (path.length === 0) return v === REMOVE ? undefined : v;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let cur: Record<string | number, unknown> = copy;
  for (const p of path.slice(0, -1)) cur = cur[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (v === REMOVE) {
    if (Array.isArray(cur)) cur.splice(Number(last), 1);
    else delete cur[last];
  } else cur[last] = v;
  return copy;
}

const REMOVE = Symbol('remove');

export type MutationKind = 'missing' | 'wrong_type' | 'extra' | 'boundary' | 'huge' | 'unicode' | 'injection' | 'not_object';

/** One mutation of a valid body: the new body and what was done (for the failure report). */
export function mutateBody(valid: unknown, schema: JsonSchema, hints: Hints): fc.Arbitrary<{ body: unknown; mutation: string }> {
  const all = nodes(valid, schema, hints);
  const pick = <T>(xs: T[]) => fc.nat({ max: Math.max(0, xs.length - 1) }).map((i) => xs[i]!);
  const objects = all.filter((n) => n.value && typeof n.value === 'object' && !Array.isArray(n.value));
  const withRequired = objects.filter((n) => (n.schema?.required ?? []).some((k) => k in (n.value as object)));
  const leaves = all.filter((n) => n.path.length > 0);
  const strings = all.filter((n) => typeof n.value === 'string');
  const kinds: fc.Arbitrary<{ body: unknown; mutation: string }>[] = [
    fc.constantFrom<unknown>(null, [], 'text', 42, true, [valid]).map((b) => ({ body: b, mutation: `body replaced by ${JSON.stringify(b)?.slice(0, 40)}` })),
  ];
  if (withRequired.length > 0) {
    kinds.push(
      pick(withRequired).chain((n) =>
        fc.constantFrom(...n.schema!.required!.filter((k) => k in (n.value as object))).map((k) => ({
          body: setAt(valid, [...n.path, k], REMOVE),
          mutation: `missing ${[...n.path, k].join('.')}`,
        })),
      ),
    );
  }
  if (leaves.length > 0) {
    kinds.push(
      fc
        .tuple(pick(leaves), fc.constantFrom(...WRONG_TYPED))
        .map(([n, v]) => ({ body: setAt(valid, n.path, v), mutation: `wrong type at ${n.path.join('.')}: ${JSON.stringify(v)}` })),
      pick(leaves).chain((n) =>
        boundaryValues(n.schema).map((v) => ({ body: setAt(valid, n.path, v), mutation: `boundary at ${n.path.join('.')}: ${describe(v)}` })),
      ),
    );
  }
  if (objects.length > 0) {
    kinds.push(
      fc
        .tuple(
          pick(objects),
          fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'org_id', 'created_at', 'updated_at', 'key_hash', 'zzz', '💥', ''),
          fc.constantFrom(...WRONG_TYPED, 'x'),
        )
        .map(([n, k, v]) => {
          // JSON text, so that a "__proto__" key really is an own property in the request.
          const obj = { ...(n.value as object) } as Record<string, unknown>;
          Object.defineProperty(obj, k, { value: v, enumerable: true, configurable: true, writable: true });
          return { body: setAt(valid, n.path, obj), mutation: `extra field ${k} at ${n.path.join('.') || '(root)'}` };
        }),
    );
  }
  if (strings.length > 0) {
    kinds.push(
      fc
        .tuple(pick(strings), fc.constantFrom(...UNICODE))
        .map(([n, s]) => ({ body: setAt(valid, n.path, s), mutation: `unicode at ${n.path.join('.')}: ${JSON.stringify(s)}` })),
      fc
        .tuple(pick(strings), fc.constantFrom(...INJECTIONS))
        .map(([n, s]) => ({ body: setAt(valid, n.path, s), mutation: `injection at ${n.path.join('.')}: ${s}` })),
    );
  }
  return fc.oneof(...kinds);
}

function describe(v: unknown): string {
  if (typeof v === 'string') return v.length > 40 ? `string of ${v.length} chars` : JSON.stringify(v);
  if (Array.isArray(v)) return `array of ${v.length}`;
  return JSON.stringify(v);
}

/** Values at and just past the schema's limits, and huge ones. */
function boundaryValues(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const out: unknown[] = ['x'.repeat(100_000), 1e308, -1e308, 2 ** 53 + 1, -(2 ** 63), 5e-324, -0, []];
  if (schema) {
    if (schema.maxLength !== undefined)
      out.push('y'.repeat(schema.maxLength), 'y'.repeat(schema.maxLength + 1), '🚚'.repeat(schema.maxLength), '🚚'.repeat(schema.maxLength + 1));
    if (schema.minLength !== undefined && schema.minLength > 0) out.push('', ' '.repeat(schema.minLength), '\t'.repeat(schema.minLength));
    if (schema.minimum !== undefined) out.push(schema.minimum, schema.minimum - 1, schema.minimum - 1e-9);
    if (schema.maximum !== undefined) out.push(schema.maximum, schema.maximum + 1, schema.maximum + 1e-9);
    if (schema.exclusiveMinimum !== undefined) out.push(schema.exclusiveMinimum, schema.exclusiveMinimum + 5e-324);
    if (types(schema).includes('integer')) out.push(1.5, 2 ** 31, -(2 ** 31) - 1, 1e21);
    if (schema.format === 'date-time' || schema.pattern === ACCEPTED_TIMESTAMP_PATTERN) {
      out.push(
        '2024-02-30T00:00:00Z',
        '2024-13-01T00:00:00Z',
        '0000-01-01T00:00:00Z',
        '+275760-09-13T00:00:00.000Z',
        '+275760-09-13T00:00:00.001Z',
        '-271821-04-20T00:00:00Z',
        '9999-12-31T23:59:59.999999999Z',
        '2024-01-01T24:00:00Z',
        '2024-01-01T00:00:00+25:00',
        'tomorrow',
        '1e10',
        '',
      );
    }
    if (schema.pattern) out.push('24:00', '23:60', '9:00', '00:00:00', 'AB', 'ABCD', '12', '');
    if (schema.maxItems !== undefined) out.push(Array.from({ length: schema.maxItems + 1 }, () => ({})));
    if (schema.minItems !== undefined && schema.minItems > 0) out.push([]);
  }
  return fc.constantFrom(...out);
}

// ---------------------------------------------------------------------------------------------
// Query strings

export function validQueryArb(params: { name: string; schema: JsonSchema }[], hints: Hints): fc.Arbitrary<Record<string, string>> {
  const model: Record<string, fc.Arbitrary<string>> = {};
  for (const p of params)
    model[p.name] = validArb(p.schema, hints, p.name)
      .filter((v) => v !== null)
      .map((v) => String(v));
  return fc.record(model, { requiredKeys: [] }) as fc.Arbitrary<Record<string, string>>;
}

/** Percent-encodes any text, lone surrogates included (they become U+FFFD, as a browser would send them). */
export function enc(s: string): string {
  return new URLSearchParams([['', s]]).toString().slice(1).replace(/\+/g, '%20');
}

export function mutateQuery(valid: Record<string, string>, params: { name: string; schema: JsonSchema }[]): fc.Arbitrary<{ query: string; mutation: string }> {
  const names = params.map((p) => p.name);
  const encode = (q: Record<string, string>) => new URLSearchParams(q).toString();
  const bad = fc.constantFrom(
    ...INJECTIONS,
    ...UNICODE,
    '',
    ' ',
    'abc',
    '-1',
    '0',
    '1.5',
    '1e309',
    '99999999999999999999',
    '-0',
    '0x10',
    'Infinity',
    'NaN',
    '2024-13-45',
    '+275760-09-13T00:00:00.001Z',
    '-271821-04-20T00:00:00Z',
    'x'.repeat(5000),
    '--created_at',
    'created_at,name',
    '-',
    'ID',
  );
  return fc.oneof(
    fc.tuple(fc.constantFrom(...names), bad).map(([n, v]) => ({ query: encode({ ...valid, [n]: v }), mutation: `${n}=${v.slice(0, 40)}` })),
    // Repeated parameters arrive as arrays.
    fc.tuple(fc.constantFrom(...names), bad, bad).map(([n, a, b]) => ({ query: `${encode(valid)}&${n}=${enc(a)}&${n}=${enc(b)}`, mutation: `repeated ${n}` })),
    fc.tuple(fc.constantFrom(...names), bad).map(([n, v]) => ({ query: `${encode(valid)}&${n}[]=${enc(v)}&${n}[$ne]=1`, mutation: `bracketed ${n}` })),
    fc
      .tuple(fc.string({ minLength: 1, maxLength: 20, unit: 'grapheme' }), bad)
      .map(([k, v]) => ({ query: `${encode(valid)}&${enc(k)}=${enc(v)}`, mutation: `unknown parameter ${k}` })),
    fc
      .constantFrom('%', '%ZZ', '&&&', '==', 'page', 'page=', `page_size=${'9'.repeat(400)}`, 'a=%00', 'sort=%00name')
      .map((raw) => ({ query: raw, mutation: `raw query ${raw.slice(0, 40)}` })),
  );
}

export function pathRefArb(known: readonly string[]): fc.Arbitrary<{ ref: string; mutated: boolean }> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...known).map((ref) => ({ ref: enc(ref), mutated: false })) },
    {
      weight: 2,
      arbitrary: fc
        .string({ minLength: 1, maxLength: 30 })
        .filter((s) => s.trim() !== '' && s !== '.' && s !== '..')
        .map((s) => ({ ref: enc(s), mutated: false })),
    },
    {
      weight: 3,
      arbitrary: fc
        .constantFrom(...INJECTIONS, ...UNICODE, 'x'.repeat(256), 'x'.repeat(600), '.', '..', ' ', 'load_01h00000000000000000000000', 'cust_')
        .map((s) => ({ ref: enc(s), mutated: true })),
    },
    { weight: 1, arbitrary: fc.constantFrom('%ZZ', '%', '%00', 'a%2Fb', '%C0%AF', '%ED%A0%80', 'a;b', 'a,b').map((ref) => ({ ref, mutated: true })) },
  );
}
