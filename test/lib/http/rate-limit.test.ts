/**
 * Per-key rate limits over HTTP (spec section 8, D1, D9), the same tests in embedded mode (counters in
 * the process) and in shared mode (counters in the Redis at 127.0.0.1:6379, under a key prefix unique to
 * this run). A fake clock pins "now", so window edges, Reset and Retry-After are exact.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../../src/lib/clock.js';
import { cleanRedis } from '../../fixtures.js';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

export const TEST_REDIS_URL = process.env.LANEBRIDGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `lanebridge-test:${process.pid}:${Date.now()}:`;

/** A clock that stands still until moved. */
function fakeClock(iso: string) {
  let now = Date.parse(iso);
  const clock: Clock = { now: () => new Date(now) };
  return {
    clock,
    set: (at: string) => void (now = Date.parse(at)),
    advance: (ms: number) => void (now += ms),
  };
}

const unix = (iso: string) => Date.parse(iso) / 1000;

const CUSTOMERS = '/v2/tms-api/customers';

function limitHeaders(res: { headers: Record<string, unknown> }) {
  return {
    limit: res.headers['x-ratelimit-limit'],
    remaining: res.headers['x-ratelimit-remaining'],
    reset: res.headers['x-ratelimit-reset'],
  };
}

function rateLimitedBody(seconds: number) {
  return {
    error: { code: 'RATE_LIMITED', message: `Rate limit exceeded. Please retry after ${seconds} seconds.`, retry_after: seconds },
  };
}

// The run's counters in Redis go with it.
afterAll(() => cleanRedis(TEST_REDIS_URL, PREFIX));

describe.each([
  { mode: 'embedded', redisUrl: undefined },
  { mode: 'redis', redisUrl: TEST_REDIS_URL },
] as const)('rate limits, $mode', ({ mode, redisUrl }) => {
  const time = fakeClock('2030-01-15T10:20:30.000Z');
  // A long Redis timeout: a machine busy with the rest of the suite must not turn these into fallbacks
  // (the /metrics test below checks that every request of this block was counted in Redis).
  const t = useApp({ redisUrl, rateLimitKeyPrefix: `${PREFIX}${mode}:` }, { clock: time.clock, rateLimit: { commandTimeoutMs: 5000 } });
  afterEach(() => time.set('2030-01-15T10:20:30.000Z'));

  /** A tenant whose key has these limits; every test has its own key, so budgets never mix. */
  const tenant = (perMinute: number, perDay = 10_000, scopes?: Parameters<typeof newTenant>[1]) => newTenant(t, scopes, { perMinute, perDay });

  it(`counts in ${mode === 'embedded' ? 'the process' : 'Redis'} (/readyz says where)`, async () => {
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(json(ready).checks).toEqual(
      mode === 'embedded' ? { database: 'ok', rate_limits: 'in_process' } : { database: 'ok', rate_limits: 'redis', redis: 'ok' },
    );
    expect(t.rateLimiter.mode).toBe(mode === 'embedded' ? 'memory' : 'redis');
  });

  it('sets X-RateLimit-Limit, -Remaining and -Reset on every authenticated response, errors included', async () => {
    const a = await tenant(10);
    const reset = String(unix('2030-01-15T10:21:00Z'));
    const ok = await a.get(CUSTOMERS);
    expect(ok.statusCode).toBe(200);
    expect(limitHeaders(ok)).toEqual({ limit: '10', remaining: '9', reset });
    const created = await a.post(CUSTOMERS, { external_reference_id: 'C1', name: 'Acme' });
    expect(created.statusCode).toBe(201);
    expect(limitHeaders(created)).toEqual({ limit: '10', remaining: '8', reset });
    const missing = await a.get(`${CUSTOMERS}/NOPE`);
    expect(missing.statusCode).toBe(404);
    expect(limitHeaders(missing)).toEqual({ limit: '10', remaining: '7', reset });
    const invalid = await a.post(CUSTOMERS, { external_reference_id: 'C2' });
    expect(invalid.statusCode).toBe(422);
    expect(limitHeaders(invalid)).toEqual({ limit: '10', remaining: '6', reset });
    const conflict = await a.post(CUSTOMERS, { external_reference_id: 'C1', name: 'again' });
    expect(conflict.statusCode).toBe(409);
    expect(limitHeaders(conflict)).toEqual({ limit: '10', remaining: '5', reset });
    const malformed = await a.request({ method: 'POST', url: CUSTOMERS, payload: '{', headers: { 'content-type': 'application/json' } });
    expect(malformed.statusCode).toBe(400);
    expect(limitHeaders(malformed)).toEqual({ limit: '10', remaining: '4', reset });
    // The request id and the limit headers travel together.
    expect(malformed.headers['x-request-id']).toBeTruthy();

    // Not an authenticated response: no limit headers.
    for (const url of ['/healthz', '/readyz', '/metrics', '/v2/tms-api/openapi.json']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.headers['x-ratelimit-limit'], url).toBeUndefined();
    }
    const unknownPath = await a.get('/v2/tms-api/nothing-here');
    expect(unknownPath.statusCode).toBe(404);
    expect(unknownPath.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('answers 429 with the D1 body and Retry-After once the minute is spent, until the minute ends', async () => {
    const a = await tenant(3);
    for (let i = 0; i < 3; i++) expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    const limited = await a.get(CUSTOMERS);
    expect(limited.statusCode).toBe(429);
    // 10:20:30 → the minute ends at 10:21:00: retry after 30 seconds, as in D1's example.
    expect(limited.body).toBe(JSON.stringify(rateLimitedBody(30)));
    expect(limited.headers['retry-after']).toBe('30');
    expect(limited.headers['content-type']).toMatch(/^application\/json/);
    expect(limitHeaders(limited)).toEqual({ limit: '3', remaining: '0', reset: String(unix('2030-01-15T10:21:00Z')) });
    // Any route, any method: the budget is the key's.
    expect((await a.post(CUSTOMERS, { external_reference_id: 'X', name: 'x' })).statusCode).toBe(429);
    expect((await a.post('/v2/tms-api/batch/customers', { items: [] })).statusCode).toBe(429);

    time.set('2030-01-15T10:20:59.400Z');
    const late = await a.get(CUSTOMERS);
    expect(late.statusCode).toBe(429);
    expect(json(late).error.retry_after).toBe(1); // rounded up, never 0
    expect(late.headers['retry-after']).toBe('1');

    // The UTC minute edge: a new window, the whole budget again.
    time.set('2030-01-15T10:20:59.999Z');
    expect((await a.get(CUSTOMERS)).statusCode).toBe(429);
    time.set('2030-01-15T10:21:00.000Z');
    const fresh = await a.get(CUSTOMERS);
    expect(fresh.statusCode).toBe(200);
    expect(limitHeaders(fresh)).toEqual({ limit: '3', remaining: '2', reset: String(unix('2030-01-15T10:22:00Z')) });
  });

  it("takes each key's own limits, and keeps separate budgets per key", async () => {
    const small = await tenant(2);
    const large = await tenant(5);
    expect(limitHeaders(await small.get(CUSTOMERS))).toMatchObject({ limit: '2', remaining: '1' });
    expect(limitHeaders(await large.get(CUSTOMERS))).toMatchObject({ limit: '5', remaining: '4' });
    expect((await small.get(CUSTOMERS)).statusCode).toBe(200);
    expect((await small.get(CUSTOMERS)).statusCode).toBe(429);
    for (let i = 0; i < 4; i++) expect((await large.get(CUSTOMERS)).statusCode).toBe(200);
    expect((await large.get(CUSTOMERS)).statusCode).toBe(429);

    // Two keys of one organization: budgets are per key, not per organization.
    const org = small.orgId;
    const second = await t.services.accounts.createKey(org, { name: 'second', externalSystem: 's', scopes: ['read:customers'], perMinute: 7 });
    const res = await t.app.inject({ method: 'GET', url: CUSTOMERS, headers: { 'x-api-key': second.key } });
    expect(res.statusCode).toBe(200);
    expect(limitHeaders(res)).toMatchObject({ limit: '7', remaining: '6' });
  });

  it('keeps a day window: a key with per_day 3 is refused until the UTC day ends, whatever the minute', async () => {
    const a = await tenant(100, 3);
    const first = await a.get(CUSTOMERS);
    // Remaining is what the minute still allows, capped by what is left of the day.
    expect(limitHeaders(first)).toEqual({ limit: '100', remaining: '2', reset: String(unix('2030-01-15T10:21:00Z')) });
    time.set('2030-01-15T13:00:10.000Z');
    expect(limitHeaders(await a.get(CUSTOMERS))).toMatchObject({ remaining: '1' });
    time.set('2030-01-15T18:45:00.000Z');
    expect(limitHeaders(await a.get(CUSTOMERS))).toMatchObject({ remaining: '0' });
    const refused = await a.get(CUSTOMERS);
    expect(refused.statusCode).toBe(429);
    // 18:45:00 → midnight UTC is 5 h 15 min away.
    const untilMidnight = 5 * 3600 + 15 * 60;
    expect(json(refused)).toEqual(rateLimitedBody(untilMidnight));
    expect(refused.headers['retry-after']).toBe(String(untilMidnight));
    expect(limitHeaders(refused)).toEqual({ limit: '100', remaining: '0', reset: String(unix('2030-01-15T18:46:00Z')) });

    // A new minute does not help; a new UTC day does.
    time.set('2030-01-15T23:59:59.000Z');
    const lastSecond = await a.get(CUSTOMERS);
    expect(lastSecond.statusCode).toBe(429);
    expect(lastSecond.headers['retry-after']).toBe('1');
    time.set('2030-01-16T00:00:00.000Z');
    const nextDay = await a.get(CUSTOMERS);
    expect(nextDay.statusCode).toBe(200);
    expect(limitHeaders(nextDay)).toMatchObject({ limit: '100', remaining: '2' });
  });

  it('does not charge refused requests: 429s do not eat into the day', async () => {
    const a = await tenant(2, 5);
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    for (let i = 0; i < 10; i++) expect((await a.get(CUSTOMERS)).statusCode).toBe(429);
    time.advance(60_000);
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    time.advance(60_000);
    // 4 of 5 spent today: one left, and the refusals in between cost nothing.
    const last = await a.get(CUSTOMERS);
    expect(last.statusCode).toBe(200);
    expect(limitHeaders(last)).toMatchObject({ remaining: '0' });
    const dayOver = await a.get(CUSTOMERS);
    expect(dayOver.statusCode).toBe(429);
    expect(json(dayOver).error.retry_after).toBe(unix('2030-01-16T00:00:00Z') - unix('2030-01-15T10:22:30Z'));
  });

  it('spends no budget on requests rejected before authentication (401)', async () => {
    const a = await tenant(2);
    const bad = [{}, { 'x-api-key': 'nonsense' }, { 'x-api-key': `lbk_${'0'.repeat(64)}` }, { 'x-api-key': a.key.toUpperCase() }];
    for (const headers of bad) {
      for (let i = 0; i < 3; i++) {
        const res = await t.app.inject({ method: 'GET', url: CUSTOMERS, headers });
        expect(res.statusCode).toBe(401);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
        expect(res.headers['retry-after']).toBeUndefined();
      }
    }
    expect(limitHeaders(await a.get(CUSTOMERS))).toMatchObject({ limit: '2', remaining: '1' });
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    // Once limited, a bad key still gets 401, not 429.
    expect((await a.get(CUSTOMERS)).statusCode).toBe(429);
    expect((await t.app.inject({ method: 'GET', url: CUSTOMERS })).statusCode).toBe(401);
  });

  it('counts a request refused for its scope (403), and answers 429 before 403 once spent', async () => {
    const a = await tenant(2, 10_000, ['read:customers']);
    const forbidden = await a.post(CUSTOMERS, { external_reference_id: 'C', name: 'n' });
    expect(forbidden.statusCode).toBe(403);
    expect(limitHeaders(forbidden)).toMatchObject({ limit: '2', remaining: '1' });
    expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
    const limited = await a.post(CUSTOMERS, { external_reference_id: 'C', name: 'n' });
    expect(limited.statusCode).toBe(429);
    expect(json(limited).error.code).toBe('RATE_LIMITED');
  });

  it('counts a batch as one request, however many items it carries', async () => {
    const a = await tenant(3);
    const items = Array.from({ length: 50 }, (_, i) => ({ operation: 'create', external_reference_id: `B-${i}`, customer: { name: `n${i}` } }));
    const batch = await a.post('/v2/tms-api/batch/customers', { items });
    expect(batch.statusCode).toBe(200);
    expect(json(batch).success_count).toBe(50);
    expect(limitHeaders(batch)).toMatchObject({ limit: '3', remaining: '2' });
    const list = await a.get(`${CUSTOMERS}?page_size=100`);
    expect(json(list).pagination.total).toBe(50);
    expect(limitHeaders(list)).toMatchObject({ remaining: '1' });
  });

  it('keeps no request past the limit when many arrive at once', async () => {
    const a = await tenant(25);
    const results = await Promise.all(Array.from({ length: 80 }, () => a.get(CUSTOMERS)));
    const codes = results.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 200)).toHaveLength(25);
    expect(codes.filter((c) => c === 429)).toHaveLength(55);
    const remaining = results.filter((r) => r.statusCode === 200).map((r) => Number(r.headers['x-ratelimit-remaining']));
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });

  it('reports refusals in /metrics', async () => {
    const a = await tenant(1);
    await a.get(CUSTOMERS);
    await a.get(CUSTOMERS);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^lanebridge_rate_limited_total [1-9]\d*$/m);
    expect(metrics).toMatch(/lanebridge_http_requests_total\{method="GET",route="\/v2\/tms-api\/customers",status="429"\} [1-9]/);
    if (mode === 'redis') {
      expect(metrics).toMatch(/^lanebridge_rate_limit_redis_up 1$/m);
      expect(metrics).toMatch(/^lanebridge_rate_limit_fallbacks_total 0$/m);
    } else {
      expect(metrics).not.toContain('lanebridge_rate_limit_redis_up');
    }
  });
});

describe('rate limits off (config.rateLimits: benchmarks)', () => {
  let a: Tenant;
  const t = useApp({ rateLimits: false });
  beforeAll(async () => {
    a = await newTenant(t, undefined, { perMinute: 1, perDay: 1 });
  });

  it('counts nothing and sends no limit headers', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await a.get(CUSTOMERS);
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
    expect(json(await t.app.inject({ method: 'GET', url: '/readyz' })).checks).toEqual({ database: 'ok', rate_limits: 'off' });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).not.toContain('lanebridge_rate_limited_total');
  });
});
