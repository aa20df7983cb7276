// Hostile input (issue 9, point 4): requests generated from the OpenAPI document, valid ones and
// mutations of them, across every route of the route table, at least 10,000 per run (app.inject).
// Properties: no 5xx; every error body in its D1 shape; a refused request (and every GET) changes
// nothing in the database.
import fc from 'fast-check';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/lib/http/errors.js';
import { useApp, json, newTenant } from '../helpers.js';
import { createTenant } from './support.js';
import {
  INJECTIONS,
  UNICODE,
  dereference,
  enc,
  mutateBody,
  mutateQuery,
  pathRefArb,
  validArb,
  validQueryArb,
  type Hints,
  type JsonSchema,
} from './schema-arb.js';

const TOTAL_REQUESTS = Number(process.env.RELIABILITY_HOSTILE_REQUESTS ?? 10_200);
const WORKERS = 3;
const SEED = process.env.RELIABILITY_SEED ? Number(process.env.RELIABILITY_SEED) : Date.now() % 2_147_483_647;

let doc: any;
const t = useApp();
beforeAll(async () => {
  doc = dereference(JSON.parse((await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' })).body));
});

// ---------------------------------------------------------------------------------------------
// Operations from the document, one per route of the route table

interface Operation {
  method: string;
  url: string;
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
  batchKey: string | null;
}

function operations(): Operation[] {
  return t.routeTable.map((route) => {
    const path = route.url.replace(/:([a-z_]+)/g, '{$1}');
    const op = doc.paths?.[path]?.[route.method.toLowerCase()];
    expect(op, `${route.method} ${path} is in the route table but not in the OpenAPI document`).toBeDefined();
    const params = (op.parameters ?? []) as { in: string; name: string; schema: JsonSchema }[];
    const body = op.requestBody?.content?.['application/json']?.schema ?? null;
    const batch = /\/batch\/([a-z]+)$/.exec(route.url);
    return {
      method: route.method,
      url: route.url,
      pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
      query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
      body,
      batchKey: batch ? batch[1]!.replace(/s$/, '') : null,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Each worker: its own organization (so its database snapshot is its own), seeded with a little data

interface Worker {
  orgId: string;
  key: string;
  known: string[];
  hints: Hints;
  snapshot: string;
}

const LOCATIONS = [
  { external_reference_id: 'L-1', name: 'Dallas', postal_code: '75201', state: 'TX' },
  { external_reference_id: 'L-2', name: 'Houston', postal_code: '77002', state: 'US-TX' },
  { external_reference_id: 'L-3', name: 'Chicago', latitude: 41.88, longitude: -87.63, country: 'US' },
];
const stops = (a: string, b: string) => [
  { stop_type: 'Pickup', location_external_reference_id: a, early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
  { stop_type: 'Delivery', location_external_reference_id: b, early_arrival: '2026-03-03T08:00:00Z', late_arrival: '2026-03-03T12:00:00Z' },
];

async function seedWorker(ops: Operation[]): Promise<Worker> {
  const tenant = await createTenant(t.store, 'Hostile');
  const headers = { 'x-api-key': tenant.key };
  const post = async (url: string, payload: unknown) => {
    const r = await t.app.inject({ method: 'POST', url, headers, payload: payload as never });
    expect(r.statusCode, `${url}: ${r.body}`).toBeLessThan(300);
    return JSON.parse(r.body);
  };
  const ids: string[] = [];
  for (let i = 1; i <= 3; i++) {
    ids.push((await post('/v2/tms-api/customers', { external_reference_id: `C-${i}`, name: `Customer ${i}` })).id);
    ids.push((await post('/v2/tms-api/carriers', { external_reference_id: `K-${i}`, name: `Carrier ${i}`, contacts: [{ first_name: 'A' }] })).id);
    ids.push((await post('/v2/tms-api/locations', LOCATIONS[i - 1])).id);
  }
  for (let i = 1; i <= 3; i++) {
    const load = await post('/v2/tms-api/loads', {
      external_reference_id: `LD-${i}`,
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'C-1',
      carrier_external_reference_id: 'K-1',
      status: i === 1 ? 'DELIVERED' : 'ACTIVE',
      stops: stops('L-1', `L-${i === 3 ? 3 : 2}`),
      financial_rates: [{ rate_entity: 'CARRIER', amount: 1200 }],
    });
    ids.push(load.id);
  }
  await post('/v2/tms-api/market-rates', {
    origin: { location_external_reference_id: 'L-1' },
    destination: { postal_code: '77002', state: 'TX' },
    equipment_type: 'DRY_VAN',
    rate_per_mile: 2.5,
  });
  const refs = ['C-1', 'C-2', 'C-3', 'K-1', 'K-2', 'K-3', 'L-1', 'L-2', 'L-3', 'LD-1', 'LD-2', 'LD-3'];
  const schemaOf = (method: string, url: string) => ops.find((o) => o.method === method && o.url === url)?.body;
  const batchData: Hints['batchData'] = {};
  for (const kind of ['customer', 'carrier', 'location', 'load']) {
    const create = schemaOf('POST', `/v2/tms-api/${kind}s`);
    const update = schemaOf('PUT', `/v2/tms-api/${kind}s/:external_reference_id`);
    if (create && update) batchData[kind] = { create, update };
  }
  const hints: Hints = {
    byName: {
      external_reference_id: [...refs, 'NEW-1', 'NEW-2'],
      customer_external_reference_id: ['C-1', 'C-2', 'C-3'],
      carrier_external_reference_id: ['K-1', 'K-2'],
      location_external_reference_id: ['L-1', 'L-2', 'L-3'],
      postal_code: ['75201', '77002', '60601', 'M5V 2T6', '00901'],
      state: ['TX', 'US-TX', 'IL', 'ON', 'PR'],
      country: ['US', 'CA', 'MX'],
      latitude: [32.78, 29.76, 41.88, 43.65],
      longitude: [-96.8, -95.37, -87.63, -79.38],
      customer_id: ids.filter((id) => id.startsWith('cust_')),
      stop_type: ['Pickup', 'Delivery', 'pickup', 'DELIVERY'],
    },
    batchData,
  };
  return { orgId: tenant.orgId, key: tenant.key, known: [...refs, ...ids], hints, snapshot: '' };
}

/**
 * Per table of the organization: row count, highest id and highest updated_at (or what stands for it).
 * One statement, each part served by an index that starts with org_id (child rows through their parent).
 */
async function snapshot(orgId: string): Promise<string> {
  const own = (table: string, cols: string[]) =>
    sql`(select ${sql.raw(['cast(count(*) as text)', ...cols.map((c) => `coalesce(max(${c}), '')`)].join(" || '|' || "))} from ${sql.raw(table)} where org_id = ${orgId})`;
  const child = (table: string, parent: string, fk: string) =>
    sql`(select cast(count(*) as text) || '|' || coalesce(max(x.id), '') from ${sql.raw(table)} x join ${sql.raw(parent)} p on p.id = x.${sql.raw(fk)} where p.org_id = ${orgId})`;
  const parts = [
    own('customers', ['id', 'updated_at']),
    own('carriers', ['id', 'updated_at']),
    child('carrier_contacts', 'carriers', 'carrier_id'),
    own('locations', ['id', 'updated_at']),
    own('loads', ['id', 'updated_at']),
    child('load_stops', 'loads', 'load_id'),
    child('load_rates', 'loads', 'load_id'),
    own('lane_history', ['load_id', 'delivered_at']),
    own('lane_stats', ['refreshed_at']),
    own('lane_carriers', ['carrier_id', 'cast(loads as text)']),
    own('market_rate_snapshots', ['id']),
    own('users', []),
    own('api_keys', []),
  ];
  const r = await sql<Record<string, unknown>>`select ${sql.join(parts.map((c, i) => sql`${c} as ${sql.raw(`c${i}`)}`))}`.execute(t.store.db);
  return JSON.stringify(Object.values(r.rows[0]!));
}

// ---------------------------------------------------------------------------------------------
// Requests

interface Req {
  method: string;
  url: string;
  payload?: string;
  headers: Record<string, string>;
  /** The route of the table it was generated for. */
  route: string;
  /** What was done to the valid request, or 'valid'. */
  mutation: string;
  authMutated: boolean;
}

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json-patch+json',
  'application/jsonx',
  'APPLICATION/JSON; charset=utf-16',
  '',
];
const RAW_BODIES = [
  '{',
  '{"a":',
  '[1,2',
  'null null',
  '{"a":1}garbage',
  '\u0000',
  '{"__proto__":{"admin":true}}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `{"items":${'['.repeat(3000)}${']'.repeat(3000)}}`,
  '"\\ud800"',
  '1e99999',
];
const BAD_KEYS = [
  '',
  'lbk_',
  `lbk_${'0'.repeat(64)}`,
  `LBK_${'a'.repeat(64)}`,
  `lbk_${'g'.repeat(64)}`,
  `lbk_${'a'.repeat(65)}`,
  "lbk_' OR 1=1 --",
  `Bearer lbk_${'a'.repeat(64)}`,
];

function requestArb(ops: Operation[], w: Worker): fc.Arbitrary<Req> {
  return fc.constantFrom(...ops).chain((op) => {
    const headers = { 'x-api-key': w.key };
    const ref = op.pathParams.length > 0 ? pathRefArb(w.known) : fc.constant({ ref: '', mutated: false });
    const query = op.query.length > 0 ? validQueryArb(op.query, w.hints) : fc.constant({} as Record<string, string>);
    const body = op.body ? validArb(op.body, w.hints) : fc.constant(undefined);
    return fc.tuple(ref, query, body).chain(([r, q, b]) => {
      const url = (qs: string) => `${op.url.replace(/:[a-z_]+/, r.ref)}${qs ? `?${qs}` : ''}`;
      const validQs = new URLSearchParams(q).toString();
      const json = b === undefined ? undefined : JSON.stringify(b);
      const base: Req = {
        method: op.method,
        url: url(validQs),
        headers: json === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        route: `${op.method} ${op.url}`,
        mutation: r.mutated ? `path ${r.ref.slice(0, 60)}` : 'valid',
        authMutated: false,
      };
      if (json !== undefined) base.payload = json;
      const choices: { weight: number; arbitrary: fc.Arbitrary<Req> }[] = [{ weight: 3, arbitrary: fc.constant(base) }];
      if (op.body) {
        choices.push({
          weight: 6,
          arbitrary: mutateBody(b, op.body, w.hints).map((m) => ({ ...base, payload: JSON.stringify(m.body) ?? 'null', mutation: m.mutation })),
        });
        choices.push({
          weight: 1,
          arbitrary: fc.constantFrom(...RAW_BODIES).map((raw) => ({ ...base, payload: raw, mutation: `raw body ${raw.slice(0, 30)}` })),
        });
        choices.push({
          weight: 1,
          arbitrary: fc.constantFrom(...CONTENT_TYPES).map((ct) => {
            const h: Record<string, string> = { ...headers };
            if (ct) h['content-type'] = ct;
            return { ...base, headers: h, mutation: `content-type '${ct}'` };
          }),
        });
      }
      if (op.query.length > 0)
        choices.push({ weight: 5, arbitrary: mutateQuery(q, op.query).map((m) => ({ ...base, url: url(m.query), mutation: `query ${m.mutation}` })) });
      if (op.method === 'GET' && op.pathParams.length === 0) {
        choices.push({
          weight: 1,
          arbitrary: fc
            .constantFrom(...INJECTIONS, ...UNICODE)
            .map((s) => ({ ...base, url: url(`sort=${enc(s)}&name_contains=${enc(s)}&status=${enc(s)}`), mutation: `filters and sort ${s}` })),
        });
      }
      choices.push({
        weight: 1,
        arbitrary: fc.constantFrom<string | null>(null, ...BAD_KEYS).map((k) => {
          const h: Record<string, string> = { ...base.headers };
          delete h['x-api-key'];
          if (k !== null) h['x-api-key'] = k;
          return { ...base, headers: h, mutation: `api key ${k === null ? 'missing' : JSON.stringify(k.slice(0, 20))}`, authMutated: true };
        }),
      });
      return fc.oneof(...choices);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// What every answer must look like (D1)

// Every status the error table has, but 5xx (never for input), 403 and 429 (the sweep's keys have every
// scope and no effective limit): one set for the fixed corpus and the generated requests alike.
const DOCUMENTED = new Set([
  200,
  201,
  204,
  ...Object.values(ERRORS)
    .map((e) => e.status)
    .filter((s) => s < 500 && s !== 403 && s !== 429),
]);
const LEAKS =
  /\bat [\w.<>$]+ \(|node_modules|SQLITE_|sqlite_|syntax error|pg_catalog|relation "|duplicate key|violates|ECONNREFUSED|TypeError|RangeError|ReferenceError/;

function assertAnswer(req: Req, res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  const label = `${req.method} ${req.url.slice(0, 200)} [${req.mutation}] → ${res.statusCode} ${res.body.slice(0, 300)}`;
  expect(res.statusCode < 500, label).toBe(true);
  expect(DOCUMENTED.has(res.statusCode), label).toBe(true);
  expect(res.headers['x-request-id'], label).toBeTruthy();
  // Without a valid key: 401, unless the request could not even be routed (malformed URL, no such path).
  // (malformed URL: 400; a path parameter past the router's limit: 422; no such path or method: 404, 405).
  if (req.authMutated) expect([401, 400, 404, 405, 422], label).toContain(res.statusCode);
  else expect(res.statusCode, label).not.toBe(401);
  if (req.authMutated && res.statusCode === 400) expect(res.body, label).toMatch(/Malformed URL/);
  if (req.authMutated && res.statusCode === 422) expect(res.body, label).toMatch(/"loc":\["path"/);
  if (res.statusCode === 204) {
    expect(res.body, label).toBe('');
    return;
  }
  expect(String(res.headers['content-type']), label).toMatch(/^application\/json/);
  const body = JSON.parse(res.body);
  expect(LEAKS.test(res.statusCode >= 400 ? res.body : ''), label).toBe(false);
  if (res.statusCode === 401) {
    expect(body, label).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
  } else if (res.statusCode === 422) {
    // At most 100 problems, with `truncated: true` when there were more (docs/api.md, Bounds of a request).
    if (body.detail.length === 100 && 'truncated' in body) expect(body, label).toMatchObject({ truncated: true });
    else expect(Object.keys(body), label).toEqual(['detail']);
    expect(Array.isArray(body.detail) && body.detail.length > 0 && body.detail.length <= 100, label).toBe(true);
    for (const issue of body.detail) assertIssue(issue, label);
  } else if (res.statusCode >= 400) {
    expect(Object.keys(body), label).toEqual(['detail']);
    expect(typeof body.detail, label).toBe('string');
    expect(body.detail.length, label).toBeGreaterThan(0);
  } else if (/\/batch\//.test(req.url)) {
    expect(body.success_count + body.error_count, label).toBe(body.results.length);
    for (const r of body.results) {
      if (r.success) {
        expect(typeof r.id, label).toBe('string');
        continue;
      }
      expect(r.id, label).toBeNull();
      expect([404, 409, 422], label).toContain(r.error.status);
      if (r.error.status === 422) for (const issue of r.error.detail) assertIssue(issue, label);
      else expect(typeof r.error.detail, label).toBe('string');
    }
  }
}

function assertIssue(issue: any, label: string) {
  expect(Object.keys(issue).sort(), label).toEqual(['loc', 'msg', 'type']);
  expect(typeof issue.type, label).toBe('string');
  expect(typeof issue.msg, label).toBe('string');
  expect(Array.isArray(issue.loc), label).toBe(true);
  expect(['body', 'query', 'path'], label).toContain(issue.loc[0]);
  for (const part of issue.loc) expect(['string', 'number'], label).toContain(typeof part);
}

// ---------------------------------------------------------------------------------------------

describe('hostile input generated from the OpenAPI document', () => {
  it(`${TOTAL_REQUESTS} requests across every route: no 5xx, D1 bodies, refused requests change nothing`, async () => {
    const ops = operations();
    expect(ops.length).toBe(t.routeTable.length);
    const workers: Worker[] = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await seedWorker(ops));
    const stats = { requests: 0, byStatus: {} as Record<number, number>, unchangedChecks: 0, perRoute: {} as Record<string, number> };
    const started = Date.now();
    await Promise.all(
      workers.map(async (w, i) => {
        w.snapshot = await snapshot(w.orgId);
        await fc.assert(
          fc.asyncProperty(requestArb(ops, w), async (req) => {
            const res = await t.app.inject({
              method: req.method as never,
              url: req.url,
              headers: req.headers,
              ...(req.payload !== undefined ? { payload: req.payload } : {}),
            });
            stats.requests++;
            stats.byStatus[res.statusCode] = (stats.byStatus[res.statusCode] ?? 0) + 1;
            stats.perRoute[req.route] = (stats.perRoute[req.route] ?? 0) + 1;
            assertAnswer(req, res);
            const isBatch = /\/batch\//.test(req.url);
            const refusedWhole = res.statusCode >= 400 || (isBatch && res.statusCode === 200 && JSON.parse(res.body).success_count === 0);
            if (refusedWhole || req.method === 'GET') {
              const after = await snapshot(w.orgId);
              stats.unchangedChecks++;
              expect(after, `${req.method} ${req.url.slice(0, 200)} [${req.mutation}] → ${res.statusCode} changed the database`).toBe(w.snapshot);
            } else {
              w.snapshot = await snapshot(w.orgId);
            }
          }),
          { numRuns: Math.ceil(TOTAL_REQUESTS / WORKERS), seed: SEED + i, endOnFailure: true },
        );
      }),
    );
    console.log('hostile', { seed: SEED, seconds: Math.round((Date.now() - started) / 1000), ...stats, routes: Object.keys(stats.perRoute).length });
    expect(stats.requests).toBeGreaterThanOrEqual(TOTAL_REQUESTS);
    // Every route of the table was exercised.
    for (const op of ops) expect(stats.perRoute[`${op.method} ${op.url}`] ?? 0, `${op.method} ${op.url} never requested`).toBeGreaterThan(50);
  }, 240_000);
});

// ---------------------------------------------------------------------------------------------
// A fixed corpus of hostile bodies, raw texts and queries on every route, checked by the same rules

const CORPUS_HUGE = 'x'.repeat(300_000);
const CORPUS_INJECTIONS = [
  "' OR 1=1 --",
  '"; DROP TABLE customers; --',
  '%',
  '_',
  '\\',
  '\u0000',
  '💥🚚',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
];
const CORPUS_BODIES: unknown[] = [
  null,
  42,
  'text',
  [],
  [{}],
  true,
  { external_reference_id: 1, name: 2 },
  { external_reference_id: CORPUS_HUGE, name: CORPUS_HUGE },
  { external_reference_id: '', name: '' },
  { external_reference_id: 'ok', name: { nested: true } },
  { external_reference_id: 'ok', name: 'n', is_active: 'maybe', contacts: 'none', address: [1] },
  { external_reference_id: 'ok', name: 'n', contacts: [{ id: 5 }, null, 'x'] },
  { external_reference_id: 'ok', name: 'n', contacts: Array.from({ length: 500 }, () => ({})) },
  { items: 'x' },
  { items: [null, 1, 'x'] },
  { items: [{ operation: 'explode' }] },
  { items: [{ operation: 'create', customer: 'x', carrier: 7 }] },
  { items: [{ operation: 'create', external_reference_id: CORPUS_HUGE }] },
  { __proto__: { admin: true }, constructor: { prototype: { polluted: true } } },
  ...CORPUS_INJECTIONS.map((s) => ({ external_reference_id: s, name: s, phone: s })),
];
const CORPUS_RAW = ['{', '{"a":', '[1,2', 'null null', '\u0000', '{"a":1}garbage', '{"__proto__": {"polluted": 1}}'];
const CORPUS_QUERIES = [
  'page=-1',
  'page=1e9',
  'page=abc',
  'page_size=0',
  'page_size=101',
  'page_size=1.5',
  'page=99999999999999999999',
  'sort=',
  'sort=--name',
  'sort=name;drop',
  'sort=id',
  'is_active=perhaps',
  'updated_since=tomorrow',
  'created_since=2024-13-45',
  ...CORPUS_INJECTIONS.map(
    (s) =>
      `name_contains=${encodeURIComponent(s)}&dot_number=${encodeURIComponent(s)}&mc_number=${encodeURIComponent(s)}&customer_type=${encodeURIComponent(s)}`,
  ),
  `name_contains=${'y'.repeat(5000)}`,
];

describe('hostile input: a fixed corpus on every route', () => {
  it('answers only documented statuses with D1 bodies, and changes nothing it refuses', async () => {
    // The sweep sends far more than the default 100 requests a minute with one key.
    const a = await newTenant(t, undefined, { perMinute: 1_000_000, perDay: 1_000_000 });
    await a.post('/v2/tms-api/customers', { external_reference_id: 'KEEP', name: 'Keep me' });
    await a.post('/v2/tms-api/carriers', { external_reference_id: 'KEEP', name: 'Keep me', contacts: [{ first_name: 'A' }] });
    const before = { customer: json(await a.get('/v2/tms-api/customers/KEEP')), carrier: json(await a.get('/v2/tms-api/carriers/KEEP')) };
    let count = 0;
    const send = async (req: Omit<Req, 'headers' | 'route' | 'authMutated'>, route: string) => {
      const full: Req = {
        ...req,
        route,
        authMutated: false,
        headers: { ...a.headers, ...(req.payload !== undefined ? { 'content-type': 'application/json' } : {}) },
      };
      const res = await t.app.inject({
        method: full.method as never,
        url: full.url,
        headers: full.headers,
        ...(full.payload !== undefined ? { payload: full.payload } : {}),
      });
      assertAnswer(full, res);
      count++;
      return res;
    };
    for (const route of t.routeTable) {
      const name = `${route.method} ${route.url}`;
      const urls = route.url.includes(':external_reference_id')
        ? ['KEEP', ...CORPUS_INJECTIONS.map(encodeURIComponent), 'x'.repeat(300), '%ZZ'].map((r) => route.url.replace(':external_reference_id', r))
        : [route.url];
      for (const url of urls) {
        if (route.method === 'GET')
          for (const q of CORPUS_QUERIES) await send({ method: 'GET', url: `${url}?${q}`, mutation: `query ${q.slice(0, 60)}` }, name);
        else if (route.method === 'DELETE') {
          // KEEP stays; the injection strings may have been created by the POST sweep, so 204 is legitimate.
          if (!url.endsWith('/KEEP')) expect([204, 400, 404, 422]).toContain((await send({ method: 'DELETE', url, mutation: 'delete' }, name)).statusCode);
        } else {
          for (const body of CORPUS_BODIES)
            await send({ method: route.method, url, payload: JSON.stringify(body), mutation: `body ${JSON.stringify(body)?.slice(0, 60)}` }, name);
          for (const raw of CORPUS_RAW) await send({ method: route.method, url, payload: raw, mutation: `raw ${raw}` }, name);
        }
      }
    }
    expect(count).toBeGreaterThan(1000);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    // Every body sent to KEEP was refused or carried no known field: the records are exactly as they were.
    expect(json(await a.get('/v2/tms-api/customers/KEEP'))).toEqual(before.customer);
    expect(json(await a.get('/v2/tms-api/carriers/KEEP'))).toEqual(before.carrier);
  }, 120_000);

  it('stores and returns injection strings verbatim, and searches them literally', async () => {
    const b = await newTenant(t);
    for (const [i, s] of CORPUS_INJECTIONS.entries()) {
      const res = await b.post('/v2/tms-api/customers', { external_reference_id: `INJ-${i}`, name: `name ${s}` });
      if (s.includes('\u0000')) {
        // Refused on both engines alike (PostgreSQL cannot store NUL in text).
        expect(res.statusCode).toBe(422);
        expect(json(res).detail).toEqual([{ type: 'value_error', loc: ['body', 'name'], msg: 'Value error, text must not contain NUL (\\u0000) characters' }]);
        continue;
      }
      expect(res.statusCode, s).toBe(201);
      expect(json(res).name).toBe(`name ${s}`);
    }
    const names = async (needle: string) =>
      json(await b.get(`/v2/tms-api/customers?name_contains=${encodeURIComponent(needle)}`)).items.map((c: any) => c.name);
    expect(await names('%')).toEqual(['name %']);
    expect(await names('_')).toEqual(['name _']);
    expect(await names("' OR 1=1")).toHaveLength(1);
    expect(json(await b.get('/v2/tms-api/customers?page_size=100')).pagination.total).toBe(CORPUS_INJECTIONS.length - 1);
  });
});
