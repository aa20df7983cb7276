// Issue 26, item 7: the delivery log keeps every attempt (status, response status, duration, error, the
// start of the answer), newest first, grouped by delivery in the dashboard; D12's delivery shape stays.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Migrator, sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDataStore } from '../../../src/lib/db/index.js';
import { migrationProvider } from '../../../src/lib/db/migrations/index.js';
import { useApp, json, newTenant, uid, type Tenant } from '../../helpers.js';
import { Visitor, orgWithUser } from '../../dashboard/support.js';
import { freePort } from '../../reliability/support.js';
import { startReceiver, type Receiver } from './support.js';

const BASE = '/v2/tms-api/webhook-endpoints';
const D12_DELIVERY_FIELDS = [
  'id',
  'event_id',
  'event_type',
  'sequence',
  'attempt',
  'status',
  'response_status',
  'duration_ms',
  'error',
  'next_attempt_at',
  'created_at',
];

let rx: Receiver;
const t = useApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

async function customer(tenant: Tenant, name: string): Promise<string> {
  const res = await tenant.post('/v2/tms-api/customers', { external_reference_id: uid('C'), name });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).id;
}

describe('the attempt log', () => {
  it('keeps the 500 that came before a delivered retry: every attempt, newest first; the delivery keeps D12’s shape', async () => {
    const a = await newTenant(t);
    const ep = json(await a.post(BASE, { url: rx.url }));
    const id = await customer(a, 'Second Try');
    let calls = 0;
    rx.answer = (r) => (JSON.parse(r.body).data?.id === id && calls++ === 0 ? { status: 500, headers: { 'x-why': 'db down' } } : { status: 200 });
    try {
      await t.webhooks.worker.drain();
      t.clock.advance(6_001);
      await t.webhooks.worker.drain();
    } finally {
      rx.answer = () => ({ status: 200 });
    }
    const deliveries = json(await a.get(`${BASE}/${ep.id}/deliveries`));
    expect(deliveries.items).toHaveLength(1);
    const delivery = deliveries.items[0];
    expect(Object.keys(delivery)).toEqual(D12_DELIVERY_FIELDS);
    expect(delivery).toMatchObject({ status: 'delivered', attempt: 2, response_status: 200, error: null });

    const res = await a.get(`${BASE}/${ep.id}/attempts`);
    expect(res.statusCode).toBe(200);
    const log = json(res);
    expect(log.pagination).toMatchObject({ page: 1, total: 2, total_items: 2, has_more: false });
    expect(log.items).toEqual([
      {
        id: expect.stringMatching(/^wha_[0-9a-z]{26}$/),
        delivery_id: delivery.id,
        event_id: delivery.event_id,
        event_type: 'customer.created',
        sequence: delivery.sequence,
        attempt: 2,
        status: 'delivered',
        response_status: 200,
        duration_ms: expect.any(Number),
        error: null,
        response_body: '{"ok":true}',
        next_attempt_at: null,
        created_at: expect.any(String),
      },
      {
        id: expect.stringMatching(/^wha_/),
        delivery_id: delivery.id,
        event_id: delivery.event_id,
        event_type: 'customer.created',
        sequence: delivery.sequence,
        attempt: 1,
        status: 'failed',
        response_status: 500,
        duration_ms: expect.any(Number),
        error: 'HTTP 500',
        response_body: '{"ok":true}',
        next_attempt_at: expect.any(String),
        created_at: expect.any(String),
      },
    ]);
    expect(Date.parse(log.items[0].created_at)).toBeGreaterThan(Date.parse(log.items[1].created_at));
    // Filters: one delivery's, one event's; another organization sees nothing of it.
    expect(json(await a.get(`${BASE}/${ep.id}/attempts?delivery_id=${delivery.id}&page_size=1`)).items.map((x: any) => x.attempt)).toEqual([2]);
    expect(json(await a.get(`${BASE}/${ep.id}/attempts?event_id=${delivery.event_id}`)).pagination.total).toBe(2);
    expect(json(await a.get(`${BASE}/${ep.id}/attempts?event_id=evt_none`)).items).toEqual([]);
    const b = await newTenant(t);
    const other = await b.get(`${BASE}/${ep.id}/attempts`);
    expect(other.statusCode).toBe(404);
    expect(json(other)).toEqual({ detail: `Webhook endpoint with id '${ep.id}' not found` });
    const bad = await a.get(`${BASE}/${ep.id}/attempts?page_size=101`);
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0]).toMatchObject({ loc: ['query', 'page_size'] });
  });

  it('records the failures without an answer, with their error and the retry they scheduled', async () => {
    const a = await newTenant(t);
    const ep = json(await a.post(BASE, { url: `http://127.0.0.1:${await freePort()}/closed` }));
    await customer(a, 'Nobody Home');
    await t.webhooks.worker.drain();
    const [attempt] = json(await a.get(`${BASE}/${ep.id}/attempts`)).items;
    expect(attempt).toMatchObject({ attempt: 1, status: 'failed', response_status: null, error: 'Connection refused', response_body: null });
    expect(Date.parse(attempt.next_attempt_at)).toBeGreaterThan(Date.parse(attempt.created_at));
    await a.put(`${BASE}/${ep.id}`, { status: 'disabled' });
  });

  it('the dashboard shows each delivery with its attempts beneath it, and the receiver’s answer escaped', async () => {
    const o = await orgWithUser(t);
    const v = new Visitor(t);
    await v.signIn(o.email, o.password);
    const ep = await t.webhooks.service.create(o.orgId, { url: rx.url });
    let calls = 0;
    rx.answer = (r) => (r.headers['webhook-id'] && JSON.parse(r.body).type === 'webhook.test' && calls++ === 0 ? { status: 503 } : { status: 200 });
    try {
      await t.webhooks.service.sendTestEvent(o.orgId, ep.id);
      await t.webhooks.service.sendTestEvent(o.orgId, ep.id);
    } finally {
      rx.answer = () => ({ status: 200 });
    }
    const page = await v.get(`/settings/webhooks/${ep.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<details><summary>1 attempt: each answer</summary>');
    expect(page.body).toContain('<span class="badge bad">Failed</span>');
    expect(page.body).toContain('HTTP 503');
    expect(page.body).toContain('<pre class="event-data">{&quot;ok&quot;:true}</pre>');
    expect(page.body).toContain('every attempt it took is kept beneath it');
  });

  it('goes with its delivery: pruned by retention, deleted with the endpoint', async () => {
    const a = await newTenant(t);
    const ep = json(await a.post(BASE, { url: rx.url }));
    await customer(a, 'Short Lived');
    await t.webhooks.worker.drain();
    expect(json(await a.get(`${BASE}/${ep.id}/attempts`)).items).toHaveLength(1);
    t.clock.advance(31 * 86_400_000);
    await t.webhooks.worker.prune();
    expect(json(await a.get(`${BASE}/${ep.id}/attempts`)).items).toEqual([]);
    await customer(a, 'Then Deleted');
    await t.webhooks.worker.drain();
    expect(json(await a.get(`${BASE}/${ep.id}/attempts`)).items).toHaveLength(1);
    expect((await a.del(`${BASE}/${ep.id}`)).statusCode).toBe(204);
    const left = await sql<{ n: number }>`select count(*) as n from webhook_attempts where endpoint_id = ${ep.id}`.execute(t.store.db);
    expect(Number(left.rows[0]!.n)).toBe(0);
  });
});

describe('migration 0015 turns the outcome each delivery kept into its first attempt entry', () => {
  it('deliveries written before it have their last attempt in the log afterwards (SQLite, and PostgreSQL on its own database)', async () => {
    const pgUrl = inject('databaseUrl');
    let url: string;
    let dir: string | null = null;
    let admin: pg.Client | null = null;
    const dbName = `lanebridge_attempts_${process.pid}`;
    if (pgUrl) {
      admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.query(`create database ${dbName}`);
      const u = new URL(pgUrl);
      u.pathname = `/${dbName}`;
      url = u.toString();
    } else {
      dir = mkdtempSync(join(tmpdir(), 'lanebridge-attempts-'));
      url = join(dir, 'old.db');
    }
    const store = openDataStore(url);
    try {
      const migrator = new Migrator({
        db: store.db as Kysely<unknown>,
        provider: migrationProvider(pgUrl ? 'postgres' : 'sqlite'),
        allowUnorderedMigrations: true,
      });
      expect((await migrator.migrateTo('0014_usage')).error).toBeUndefined();
      const at = '2026-11-20T10:00:00.000Z';
      await sql`insert into organizations (id, name, created_at) values ('org_old', 'Old', ${at})`.execute(store.db);
      await sql`insert into webhook_endpoints (id, org_id, url, status, secret, enqueued_through, created_at, updated_at) values ('whe_old', 'org_old', 'https://93.184.216.34/h', 'enabled', 'whsec_x', 0, ${at}, ${at})`.execute(
        store.db,
      );
      const row = (id: string, attempt: number, status: string, code: number | null, error: string | null, next: string | null, updated: string) =>
        sql`insert into webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, sequence, attempt, status, response_status, duration_ms, error, next_attempt_at, created_at, updated_at)
            values (${id}, 'org_old', 'whe_old', ${`evt_${id.slice(4)}`}, 'customer.created', 7, ${attempt}, ${status}, ${code}, 12, ${error}, ${next}, ${at}, ${updated})`.execute(
          store.db,
        );
      await row('whd_01jrdelivered0000000000000', 2, 'delivered', 200, null, null, '2026-11-20T10:00:06.000Z');
      await row('whd_01jrpending00000000000000', 3, 'pending', 503, 'HTTP 503', '2026-11-20T11:00:00.000Z', '2026-11-20T10:30:00.000Z');
      await row('whd_01jrnever0000000000000000', 0, 'pending', null, null, at, at);
      await store.migrate();
      const { rows } = await sql<Record<string, unknown>>`select * from webhook_attempts order by delivery_id`.execute(store.db);
      expect(rows.map((r) => ({ ...r, sequence: Number(r.sequence), attempt: Number(r.attempt) }))).toEqual([
        {
          id: 'wha_01jrdelivered0000000000000',
          org_id: 'org_old',
          endpoint_id: 'whe_old',
          delivery_id: 'whd_01jrdelivered0000000000000',
          event_id: 'evt_01jrdelivered0000000000000',
          event_type: 'customer.created',
          sequence: 7,
          attempt: 2,
          status: 'delivered',
          response_status: 200,
          duration_ms: 12,
          error: null,
          response_body: null,
          next_attempt_at: null,
          created_at: '2026-11-20T10:00:06.000Z',
        },
        {
          id: 'wha_01jrpending00000000000000',
          org_id: 'org_old',
          endpoint_id: 'whe_old',
          delivery_id: 'whd_01jrpending00000000000000',
          event_id: 'evt_01jrpending00000000000000',
          event_type: 'customer.created',
          sequence: 7,
          attempt: 3,
          status: 'failed',
          response_status: 503,
          duration_ms: 12,
          error: 'HTTP 503',
          response_body: null,
          next_attempt_at: '2026-11-20T11:00:00.000Z',
          created_at: '2026-11-20T10:30:00.000Z',
        },
      ]);
      const replay = await sql<{ replay_id: string | null }>`select replay_id from webhook_deliveries where id = 'whd_01jrnever0000000000000000'`.execute(
        store.db,
      );
      expect(replay.rows[0]!.replay_id).toBeNull();
    } finally {
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (admin) {
        await admin.query(`drop database if exists ${dbName} with (force)`);
        await admin.end();
      }
    }
  });
});
