import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newTenant, startApp, type Tenant, type TestApp } from './helpers.js';

let t: TestApp;
let a: Tenant;
beforeAll(async () => {
  t = await startApp();
  // The sweep sends far more than the default 100 requests a minute with one key.
  a = await newTenant(t, undefined, { perMinute: 1_000_000, perDay: 1_000_000 });
  await a.post('/v2/tms-api/customers', { external_reference_id: 'KEEP', name: 'Keep me' });
  await a.post('/v2/tms-api/carriers', { external_reference_id: 'KEEP', name: 'Keep me', contacts: [{ first_name: 'A' }] });
});
afterAll(async () => t.close());

const HUGE = 'x'.repeat(300_000);
const INJECTIONS = ["' OR 1=1 --", '"; DROP TABLE customers; --', '%', '_', '\\', '\u0000', '💥🚚', '../../etc/passwd', '<script>alert(1)</script>', '${jndi:ldap://x}'];

const BODIES: unknown[] = [
  null, 42, 'text', [], [{}], true,
  { external_reference_id: 1, name: 2 },
  { external_reference_id: HUGE, name: HUGE },
  { external_reference_id: '', name: '' },
  { external_reference_id: 'ok', name: { nested: true } },
  { external_reference_id: 'ok', name: 'n', is_active: 'maybe', contacts: 'none', address: [1] },
  { external_reference_id: 'ok', name: 'n', contacts: [{ id: 5 }, null, 'x'] },
  { external_reference_id: 'ok', name: 'n', contacts: Array.from({ length: 500 }, () => ({})) },
  { items: 'x' }, { items: [null, 1, 'x'] }, { items: [{ operation: 'explode' }] },
  { items: [{ operation: 'create', customer: 'x', carrier: 7 }] },
  { items: [{ operation: 'create', external_reference_id: HUGE }] },
  { __proto__: { admin: true }, constructor: { prototype: { polluted: true } } },
  ...INJECTIONS.map((s) => ({ external_reference_id: s, name: s, phone: s })),
];

const RAW_BODIES = ['{', '{"a":', '[1,2', 'null null', '\u0000', '{"a":1}garbage', '{"__proto__": {"polluted": 1}}'];

const QUERIES = [
  'page=-1', 'page=1e9', 'page=abc', 'page_size=0', 'page_size=101', 'page_size=1.5', 'page=99999999999999999999',
  'sort=', 'sort=--name', 'sort=name;drop', 'sort=id', 'is_active=perhaps', 'updated_since=tomorrow', 'created_since=2024-13-45',
  ...INJECTIONS.map((s) => `name_contains=${encodeURIComponent(s)}&dot_number=${encodeURIComponent(s)}&mc_number=${encodeURIComponent(s)}&customer_type=${encodeURIComponent(s)}`),
  `name_contains=${'y'.repeat(5000)}`,
];

const DOCUMENTED = new Set([200, 201, 204, 400, 404, 405, 409, 413, 415, 422]);

function assertDocumented(res: { statusCode: number; body: string; headers: Record<string, unknown> }, label: string) {
  expect(DOCUMENTED.has(res.statusCode), `${label} → ${res.statusCode} ${res.body.slice(0, 200)}`).toBe(true);
  expect(res.headers['x-request-id'], label).toBeTruthy();
  if (res.statusCode === 204) return;
  const body = JSON.parse(res.body);
  if (res.statusCode >= 400) {
    expect(Object.keys(body), label).toEqual(['detail']);
    if (res.statusCode === 422) {
      expect(Array.isArray(body.detail), label).toBe(true);
      for (const issue of body.detail) {
        expect(Object.keys(issue).sort(), label).toEqual(['loc', 'msg', 'type']);
        expect(['body', 'query', 'path'], label).toContain(issue.loc[0]);
      }
    } else expect(typeof body.detail, label).toBe('string');
  }
  expect(res.body, label).not.toMatch(/at [\w.<>]+ \(|node_modules|SQLITE_|syntax error/);
}

describe('hostile input sweep over every route', () => {
  it('answers only documented 4xx (or success) with documented bodies, and changes nothing it refuses', async () => {
    let count = 0;
    const before = {
      customer: json(await a.get('/v2/tms-api/customers/KEEP')),
      carrier: json(await a.get('/v2/tms-api/carriers/KEEP')),
    };
    for (const route of t.routeTable) {
      const urls = route.url.includes(':external_reference_id')
        ? ['KEEP', ...INJECTIONS.map(encodeURIComponent), 'x'.repeat(300), '%ZZ'].map((r) => route.url.replace(':external_reference_id', r))
        : [route.url];
      for (const url of urls) {
        if (route.method === 'GET') {
          for (const q of QUERIES) {
            const res = await a.request({ method: 'GET', url: `${url}?${q}` });
            assertDocumented(res, `GET ${url}?${q.slice(0, 80)}`);
            count++;
          }
        } else if (route.method === 'DELETE') {
          // KEEP stays; the injection strings may have been created by the POST sweep, so 204 is legitimate.
          if (url.endsWith('/KEEP')) continue;
          const res = await a.request({ method: 'DELETE', url });
          assertDocumented(res, `DELETE ${url}`);
          expect([204, 400, 404, 422]).toContain(res.statusCode);
          count++;
        } else {
          for (const body of BODIES) {
            const res = await a.request({ method: route.method as never, url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
            assertDocumented(res, `${route.method} ${url} ${JSON.stringify(body)?.slice(0, 80)}`);
            count++;
          }
          for (const raw of RAW_BODIES) {
            const res = await a.request({ method: route.method as never, url, payload: raw, headers: { 'content-type': 'application/json' } });
            assertDocumented(res, `${route.method} ${url} raw ${raw}`);
            count++;
          }
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
    for (const [i, s] of INJECTIONS.entries()) {
      const res = await b.post('/v2/tms-api/customers', { external_reference_id: `INJ-${i}`, name: `name ${s}` });
      if (s.includes('\u0000')) {
        // Refused on both engines alike (PostgreSQL cannot store NUL in text).
        expect(res.statusCode).toBe(422);
        expect(json(res).detail).toEqual([
          { type: 'value_error', loc: ['body', 'name'], msg: 'Value error, text must not contain NUL (\\u0000) characters' },
        ]);
        continue;
      }
      expect(res.statusCode, s).toBe(201);
      expect(json(res).name).toBe(`name ${s}`);
    }
    const pct = json(await b.get(`/v2/tms-api/customers?name_contains=${encodeURIComponent('%')}`));
    expect(pct.items.map((c: any) => c.name)).toEqual(['name %']);
    const under = json(await b.get(`/v2/tms-api/customers?name_contains=${encodeURIComponent('_')}`));
    expect(under.items.map((c: any) => c.name)).toEqual(['name _']);
    const quote = json(await b.get(`/v2/tms-api/customers?name_contains=${encodeURIComponent("' OR 1=1")}`));
    expect(quote.items).toHaveLength(1);
    expect(json(await b.get('/v2/tms-api/customers?page_size=100')).pagination.total).toBe(INJECTIONS.length - 1);
  });
});
