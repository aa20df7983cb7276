import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFiles, staleFiles } from '../../scripts/client/generate.js';
import {
  createLanebridgeClient,
  parseRetryAfter,
  retryingFetch,
  verifyWebhook,
  walkPages,
  WebhookVerificationError,
} from '../../clients/typescript/src/index.js';
import { newSecret, signedHeaders } from '../../src/modules/webhooks/signing.js';
import { useApp, json, newTenant } from '../helpers.js';

const run = promisify(execFile);

let baseUrl: string;
let dir: string;
const t = useApp();
beforeAll(async () => {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-client-test-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
});

type SchemaNode = {
  type?: unknown;
  enum?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
  const?: unknown;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
};
type Operation = {
  parameters?: { name?: string; in?: string; schema?: SchemaNode }[];
  requestBody?: { content?: Record<string, { schema?: SchemaNode }> };
  responses?: Record<string, { content?: Record<string, { schema?: SchemaNode }> }>;
};

/** Fields and parameters named like an enumeration (status, *_type, mode, source, action, …) that the document declares as plain strings. */
function plainStringsNamedLikeEnumerations(doc: {
  components: { schemas: Record<string, SchemaNode> };
  paths: Record<string, Record<string, Operation>>;
}): string[] {
  const named = /(^|_)(status|type|mode|kind|source|action|role|scope|operation|format|resource|ranking|uom|entity)$/;
  const plain = (s: SchemaNode | undefined) =>
    !!s &&
    (s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string'))) &&
    s.enum === undefined &&
    s.anyOf === undefined &&
    s.const === undefined;
  const found: string[] = [];
  const fields = (s: SchemaNode | undefined, where: string): void => {
    if (!s) return;
    for (const [name, field] of Object.entries(s.properties ?? {})) {
      if (named.test(name) && plain(field)) found.push(`${where}.${name}`);
      fields(field, `${where}.${name}`);
    }
    fields(s.items, where);
    for (const member of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) fields(member, where);
  };
  for (const [name, schema] of Object.entries(doc.components.schemas)) fields(schema, name);
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) if (p.name && named.test(p.name) && plain(p.schema)) found.push(`${where} ${p.in}.${p.name}`);
      for (const c of Object.values(op.requestBody?.content ?? {})) fields(c.schema, `${where} body`);
      for (const r of Object.values(op.responses ?? {})) for (const c of Object.values(r.content ?? {})) fields(c.schema, `${where} answer`);
    }
  }
  return found;
}

describe('the generated TypeScript client', () => {
  it('is up to date with the served document (else: npm run client:generate)', async () => {
    const doc = json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }));
    expect(staleFiles(await clientFiles(doc))).toEqual([]);
  }, 60_000);

  it('types every field named like an enumeration as one, except the free-text fields listed here', async () => {
    // A field declared as a plain string comes out as `string` in the client, whatever values it takes.
    const doc = json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }));
    expect(new Set(plainStringsNamedLikeEnumerations(doc))).toEqual(
      new Set([
        'ValidationIssue.type', // the kind of problem: an open list (missing, enum, value_error, …)
        'Customer.customer_type', // a free category
        'MarketRate.source', // free text: where the rate was observed
        'CustomerCreate.customer_type',
        'CustomerUpdate.customer_type',
        'GET /v2/tms-api/customers query.customer_type',
        'GET /v2/tms-api/loads query.status', // a comma-separated list of statuses
        'POST /v2/tms-api/market-rates body.source',
        'GET /v2/tms-api/audit-log query.action', // one action, or every action with a prefix (`key.`)
        'GET /v2/tms-api/audit-log query.target_type', // matched as sent: an unknown type finds nothing
      ]),
    );
  });

  it('runs the example sync against a live server: pushes, pages and follows the feed', async () => {
    const a = await newTenant(t);
    const cursorFile = join(dir, 'cursor.json');
    const env = { ...process.env, LANEBRIDGE_URL: baseUrl, LANEBRIDGE_API_KEY: a.key, SYNC_CURSOR_FILE: cursorFile };
    const example = ['--import', 'tsx', 'clients/typescript/examples/sync.ts'];
    const first = JSON.parse((await run(process.execPath, example, { env, cwd: process.cwd(), timeout: 60_000 })).stdout);
    expect(first.failed).toEqual([]);
    expect(first.pushed).toEqual({ customers: 2, carriers: 1, locations: 3, loads: 2 });
    expect(first.loads).toEqual([
      {
        external_reference_id: 'LOAD-1001',
        status: 'ACTIVE',
        customer: 'Acme Foods',
        carrier: null,
        stops: ['Pickup LOC-DAL', 'Delivery LOC-HOU'],
        total_distance: expect.any(Number),
      },
      {
        external_reference_id: 'LOAD-1002',
        status: 'ACTIVE',
        customer: 'Ölwerk Müller GmbH',
        carrier: 'Blue Line Trucking',
        stops: ['Pickup LOC-CHI', 'Delivery LOC-DAL'],
        total_distance: expect.any(Number),
      },
    ]);
    // Every record it pushed is in the feed, once.
    expect(first.events.after).toBe(0);
    expect(first.events.types).toMatchObject({ 'customer.created': 2, 'carrier.created': 1, 'location.created': 3, 'load.created': 2 });
    expect(JSON.parse(readFileSync(cursorFile, 'utf8'))).toEqual({ after: first.events.next_after });
    // What the service holds, read without the client.
    const load = json(await a.get('/v2/tms-api/loads/LOAD-1001'));
    expect(load).toMatchObject({
      equipment_type: 'DRY_VAN',
      customer_external_reference_id: 'CUST-ACME',
      stops: [
        { stop_type: 'Pickup', early_arrival: '2026-12-01T08:00:00.000Z' },
        { stop_type: 'Delivery', early_arrival: '2026-12-02T08:00:00.000Z' },
      ],
    });
    expect(json(await a.get('/v2/tms-api/locations/LOC-CHI'))).toMatchObject({ state: 'US-IL', geocode_source: 'coordinates' });

    // A second run: the feed continues from the cursor, and shows only what changed. Unchanged upserts
    // write nothing; the carrier's contacts, sent without their ids, are replaced by new ones (an update).
    const second = JSON.parse((await run(process.execPath, example, { env, cwd: process.cwd(), timeout: 60_000 })).stdout);
    expect(second.failed).toEqual([]);
    expect(second.loads).toHaveLength(2);
    expect(second.events).toEqual({ after: first.events.next_after, next_after: first.events.next_after + 1, types: { 'carrier.updated': 1 } });
  }, 120_000);

  it('walks every page of a list', async () => {
    const a = await newTenant(t);
    const items = Array.from({ length: 7 }, (_, i) => ({ operation: 'create', customer: { external_reference_id: `W-${i}`, name: `Walker ${i}` } }));
    expect(json(await a.post('/v2/tms-api/batch/customers', { items })).success_count).toBe(7);
    const client = createLanebridgeClient({ baseUrl, apiKey: a.key });
    const seen: string[] = [];
    for await (const customer of walkPages(client, '/v2/tms-api/customers', { query: { page_size: 3, sort: 'name' } }))
      seen.push(customer.external_reference_id);
    expect(seen).toEqual(['W-0', 'W-1', 'W-2', 'W-3', 'W-4', 'W-5', 'W-6']);
  });

  it('sends the key, and one Idempotency-Key per write that a retried write keeps', async () => {
    const a = await newTenant(t);
    const sent: Request[] = [];
    const client = createLanebridgeClient({ baseUrl, apiKey: a.key, fetch: (req) => (sent.push(req.clone()), fetch(req)) });
    const created = await client.POST('/v2/tms-api/customers', { body: { external_reference_id: 'IK-1', name: 'Keyed' } });
    expect(created.response.status).toBe(201);
    // The same request with the same key is answered from the service's store: nothing is written twice.
    const key = sent[0]!.headers.get('idempotency-key')!;
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    const again = await client.POST('/v2/tms-api/customers', {
      body: { external_reference_id: 'IK-1', name: 'Keyed' },
      params: { header: { 'Idempotency-Key': key } },
    });
    expect(again.response.status).toBe(201);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data?.id).toBe(created.data?.id);
    expect(sent.every((r) => r.headers.get('x-api-key') === a.key)).toBe(true);
    const read = await client.GET('/v2/tms-api/customers/{external_reference_id}', { params: { path: { external_reference_id: 'IK-1' } } });
    expect(read.data?.name).toBe('Keyed');
    expect(sent.at(-1)!.headers.has('idempotency-key')).toBe(false);
  });
});

describe('retries', () => {
  const answer = (status: number, headers: Record<string, string> = {}) =>
    new Response(status === 204 ? null : '{}', { status, headers: { 'content-type': 'application/json', ...headers } });

  it('waits what Retry-After says on 429 and 503, and backs off when it says nothing', async () => {
    const waits: number[] = [];
    const answers = [answer(429, { 'retry-after': '2' }), answer(503, { 'retry-after': '1' }), answer(503), answer(200)];
    let calls = 0;
    const fetchWithRetry = retryingFetch(async () => answers[calls++]!, { sleep: async (ms) => void waits.push(ms), baseDelayMs: 100 });
    const res = await fetchWithRetry(new Request('http://lanebridge.test/v2/tms-api/loads'));
    expect(res.status).toBe(200);
    expect(calls).toBe(4);
    expect(waits.slice(0, 2)).toEqual([2000, 1000]);
    expect(waits[2]).toBeGreaterThanOrEqual(0);
    expect(waits[2]).toBeLessThanOrEqual(400);
  });

  it('repeats a write after 503 only under an Idempotency-Key, and gives up after maxAttempts', async () => {
    let calls = 0;
    const always503 = retryingFetch(async () => (calls++, answer(503, { 'retry-after': '1' })), { sleep: async () => {}, maxAttempts: 3 });
    const post = (headers: Record<string, string>) => new Request('http://lanebridge.test/v2/tms-api/customers', { method: 'POST', body: '{}', headers });
    expect((await always503(post({}))).status).toBe(503);
    expect(calls).toBe(1);
    calls = 0;
    expect((await always503(post({ 'Idempotency-Key': 'k-1' }))).status).toBe(503);
    expect(calls).toBe(3);
    // A 429 was not processed at all: it is repeated even without a key.
    calls = 0;
    const limited = retryingFetch(async () => (calls++ === 0 ? answer(429, { 'retry-after': '1' }) : answer(201)), { sleep: async () => {} });
    expect((await limited(post({}))).status).toBe(201);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('30')).toBe(30_000);
    expect(parseRetryAfter(new Date(Date.UTC(2026, 0, 1, 0, 0, 10)).toUTCString(), Date.UTC(2026, 0, 1))).toBe(10_000);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
  });
});

describe('webhook verification', () => {
  const event = { id: 'evt_1', type: 'load.updated', sequence: 7, timestamp: '2026-11-25T00:00:00.000Z', data: { id: 'load_1' } };

  it('accepts a delivery signed with the endpoint secret (also during a rotation) and refuses any other', () => {
    const [current, previous, stranger] = [newSecret(), newSecret(), newSecret()];
    const body = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([current, previous], event.id, now, body);
    expect(verifyWebhook(body, headers, current)).toEqual(event);
    expect(verifyWebhook(Buffer.from(body), new Headers(headers), [stranger, previous])).toEqual(event);
    expect(() => verifyWebhook(body, headers, stranger)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(body.replace('7', '8'), headers, current)).toThrow(WebhookVerificationError);
    // A capture replayed long after is refused.
    const old = signedHeaders([current], event.id, now - 3600, body);
    expect(() => verifyWebhook(body, old, current)).toThrow(WebhookVerificationError);
  });
});
