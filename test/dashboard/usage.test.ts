import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { outsideHours } from '../../src/dashboard/hours.js';
import { usageRecorder } from '../../src/modules/ops/usage.service.js';
import { newTenant, startApp } from '../helpers.js';
import { useDashboardApp, Visitor, orgWithUser } from './support.js';

/** API usage counters and the failed-writes log (src/modules/ops/usage.service.ts), and the stop-hours check. */

const t = useDashboardApp();

async function usageRows(orgId: string) {
  const r = await sql<{
    key_id: string;
    ok: number;
    client_errors: number;
    server_errors: number;
    rate_limited: number;
  }>`select key_id, ok, client_errors, server_errors, rate_limited from api_usage_hourly where org_id = ${orgId}`.execute(t.store.db);
  return r.rows.map((x) => ({
    ...x,
    ok: Number(x.ok),
    client_errors: Number(x.client_errors),
    server_errors: Number(x.server_errors),
    rate_limited: Number(x.rate_limited),
  }));
}

describe('usage counters', () => {
  it('count each keyed request by outcome per hour, 429s included, written when flushed (the Overview flushes)', async () => {
    const org = await orgWithUser(t);
    const limited = await t.services.accounts.createKey(org.orgId, { name: 'tight', externalSystem: 'vitest', scopes: ['read:customers'], perMinute: 2 });
    const get = (key: string, url = '/v2/tms-api/customers') => t.app.inject({ method: 'GET', url, headers: { 'x-api-key': key } });
    expect((await get(limited.key)).statusCode).toBe(200);
    expect((await get(limited.key, '/v2/tms-api/customers/NOPE')).statusCode).toBe(404);
    expect((await get(limited.key)).statusCode).toBe(429);
    expect((await get('lbk_' + '0'.repeat(64))).statusCode).toBe(401); // names no key: not counted
    expect(await usageRows(org.orgId)).toEqual([]); // nothing written on the request path
    const v = new Visitor(t);
    await v.signIn(org.email, org.password);
    const page = await v.get('/');
    expect(page.body).toContain('tight');
    const rows = await usageRows(org.orgId);
    expect(rows).toEqual([{ key_id: limited.id, ok: 1, client_errors: 1, server_errors: 0, rate_limited: 1 }]);
    // A second flush adds to the hour's row.
    await get(org.key!);
    await v.get('/');
    const again = await usageRows(org.orgId);
    expect(again).toHaveLength(2);
    expect(again.find((r) => r.key_id === limited.id)!.ok).toBe(1);
  });

  it("a key pasted into a failed write's URL or body is kept masked, and the Overview never shows it", async () => {
    const org = await orgWithUser(t);
    const key = org.key!;
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    expect((await t.app.inject({ method: 'PUT', url: `/v2/tms-api/customers/${key}`, headers, payload: { name: 'x' } })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url: '/v2/tms-api/customers', headers, payload: { external_reference_id: key } })).statusCode).toBe(422);
    const v = new Visitor(t);
    await v.signIn(org.email, org.password);
    const page = await v.get('/');
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(key.slice(4));
    const rows = await sql<{
      path: string;
      reference: string | null;
      detail: string;
    }>`select path, reference, detail from failed_writes where org_id = ${org.orgId}`.execute(t.store.db);
    expect(rows.rows).toHaveLength(2);
    for (const r of rows.rows) expect(JSON.stringify(r)).not.toContain(key.slice(4));
    expect(rows.rows.map((r) => r.reference).sort()).toEqual(['lbk_[redacted]', 'lbk_[redacted]']);
  });

  it('usage recording off (config.usageRecording: benchmarks) counts nothing and logs no failed write', async () => {
    const off = await startApp({ usageRecording: false });
    try {
      const a = await newTenant(off);
      expect((await a.get('/v2/tms-api/customers')).statusCode).toBe(200);
      expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'NO-NAME' })).statusCode).toBe(422);
      await off.app.close();
      const org = a.orgId;
      const rows = await sql<{
        n: number;
      }>`select (select count(*) from api_usage_hourly where org_id = ${org}) + (select count(*) from failed_writes where org_id = ${org}) as n`.execute(
        off.store.db,
      );
      expect(Number(rows.rows[0]!.n)).toBe(0);
    } finally {
      await off.close();
    }
  });

  it('splits counts at each UTC hour, keeps each hour its last request time, and adds to rows already written', async () => {
    const org = await orgWithUser(t);
    let at = Date.parse('2026-03-04T13:59:58.250Z');
    const usage = usageRecorder({ db: t.store.db, clock: { now: () => new Date(at) }, flushMs: 0 });
    const a = { orgId: org.orgId, keyId: 'key_a' };
    const b = { orgId: org.orgId, keyId: 'key_b' };
    usage.count(a, 200);
    usage.count(b, 422);
    at += 1_000; // 13:59:59.250
    usage.count(a, 503);
    at += 1_000; // 14:00:00.250: the next hour
    usage.count(a, 201);
    usage.count(a, 429);
    at -= 3_600_000; // a clock set back an hour (13:00:00.250): its own row, not mixed into 14:00
    usage.count(a, 404);
    usage.count(b, 200); // key_b's 13:00 counter is still open: its last request stays 13:59:58.250
    expect(usage.pendingSize().counters).toBe(4);
    await usage.flush();
    at = Date.parse('2026-03-04T14:30:00.000Z');
    usage.count(a, 200); // written into the 14:00 row already there
    await usage.flush();
    expect(usage.pendingSize().counters).toBe(0);
    const rows = await usage.hourly(org.orgId, '2026-03-04T00:00:00.000Z');
    const shape = rows
      .map((r) => ({
        key: r.key_id,
        hour: r.hour,
        ok: Number(r.ok),
        c4: Number(r.client_errors),
        c5: Number(r.server_errors),
        c429: Number(r.rate_limited),
        last: r.last_request_at,
      }))
      .sort((x, y) => `${x.hour}${x.key}`.localeCompare(`${y.hour}${y.key}`));
    expect(shape).toEqual([
      { key: 'key_a', hour: '2026-03-04T13:00:00Z', ok: 1, c4: 1, c5: 1, c429: 0, last: '2026-03-04T13:59:59.250Z' },
      { key: 'key_b', hour: '2026-03-04T13:00:00Z', ok: 1, c4: 1, c5: 0, c429: 0, last: '2026-03-04T13:59:58.250Z' },
      { key: 'key_a', hour: '2026-03-04T14:00:00Z', ok: 2, c4: 0, c5: 0, c429: 1, last: '2026-03-04T14:30:00.000Z' },
    ]);
  });

  it('the failed-writes log is bounded by age and by count per organization', async () => {
    const org = await orgWithUser(t);
    const now = Date.now();
    let at = now - 10 * 86_400_000;
    const usage = usageRecorder({ db: t.store.db, clock: { now: () => new Date(at) }, flushMs: 0, maxFailedPerOrg: 3, retentionDays: 7 });
    const fake = (ref: string) =>
      usage.captureFailures(
        {
          principal: { orgId: org.orgId, keyId: 'key_x' },
          method: 'POST',
          url: '/v2/tms-api/customers',
          routeOptions: { url: '/v2/tms-api/customers' },
          params: {},
          body: { external_reference_id: ref },
          id: 'req',
        } as never,
        { statusCode: 422, getHeader: () => undefined } as never,
        JSON.stringify({ detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required' }] }),
      );
    fake('OLD-1'); // 10 days ago
    await usage.flush();
    at = now;
    for (const ref of ['N-1', 'N-2', 'N-3', 'N-4', 'N-5']) {
      fake(ref);
      at += 1000;
    }
    await usage.flush();
    const { rows, total } = await usage.failedWrites(org.orgId, new Date(now - 30 * 86_400_000).toISOString(), 50);
    expect(total).toBe(3);
    expect(rows.map((r) => r.reference)).toEqual(['N-5', 'N-4', 'N-3']);
    expect(JSON.parse(rows[0]!.detail)).toEqual([{ type: 'missing', loc: ['body', 'name'], msg: 'Field required' }]);
  });
});

describe('stop outside the location hours', () => {
  const dallas = {
    timezone: 'America/Chicago',
    weekday_open_hours: '08:00',
    weekday_close_hours: '17:00',
    weekend_open_hours: null,
    weekend_close_hours: null,
  };
  it('reads the window on the location clock, weekday or weekend, and skips hours not given', () => {
    // Wed 2026-03-04: 14:00Z = 08:00 CST, 23:00Z = 17:00 CST.
    expect(outsideHours('2026-03-04T14:00:00Z', '2026-03-04T23:00:00Z', dallas)).toBeNull();
    expect(outsideHours('2026-03-04T13:59:00Z', '2026-03-04T16:00:00Z', dallas)).toContain('starts outside weekday hours 08:00–17:00');
    expect(outsideHours('2026-03-04T15:00:00Z', '2026-03-04T23:30:00Z', dallas)).toContain('ends outside');
    // Saturday, no weekend hours given: not checked.
    expect(outsideHours('2026-03-07T18:00:00Z', '2026-03-07T19:00:00Z', dallas)).toBeNull();
    expect(outsideHours('2026-03-04T05:00:00Z', '2026-03-04T06:00:00Z', undefined)).toBeNull();
  });
});
