import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { openDataStore } from '../../../src/lib/db/index.js';
import { useApp, json, newTenant } from '../../helpers.js';

const t = useApp();

describe('transport errors', () => {
  it('400 for a body that is not JSON, naming the problem', async () => {
    const a = await newTenant(t);
    const res = await a.request({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { 'content-type': 'application/json' },
      payload: '{"external_reference_id": "C1", ',
    });
    expect(res.statusCode).toBe(400);
    expect(json(res).detail).toMatch(/^Malformed JSON body: /);
    const empty = await a.request({ method: 'POST', url: '/v2/tms-api/customers', headers: { 'content-type': 'application/json' }, payload: '' });
    expect(empty.statusCode).toBe(400);
    expect(json(empty)).toEqual({ detail: 'Malformed JSON body: the body is empty' });
  });

  it('422 (not 500) for JSON that is not an object', async () => {
    const a = await newTenant(t);
    for (const payload of ['[]', '"text"', '42', 'null']) {
      const res = await a.request({ method: 'POST', url: '/v2/tms-api/customers', headers: { 'content-type': 'application/json' }, payload });
      expect(res.statusCode, payload).toBe(422);
      expect(json(res).detail[0]).toMatchObject({ loc: ['body'] });
    }
  });

  it('415 for a body sent without Content-Type: application/json', async () => {
    const a = await newTenant(t);
    const plain = await a.request({ method: 'POST', url: '/v2/tms-api/customers', headers: { 'content-type': 'text/plain' }, payload: '{}' });
    expect(plain.statusCode).toBe(415);
    expect(json(plain).detail).toMatch(/Content-Type: application\/json/);
    const none = await t.app.inject({ method: 'PUT', url: '/v2/tms-api/customers/C1', headers: a.headers });
    expect(none.statusCode).toBe(415);
    expect(json(none).detail).toMatch(/^Missing Content-Type/);
    const charset = await a.request({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify({ external_reference_id: 'C1', name: 'n' }),
    });
    expect(charset.statusCode).toBe(201);
  });

  it('413 over 1 MiB on single-record endpoints; batch endpoints take up to 10 MiB', async () => {
    const a = await newTenant(t);
    const big = await a.post('/v2/tms-api/customers', { external_reference_id: 'C1', name: 'n', padding: 'x'.repeat(1_100_000) });
    expect(big.statusCode).toBe(413);
    expect(json(big)).toEqual({
      detail:
        'Request body is larger than the limit of 1048576 bytes (1 MiB) for this endpoint: send a smaller body, or have the operator raise the server setting BODY_LIMIT_BYTES',
    });
    const items = Array.from({ length: 50 }, (_, i) => ({
      operation: 'create',
      customer: { external_reference_id: `B${i}`, name: 'n', notes: 'y'.repeat(40_000) },
    }));
    const batch = await a.post('/v2/tms-api/batch/customers', { items });
    expect(batch.statusCode).toBe(200);
    expect(json(batch).success_count).toBe(50);
    const tooBig = await a.post('/v2/tms-api/batch/customers', {
      items: [{ operation: 'create', customer: { external_reference_id: 'Z', name: 'n', notes: 'z'.repeat(10_600_000) } }],
    });
    expect(tooBig.statusCode).toBe(413);
    expect(json(tooBig)).toEqual({
      detail:
        'Request body is larger than the limit of 10485760 bytes (10 MiB) for batch endpoints: send fewer items per batch, or have the operator raise the server setting BATCH_BODY_LIMIT_BYTES',
    });
  });

  it('404 and 405 in the detail shape', async () => {
    const a = await newTenant(t);
    const missing = await a.get('/v2/tms-api/nothing-here');
    expect(missing.statusCode).toBe(404);
    expect(json(missing)).toEqual({ detail: 'Not Found' });
    const wrong = await a.request({ method: 'PATCH', url: '/v2/tms-api/customers/C1', payload: {} });
    expect(wrong.statusCode).toBe(405);
    expect(json(wrong)).toEqual({ detail: 'Method Not Allowed' });
    expect(wrong.headers.allow).toBe('DELETE, GET, HEAD, PUT');
    const del = await a.request({ method: 'DELETE', url: '/v2/tms-api/batch/customers' });
    expect(del.statusCode).toBe(405);
  });

  it('X-Request-Id: echoed when sent, generated otherwise, on success and error alike', async () => {
    const a = await newTenant(t);
    const echoed = await a.request({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-request-id': 'tms-trace-42' } });
    expect(echoed.headers['x-request-id']).toBe('tms-trace-42');
    const generated = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers' });
    expect(generated.statusCode).toBe(401);
    expect(generated.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    const hostile = await a.request({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(hostile.headers['x-request-id']).toMatch(/^req_/);
  });
});

describe('server-side failures', () => {
  it('500 carries only a generic detail and the request id, never a stack', async () => {
    let broken = false;
    const clock = {
      now() {
        if (broken) throw new Error('SECRET internal detail at /work/main/src');
        return new Date();
      },
    };
    const store = openDataStore(t.config.databaseUrl);
    const { app, services } = await buildApp({ config: t.config, store, clock, logger: false });
    try {
      const org = await services.accounts.createOrganization('broken clock');
      const key = await services.accounts.createKey(org.id, { name: 'k', externalSystem: 's', scopes: ['write:customers'] });
      broken = true;
      const res = await app.inject({
        method: 'POST',
        url: '/v2/tms-api/customers',
        headers: { 'x-api-key': key.key, 'x-request-id': 'trace-500' },
        payload: { external_reference_id: 'C1', name: 'n' },
      });
      expect(res.statusCode).toBe(500);
      expect(json(res)).toEqual({ detail: 'Internal server error', request_id: 'trace-500' });
      expect(res.body).not.toMatch(/SECRET|\/work\/|at /);
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('503 with Retry-After when the database cannot be reached; /readyz says not ready, /healthz stays up', async () => {
    const store = openDataStore('postgres://postgres@127.0.0.1:1/unreachable');
    const { app } = await buildApp({ config: { ...loadConfig({}), databaseUrl: 'postgres://127.0.0.1:1/x' }, store, logger: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers: { 'x-api-key': `lbk_${'a'.repeat(64)}` } });
      expect(res.statusCode).toBe(503);
      expect(json(res)).toEqual({ detail: 'Service temporarily unavailable' });
      expect(res.headers['retry-after']).toBe('5');
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(json(ready)).toMatchObject({ status: 'not_ready', checks: { database: 'unreachable' } });
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('operations endpoints', () => {
  it('/healthz, /readyz and /metrics answer without a key', async () => {
    expect(json(await t.app.inject({ method: 'GET', url: '/healthz' }))).toEqual({ status: 'ok' });
    expect(json(await t.app.inject({ method: 'GET', url: '/readyz' }))).toEqual({ status: 'ready', checks: { database: 'ok', rate_limits: 'in_process' } });
    const a = await newTenant(t);
    await a.get('/v2/tms-api/customers');
    await a.get('/v2/tms-api/customers/NOPE');
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toMatch(/lanebridge_http_requests_total\{method="GET",route="\/v2\/tms-api\/customers",status="200"\} \d+/);
    expect(metrics.body).toMatch(/lanebridge_http_requests_total\{method="GET",route="\/v2\/tms-api\/customers\/:external_reference_id",status="404"\} \d+/);
    expect(metrics.body).toMatch(/lanebridge_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v2\/tms-api\/customers"\} \d+/);
    expect(metrics.body).toContain('lanebridge_analytics_runs_total');
  });
});
