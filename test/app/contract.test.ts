import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useApp, json, newTenant } from '../helpers.js';
import { assertNoViolations, contractChecker, takeViolations, type ContractChecker } from '../support/contract.js';

/**
 * The response contract hook (test/support/response-contract.ts) checks every answer the suite receives
 * against the served OpenAPI document. These tests show that it catches a wrong answer, so that a clean
 * run of the suite means something.
 */
let checker: ContractChecker;
const t = useApp();
beforeAll(async () => {
  checker = await contractChecker(json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' })));
});

const headers = {
  'content-type': 'application/json; charset=utf-8',
  'x-request-id': 'req-1',
  'x-ratelimit-limit': 100,
  'x-ratelimit-remaining': 99,
  'x-ratelimit-reset': 1764000000,
};
const customer = {
  id: 'cust_01',
  external_reference_id: 'C-1',
  name: 'Acme',
  reference_number: null,
  domain: null,
  phone: null,
  is_active: true,
  customer_type: null,
  created_at: '2025-01-31T14:00:00.000Z',
  updated_at: '2025-01-31T14:00:00.000Z',
};
const getCustomer = (over: Partial<{ status: number; headers: Record<string, unknown>; body: unknown }> = {}) => ({
  method: 'GET',
  route: '/v2/tms-api/customers/:external_reference_id',
  status: over.status ?? 200,
  headers: over.headers ?? headers,
  body: JSON.stringify(over.body ?? customer),
});

describe('the response contract checker', () => {
  it('passes an answer that matches the document', () => {
    expect(checker.check(getCustomer())).toBeNull();
  });

  it('names each kind of violation: body schema, format, status, undeclared header, missing required header, non-JSON', () => {
    const problems = (o: Parameters<typeof getCustomer>[0]) => checker.check(getCustomer(o))?.problems.join('\n') ?? '';
    expect(problems({ body: { ...customer, is_active: 'yes' } })).toMatch(/body\/is_active must be boolean/);
    expect(problems({ body: { ...customer, name: undefined } })).toMatch(/must have required property 'name'/);
    expect(problems({ body: { ...customer, created_at: 'yesterday' } })).toMatch(/body\/created_at must match format "date-time"/);
    expect(problems({ status: 418 })).toMatch(/status 418 is not declared/);
    expect(problems({ headers: { ...headers, 'x-events-kept-after': 5 } })).toMatch(/header x-events-kept-after is sent but not declared/);
    expect(problems({ headers: { ...headers, 'x-ratelimit-limit': 'many' } })).toMatch(/header x-ratelimit-limit must be integer/);
    const { 'x-request-id': _dropped, ...noRequestId } = headers;
    expect(problems({ headers: noRequestId })).toMatch(/required header x-request-id is missing/);
    expect(checker.check({ ...getCustomer(), body: '<html>' })?.problems.join('\n')).toMatch(/the body is not JSON/);
    // A route the document does not describe is not checked (the docs page, the dashboard, /healthz).
    expect(checker.check({ ...getCustomer(), route: '/healthz' })).toBeNull();
  });
});

describe('the response contract hook', () => {
  it('fails the test that receives a deliberately wrong answer', async () => {
    const a = await newTenant(t);
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'C-1', name: 'Acme' })).statusCode).toBe(201);
    // The service answers a customer the document does not allow (the serialiser passes a bad timestamp through).
    const spy = vi.spyOn(t.services.customers, 'get').mockResolvedValue({ ...customer, created_at: 'yesterday' } as never);
    try {
      const res = await a.get('/v2/tms-api/customers/C-1');
      expect(res.statusCode).toBe(200);
    } finally {
      spy.mockRestore();
    }
    // What the afterEach of every test file does with it: it throws, naming the route and the problem.
    let failure: Error | null = null;
    try {
      assertNoViolations();
    } catch (err) {
      failure = err as Error;
    }
    expect(failure?.message).toMatch(/GET \/v2\/tms-api\/customers\/:external_reference_id → 200\n\s+body\/created_at must match format "date-time"/);
    // Taken: nothing is left over for this test's own afterEach.
    expect(takeViolations()).toEqual([]);
  });
});
