import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createServer } from 'node:net';
import { BLOCKED_ADDRESS_MESSAGE, BlockedAddressError, guardedLookup, urlProblem, isBlockedAddress } from '../../../src/modules/webhooks/url-policy.js';
import { nextAttemptWait, RETRY_SCHEDULE_MS, retryAfterMs, retryDelay } from '../../../src/modules/webhooks/webhooks.worker.js';
import { parseScopes } from '../../../src/modules/accounts/accounts.service.js';
import { useApp, json, newTenant, uid, type Tenant } from '../../helpers.js';
import { startReceiver, type Received, type Receiver } from './support.js';
import { freePort } from '../../reliability/support.js';

const BASE = '/v2/tms-api/webhook-endpoints';

/** The standardwebhooks library's own verification, its clock pinned to the message's timestamp. */
function verify(secret: string, r: Received): unknown {
  const ts = Number(r.headers['webhook-timestamp']) * 1000;
  const spy = vi.spyOn(Date, 'now').mockReturnValue(ts + 500);
  try {
    return new Webhook(secret).verify(r.body, r.headers);
  } finally {
    spy.mockRestore();
  }
}

let rx: Receiver;

const t = useApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

async function endpoint(tenant: Tenant, body: Record<string, unknown> = {}) {
  const res = await tenant.post(BASE, { url: rx.url, ...body });
  expect(res.statusCode, res.body).toBe(201);
  return json(res) as { id: string; secret: string; url: string; event_types: string[]; status: string };
}

async function customer(tenant: Tenant, name = 'Acme Freight') {
  const ref = uid('C');
  const res = await tenant.post('/v2/tms-api/customers', { external_reference_id: ref, name });
  expect(res.statusCode, res.body).toBe(201);
  return { ref, id: json(res).id as string };
}

const forId = (id: string) => rx.received.filter((r) => JSON.parse(r.body).data?.id === id || r.headers['webhook-id'] === id);

describe('endpoints API (D12)', () => {
  it('creates with a whsec_ secret shown once; get, list, update, delete', async () => {
    const a = await newTenant(t);
    const created = await a.post(BASE, { url: rx.url, event_types: ['LOAD.created', 'customer.created', 'customer.created'], description: 'TMS' });
    expect(created.statusCode).toBe(201);
    const ep = json(created);
    expect(ep).toEqual({
      id: expect.stringMatching(/^whe_[0-9a-z]{26}$/),
      url: rx.url,
      event_types: ['customer.created', 'load.created'],
      description: 'TMS',
      status: 'enabled',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(Buffer.from(ep.secret.slice(6), 'base64')).toHaveLength(24);
    const got = json(await a.get(`${BASE}/${ep.id}`));
    expect(got).toEqual({
      id: ep.id,
      url: rx.url,
      event_types: ['customer.created', 'load.created'],
      description: 'TMS',
      status: 'enabled',
      created_at: ep.created_at,
      updated_at: ep.updated_at,
    });
    expect(got.secret).toBeUndefined();

    const all = await endpoint(a);
    expect(all.event_types).toContain('market_rate.created');
    expect(all.event_types).toHaveLength(18);
    const list = json(await a.get(`${BASE}?page_size=1`));
    expect(list.items).toHaveLength(1);
    expect(list.items[0].id).toBe(ep.id);
    expect(list.items[0].secret).toBeUndefined();
    expect(list.pagination).toEqual({ page: 1, page_size: 1, total: 2, total_items: 2, total_pages: 2, has_more: true, has_next: true, has_previous: false });

    const put = await a.put(`${BASE}/${ep.id}`, { description: null, status: 'DISABLED' });
    expect(put.statusCode, put.body).toBe(200);
    expect(json(put)).toMatchObject({ id: ep.id, url: rx.url, description: null, status: 'disabled', event_types: ['customer.created', 'load.created'] });
    const bad = await a.put(`${BASE}/${ep.id}`, { status: 'paused' });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0]).toMatchObject({ type: 'enum', loc: ['body', 'status'] });

    const del = await a.del(`${BASE}/${ep.id}`);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    const gone = await a.get(`${BASE}/${ep.id}`);
    expect(gone.statusCode).toBe(404);
    expect(json(gone)).toEqual({ detail: `Webhook endpoint with id '${ep.id}' not found` });
    expect(json(await a.del(`${BASE}/${ep.id}`))).toEqual({ detail: `Webhook endpoint with id '${ep.id}' not found` });
  });

  it('a PUT of what is stored changes nothing: no audit entry, updated_at kept; a real change is audited once', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a, { event_types: ['load.created', 'customer.created'], description: 'TMS' });
    const audited = async () => json(await a.get('/v2/tms-api/audit-log?action=webhook_endpoint.&page_size=100')).items.map((e: any) => [e.action, e.target]);
    expect(await audited()).toEqual([['webhook_endpoint.created', { type: 'webhook_endpoint', id: ep.id }]]);
    const { secret: _secret, ...stored } = ep as typeof ep & Record<string, unknown>;
    // The same body as stored (types in another order and case, status in capitals), and an empty body.
    for (const body of [{ url: rx.url, event_types: ['CUSTOMER.created', 'load.created'], description: 'TMS', status: 'ENABLED' }, {}]) {
      const same = await a.put(`${BASE}/${ep.id}`, body);
      expect(same.statusCode, same.body).toBe(200);
      expect(json(same)).toEqual(stored);
    }
    expect(await audited()).toEqual([['webhook_endpoint.created', { type: 'webhook_endpoint', id: ep.id }]]);
    const changed = json(await a.put(`${BASE}/${ep.id}`, { description: 'TMS 2', status: 'enabled' }));
    expect(changed).toMatchObject({ description: 'TMS 2', status: 'enabled' });
    expect(changed.updated_at > String(stored.updated_at)).toBe(true);
    expect(await audited()).toEqual([
      ['webhook_endpoint.updated', { type: 'webhook_endpoint', id: ep.id }],
      ['webhook_endpoint.created', { type: 'webhook_endpoint', id: ep.id }],
    ]);
  });

  it('an endpoint belongs to its organization: another one gets 404 and it receives only its own events', async () => {
    const a = await newTenant(t);
    const b = await newTenant(t);
    const ep = await endpoint(a);
    for (const path of [`${BASE}/${ep.id}`, `${BASE}/${ep.id}/deliveries`]) {
      const res = await b.get(path);
      expect(res.statusCode).toBe(404);
      expect(json(res)).toEqual({ detail: `Webhook endpoint with id '${ep.id}' not found` });
    }
    expect(json(await b.post(`${BASE}/${ep.id}/rotate-secret`, {}))).toEqual({ detail: `Webhook endpoint with id '${ep.id}' not found` });
    expect(json(await b.get(BASE)).items).toEqual([]);
    const mine = await customer(a);
    const theirs = await customer(b);
    await t.webhooks.worker.drain();
    expect(forId(mine.id)).toHaveLength(1);
    expect(forId(theirs.id)).toHaveLength(0);
  });

  it('validates bodies with the D1 422 shape', async () => {
    const a = await newTenant(t);
    const res = await a.post(BASE, { event_types: ['load.exploded'] });
    expect(res.statusCode).toBe(422);
    const locs = json(res).detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toContain('body.url');
    expect(locs.some((l: string) => l.startsWith('body.event_types'))).toBe(true);
    const notUrl = await a.post(BASE, { url: 'not a url' });
    expect(json(notUrl)).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg: 'Input should be a valid URL' }] });
  });
});

describe('deliveries', () => {
  it('POSTs the event envelope, signed per Standard Webhooks (verified by the standardwebhooks library)', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Signed Freight');
    await t.webhooks.worker.drain();
    const [r] = forId(c.id);
    expect(r).toBeDefined();
    const feed = json(await a.get('/v2/tms-api/events')).items;
    const event = feed.find((e: any) => e.type === 'customer.created' && e.data.id === c.id);
    // The library verifies the signature (and the timestamp against real time) and returns the payload.
    expect(new Webhook(ep.secret).verify(r!.body, r!.headers)).toEqual(event);
    expect(JSON.parse(r!.body)).toEqual(event);
    expect(Object.keys(JSON.parse(r!.body))).toEqual(['id', 'type', 'sequence', 'timestamp', 'data']);
    expect(r!.headers['webhook-id']).toBe(event.id);
    expect(r!.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(r!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // A wrong secret does not verify.
    expect(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString('base64')}`).verify(r!.body, r!.headers)).toThrow();

    const log = json(await a.get(`${BASE}/${ep.id}/deliveries`));
    expect(log.items[0]).toEqual({
      id: expect.stringMatching(/^whd_/),
      event_id: event.id,
      event_type: 'customer.created',
      sequence: event.sequence,
      attempt: 1,
      status: 'delivered',
      response_status: 200,
      duration_ms: expect.any(Number),
      error: null,
      next_attempt_at: null,
      created_at: expect.any(String),
    });
    expect(log.pagination.total).toBe(1);
  });

  it('sends only the endpoint’s event types, in sequence order', async () => {
    const a = await newTenant(t);
    await endpoint(a, { event_types: ['customer.updated'] });
    const c = await customer(a, 'Filter One');
    expect((await a.put(`/v2/tms-api/customers/${c.ref}`, { name: 'Filter Two' })).statusCode).toBe(200);
    expect((await a.put(`/v2/tms-api/customers/${c.ref}`, { name: 'Filter Three' })).statusCode).toBe(200);
    await t.webhooks.worker.drain();
    const got = forId(c.id).map((r) => JSON.parse(r.body));
    expect(got.map((e) => [e.type, e.data.name])).toEqual([
      ['customer.updated', 'Filter Two'],
      ['customer.updated', 'Filter Three'],
    ]);
    expect(got[1].sequence).toBeGreaterThan(got[0].sequence);
  });

  it('retries a 500 with the same webhook-id on the D12 schedule (±20%), then fails', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Retry Freight');
    rx.answer = (r) => (JSON.parse(r.body).data?.id === c.id ? { status: 500 } : { status: 200 });
    try {
      await t.webhooks.worker.drain();
      expect(forId(c.id)).toHaveLength(1);
      const firstId = forId(c.id)[0]!.headers['webhook-id'];
      let before = Date.parse((json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0] as { next_attempt_at: string }).next_attempt_at);
      for (let attempt = 1; attempt <= RETRY_SCHEDULE_MS.length; attempt++) {
        const d = json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0];
        expect(d).toMatchObject({ status: 'pending', attempt, response_status: 500, error: 'HTTP 500' });
        const due = Date.parse(d.next_attempt_at);
        const wait = due - t.clock.now().getTime();
        const planned = RETRY_SCHEDULE_MS[attempt - 1]!;
        expect(wait, `wait after attempt ${attempt}`).toBeGreaterThanOrEqual(planned * 0.8 - 50);
        expect(wait, `wait after attempt ${attempt}`).toBeLessThanOrEqual(planned * 1.2 + 50);
        // Not before it is due.
        t.clock.advance(Math.max(0, wait - 1000));
        await t.webhooks.worker.drain();
        expect(forId(c.id)).toHaveLength(attempt);
        t.clock.advance(1100);
        await t.webhooks.worker.drain();
        expect(forId(c.id)).toHaveLength(attempt + 1);
        before = due;
      }
      expect(before).toBeGreaterThan(0);
      const last = json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0];
      expect(last).toMatchObject({ status: 'failed', attempt: 10, response_status: 500, next_attempt_at: null });
      // Every attempt carried the same webhook-id, and each verifies.
      for (const r of forId(c.id)) {
        expect(r.headers['webhook-id']).toBe(firstId);
        expect(verify(ep.secret, r)).toMatchObject({ id: firstId, type: 'customer.created' });
      }
    } finally {
      rx.answer = () => ({ status: 200 });
    }
  });

  it('a 500 then a 200: delivered on the retry with the same webhook-id', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Second Time');
    let calls = 0;
    rx.answer = (r) => (JSON.parse(r.body).data?.id === c.id && calls++ === 0 ? { status: 500 } : { status: 200 });
    try {
      await t.webhooks.worker.drain();
      t.clock.advance(6_001);
      await t.webhooks.worker.drain();
      const got = forId(c.id);
      expect(got).toHaveLength(2);
      expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
      expect(got[1]!.body).toBe(got[0]!.body);
      expect(json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0]).toMatchObject({ status: 'delivered', attempt: 2, response_status: 200, error: null });
    } finally {
      rx.answer = () => ({ status: 200 });
    }
  });

  it('honours Retry-After on 429', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Slow Down');
    rx.answer = (r) => (JSON.parse(r.body).data?.id === c.id ? { status: 429, headers: { 'retry-after': '120' } } : { status: 200 });
    try {
      await t.webhooks.worker.drain();
      const d = json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0];
      expect(d).toMatchObject({ status: 'pending', attempt: 1, response_status: 429 });
      expect(Date.parse(d.next_attempt_at) - t.clock.now().getTime()).toBeGreaterThan(118_000);
      expect(Date.parse(d.next_attempt_at) - t.clock.now().getTime()).toBeLessThanOrEqual(120_000);
    } finally {
      rx.answer = () => ({ status: 200 });
    }
  });

  it('Retry-After: 0 (503) or a past date (429) never retries sooner than the schedule, and the attempt cap holds', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const zero = await customer(a, 'Retry Now');
    const past = await customer(a, 'Retry Yesterday');
    rx.answer = (r) => {
      const id = JSON.parse(r.body).data?.id;
      if (id === zero.id) return { status: 503, headers: { 'retry-after': '0' } };
      if (id === past.id) return { status: 429, headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' } };
      return { status: 200 };
    };
    try {
      await t.webhooks.worker.drain();
      // Drained at once: nothing more was sent (the old rule sent these again and again, past the cap).
      expect(forId(zero.id)).toHaveLength(1);
      expect(forId(past.id)).toHaveLength(1);
      for (let attempt = 1; attempt <= RETRY_SCHEDULE_MS.length; attempt++) {
        const log = json(await a.get(`${BASE}/${ep.id}/deliveries`)).items as { event_id: string; status: string; attempt: number; next_attempt_at: string }[];
        expect(log.map((d) => [d.status, d.attempt])).toEqual([
          ['pending', attempt],
          ['pending', attempt],
        ]);
        const planned = RETRY_SCHEDULE_MS[attempt - 1]!;
        const waits = log.map((d) => Date.parse(d.next_attempt_at) - t.clock.now().getTime());
        for (const wait of waits) {
          expect(wait, `wait after attempt ${attempt}`).toBeGreaterThanOrEqual(planned * 0.8 - 50);
          expect(wait, `wait after attempt ${attempt}`).toBeLessThanOrEqual(planned * 1.2 + 50);
        }
        t.clock.advance(Math.max(...waits) + 1000);
        await t.webhooks.worker.drain();
        expect(forId(zero.id)).toHaveLength(attempt + 1);
        expect(forId(past.id)).toHaveLength(attempt + 1);
      }
      const last = json(await a.get(`${BASE}/${ep.id}/deliveries`)).items;
      expect(last.map((d: any) => [d.status, d.attempt, d.response_status, d.next_attempt_at])).toEqual([
        ['failed', 10, 429, null],
        ['failed', 10, 503, null],
      ]);
      t.clock.advance(7 * 86_400_000);
      await t.webhooks.worker.drain();
      expect(forId(zero.id)).toHaveLength(10);
      expect(forId(past.id)).toHaveLength(10);
    } finally {
      rx.answer = () => ({ status: 200 });
    }
  });

  it('410 disables the endpoint; the dashboard list says why', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Gone Freight');
    rx.answer = (r) => (JSON.parse(r.body).data?.id === c.id ? { status: 410 } : { status: 200 });
    try {
      await t.webhooks.worker.drain();
    } finally {
      rx.answer = () => ({ status: 200 });
    }
    expect(json(await a.get(`${BASE}/${ep.id}`)).status).toBe('disabled');
    expect(json(await a.get(`${BASE}/${ep.id}/deliveries`)).items[0]).toMatchObject({
      status: 'failed',
      attempt: 1,
      response_status: 410,
      error: 'HTTP 410: the receiver is gone; endpoint disabled',
    });
    const later = await customer(a, 'After Gone');
    await t.webhooks.worker.drain();
    expect(forId(later.id)).toHaveLength(0);
    const [overview] = await t.webhooks.service.overview(a.orgId);
    expect(overview).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
    // Enabled again: events from then on are delivered.
    expect(json(await a.put(`${BASE}/${ep.id}`, { status: 'enabled' })).status).toBe('enabled');
    const back = await customer(a, 'Back Again');
    await t.webhooks.worker.drain();
    expect(forId(back.id)).toHaveLength(1);
  });

  it('an endpoint failing every attempt for 5 days is disabled', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    rx.answer = (r) => (r.headers['webhook-id'] && JSON.parse(r.body).data?.name?.startsWith('Failing') ? { status: 503 } : { status: 200 });
    try {
      await customer(a, 'Failing 0');
      await t.webhooks.worker.drain();
      const start = t.clock.now().getTime();
      let day = 0;
      // A new event each day, every attempt failing, until the endpoint is disabled.
      for (let hour = 1; hour <= 24 * 7 && json(await a.get(`${BASE}/${ep.id}`)).status === 'enabled'; hour++) {
        t.clock.advance(3_600_000);
        if (Math.floor(hour / 24) > day) {
          day = Math.floor(hour / 24);
          await customer(a, `Failing ${day}`);
        }
        await t.webhooks.worker.drain();
      }
      const hours = (t.clock.now().getTime() - start) / 3_600_000;
      expect(json(await a.get(`${BASE}/${ep.id}`)).status).toBe('disabled');
      expect(hours).toBeGreaterThanOrEqual(5 * 24 - 1);
      expect(hours).toBeLessThan(6 * 24);
      const [overview] = await t.webhooks.service.overview(a.orgId);
      expect(overview).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
      const log = json(await a.get(`${BASE}/${ep.id}/deliveries?status=pending`));
      expect(log.items).toEqual([]);
    } finally {
      rx.answer = () => ({ status: 200 });
    }
  });

  it('rotation: two signatures for 24 h, each verifying with its own secret; then only the new one', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const rotated = await a.post(`${BASE}/${ep.id}/rotate-secret`, {});
    expect(rotated.statusCode).toBe(200);
    const { secret } = json(rotated);
    expect(Object.keys(json(rotated))).toEqual(['secret']);
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(ep.secret);
    const c = await customer(a, 'Rotated Freight');
    await t.webhooks.worker.drain();
    const [r] = forId(c.id);
    const signatures = r!.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    const ts = new Date(Number(r!.headers['webhook-timestamp']) * 1000);
    expect(signatures[0]).toBe(new Webhook(secret).sign(r!.headers['webhook-id']!, ts, r!.body));
    expect(signatures[1]).toBe(new Webhook(ep.secret).sign(r!.headers['webhook-id']!, ts, r!.body));
    for (const s of [secret, ep.secret]) {
      const one = { ...r!, headers: { ...r!.headers, 'webhook-signature': signatures[s === secret ? 0 : 1]! } };
      expect(verify(s, one)).toMatchObject({ type: 'customer.created', data: { id: c.id } });
    }
    t.clock.advance(24 * 3_600_000 + 1000);
    const later = await customer(a, 'Day After');
    await t.webhooks.worker.drain();
    const [r2] = forId(later.id);
    expect(r2!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verify(secret, r2!)).toMatchObject({ data: { id: later.id } });
    expect(() => verify(ep.secret, r2!)).toThrow();
  });

  it('replay redelivers by sequence or by id, with the same webhook-id', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a, { event_types: ['customer.created'] });
    const c1 = await customer(a, 'Replay One');
    const c2 = await customer(a, 'Replay Two');
    await t.webhooks.worker.drain();
    const first = [...forId(c1.id), ...forId(c2.id)];
    expect(first).toHaveLength(2);
    const seq1 = JSON.parse(first[0]!.body).sequence;
    const bySeq = await a.post(`${BASE}/${ep.id}/replay`, { after_sequence: seq1 - 1 });
    expect(bySeq.statusCode).toBe(202);
    expect(json(bySeq)).toEqual({ queued: 2 });
    await t.webhooks.worker.drain();
    expect(forId(c1.id)).toHaveLength(2);
    expect(forId(c2.id)).toHaveLength(2);
    expect(forId(c1.id)[1]!.headers['webhook-id']).toBe(forId(c1.id)[0]!.headers['webhook-id']);
    expect(forId(c1.id)[1]!.body).toBe(forId(c1.id)[0]!.body);
    const id2 = forId(c2.id)[0]!.headers['webhook-id'];
    expect(json(await a.post(`${BASE}/${ep.id}/replay`, { event_ids: [id2] }))).toEqual({ queued: 1 });
    await t.webhooks.worker.drain();
    expect(forId(c2.id)).toHaveLength(3);
    const unknown = await a.post(`${BASE}/${ep.id}/replay`, { event_ids: [id2, 'evt_nope'] });
    expect(unknown.statusCode).toBe(422);
    expect(json(unknown)).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'event_ids', 1], msg: "Event 'evt_nope' not found (unknown, of another organization, or no longer kept)" }],
    });
    const both = await a.post(`${BASE}/${ep.id}/replay`, { after_sequence: 0, event_ids: [id2] });
    expect(json(both)).toEqual({ detail: [{ type: 'value_error', loc: ['body'], msg: 'Send exactly one of after_sequence and event_ids' }] });
    // Another organization's event ids are not found.
    const b = await newTenant(t);
    const epB = await endpoint(b);
    expect(json(await b.post(`${BASE}/${epB.id}/replay`, { event_ids: [id2] })).detail[0].loc).toEqual(['body', 'event_ids', 0]);
    const log = json(await a.get(`${BASE}/${ep.id}/deliveries`));
    expect(log.items.map((d: any) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
    // Newest first.
    expect(log.items[0].event_id).toBe(id2);
  });

  it('keeps the delivery log as long as the events (EVENT_RETENTION_DAYS), pending rows always', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const c = await customer(a, 'Old Delivery');
    await t.webhooks.worker.drain();
    expect(forId(c.id)).toHaveLength(1);
    const pending = json(await a.post(BASE, { url: `http://127.0.0.1:${await freePort()}/closed` }));
    await customer(a, 'Never Delivered');
    await t.webhooks.worker.drain();
    t.clock.advance(31 * 86_400_000);
    await t.webhooks.worker.prune();
    expect(json(await a.get(`${BASE}/${ep.id}/deliveries`)).items).toEqual([]);
    // A pending delivery is not pruned (it fails on its schedule, or with its endpoint).
    expect(json(await a.get(`${BASE}/${pending.id}/deliveries`)).items).toEqual([
      expect.objectContaining({ status: 'pending', event_type: 'customer.created' }),
    ]);
    await a.put(`${BASE}/${pending.id}`, { status: 'disabled' });
  });

  it('the test event is signed the same way', async () => {
    const a = await newTenant(t);
    const ep = await endpoint(a);
    const d = await t.webhooks.service.sendTestEvent(a.orgId, ep.id);
    expect(d).toMatchObject({ event_type: 'webhook.test', sequence: 0, status: 'delivered', attempt: 1, response_status: 200 });
    const [r] = forId(d.event_id);
    expect(verify(ep.secret, r!)).toEqual({
      id: d.event_id,
      type: 'webhook.test',
      sequence: 0,
      timestamp: expect.any(String),
      data: { endpoint_id: ep.id, message: expect.any(String) },
    });
  });

  it('/metrics counts deliveries and shows the queue; /readyz does not depend on receivers', async () => {
    const a = await newTenant(t);
    const dead = await a.post(BASE, { url: `http://127.0.0.1:${await freePort()}/nobody` });
    expect(dead.statusCode).toBe(201);
    await endpoint(a);
    await customer(a, 'Nobody Listens');
    await t.webhooks.worker.drain();
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/lanebridge_webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/lanebridge_webhook_deliveries_total\{outcome="retry"\} [1-9]/);
    expect(metrics).toMatch(/lanebridge_webhook_queue_depth [1-9]/);
    expect(metrics).toMatch(/lanebridge_webhook_oldest_pending_age_seconds \d/);
    const log = json(await a.get(`${BASE}/${json(dead).id}/deliveries`)).items[0];
    expect(log).toMatchObject({ status: 'pending', attempt: 1, response_status: null, error: 'Connection refused' });
  });
});

describe('URL rules (SSRF) without WEBHOOK_ALLOW_INSECURE', () => {
  const strict = useApp({ webhookAllowInsecure: false }, { webhookDelivery: 'manual' });

  /** A worker of its own resolving names with `resolve`; the first delivery of one customer write to `url`. */
  async function firstDelivery(url: string, resolve: (host: string) => Promise<string[]>, afterCreate = () => {}) {
    const { webhooksModule } = await import('../../../src/modules/webhooks/webhooks.js');
    const mod = webhooksModule({ db: strict.store.db, clock: strict.clock, allowInsecure: false, leaseMs: 30_000, log: { warn() {} }, resolve });
    try {
      const a = await newTenant(strict);
      const ep = await mod.service.create(a.orgId, { url });
      afterCreate();
      expect((await a.post('/v2/tms-api/customers', { external_reference_id: uid('C'), name: 'Rebound' })).statusCode).toBe(201);
      await mod.worker.drain();
      return (await mod.service.deliveries(a.orgId, ep.id, { page: 1, page_size: 10 })).items[0];
    } finally {
      await mod.worker.stop();
    }
  }

  // Every refused form, and the accepted ones, are in test/modules/webhooks/webhooks.url-rules.test.ts.
  it('refuses a literal private address with 422 on ["body","url"], naming no address', async () => {
    const a = await newTenant(strict);
    const res = await a.post(BASE, { url: 'https://10.1.2.3/x' });
    expect(res.statusCode).toBe(422);
    expect(json(res)).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg: BLOCKED_ADDRESS_MESSAGE }] });
    expect(json(await a.get(BASE)).items).toEqual([]);
  });

  it('refuses a name resolving to loopback (localhost), on create and on update', async () => {
    const a = await newTenant(strict);
    const res = await a.post(BASE, { url: 'https://localhost:8443/hooks' });
    expect(res.statusCode).toBe(422);
    expect(json(res)).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'url'], msg: BLOCKED_ADDRESS_MESSAGE }] });
  });

  it('checks every resolved address, and again at each delivery', async () => {
    const resolve = async () => ['93.184.216.34', '10.0.0.5'];
    expect(await urlProblem('https://mixed.example/x', { allowInsecure: false, resolve })).toBe(BLOCKED_ADDRESS_MESSAGE);
    expect(await urlProblem('https://public.example/x', { allowInsecure: false, resolve: async () => ['93.184.216.34', '2606:2800:220:1::1'] })).toBeNull();
    expect(await urlProblem('https://nowhere.example/x', { allowInsecure: false, resolve: async () => Promise.reject(new Error('ENOTFOUND')) })).toBe(
      BLOCKED_ADDRESS_MESSAGE,
    );
    expect(await urlProblem('http://127.0.0.1/x', { allowInsecure: true })).toBeNull();
    for (const addr of [
      '127.0.0.1',
      '10.9.9.9',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      '::ffff:a00:1',
    ]) {
      expect(isBlockedAddress(addr), addr).toBe(true);
    }
    for (const addr of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1::1']) expect(isBlockedAddress(addr), addr).toBe(false);

    // An endpoint whose name later resolves to a private address: the delivery is refused and retried.
    let answers = ['93.184.216.34'];
    const d = await firstDelivery(
      'https://rebind.example/hooks',
      async () => answers,
      () => (answers = ['127.0.0.1']),
    );
    expect(d).toMatchObject({
      status: 'pending',
      attempt: 1,
      response_status: null,
      error: `URL refused: ${BLOCKED_ADDRESS_MESSAGE}`,
    });
  });

  it('DNS rebinding: refuses the connection when the name resolves to loopback after the check passed, and opens none', async () => {
    // A listener on loopback counts connections: without the guard the socket would reach it (the
    // system resolves localhost to 127.0.0.1) although the endpoint's check had been told a public address.
    let connections = 0;
    const listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    const port = (listener.address() as { port: number }).port;
    // Resolutions in order: the endpoint's creation (public), then the connection's own resolution
    // (rebound to loopback, as a short-TTL record can be). The attempt resolves the name only to connect.
    const calls: string[] = [];
    try {
      const d = await firstDelivery(`https://localhost:${port}/hooks`, async (host) => {
        calls.push(host);
        return calls.length <= 1 ? ['93.184.216.34'] : ['127.0.0.1'];
      });
      expect(d).toMatchObject({
        status: 'pending',
        attempt: 1,
        response_status: null,
        error: `URL refused: ${BLOCKED_ADDRESS_MESSAGE}`,
      });
      expect(calls).toEqual(['localhost', 'localhost']);
      expect(connections).toBe(0);
    } finally {
      await new Promise((r) => listener.close(r));
    }
  });

  it('guardedLookup answers net/tls as they ask (one address, every address, one family) and refuses any blocked one', async () => {
    const lookup = (answers: string[], options: object) =>
      new Promise<{ err: Error | null; address: unknown; family?: number }>((r) =>
        guardedLookup(async () => answers)('receiver.example', options as never, (err, address, family) => r({ err, address, family })),
      );
    const both = ['93.184.216.34', '2606:2800:220:1::1'];
    expect(await lookup(both, {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await lookup(both, { all: true })).toEqual({
      err: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
      family: undefined,
    });
    expect(await lookup(both, { family: 6 })).toEqual({ err: null, address: '2606:2800:220:1::1', family: 6 });
    const mixed = await lookup(['93.184.216.34', '10.0.0.5'], { all: true });
    expect(mixed.err).toBeInstanceOf(BlockedAddressError);
    expect(mixed.err).toMatchObject({ code: 'EBLOCKEDADDRESS', message: BLOCKED_ADDRESS_MESSAGE });
    expect((await lookup([], {})).err).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('contract surface', () => {
  it('write:webhooks is in `--scopes all`; the OpenAPI document has the routes and schemas', async () => {
    expect(parseScopes('all')).toContain('write:webhooks');
    const doc = json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }));
    const paths = Object.keys(doc.paths)
      .filter((p) => p.includes('webhook-endpoints'))
      .sort();
    expect(paths).toEqual([
      '/v2/tms-api/webhook-endpoints',
      '/v2/tms-api/webhook-endpoints/{id}',
      '/v2/tms-api/webhook-endpoints/{id}/attempts',
      '/v2/tms-api/webhook-endpoints/{id}/deliveries',
      '/v2/tms-api/webhook-endpoints/{id}/replay',
      '/v2/tms-api/webhook-endpoints/{id}/rotate-secret',
    ]);
    expect(JSON.stringify(doc.paths['/v2/tms-api/webhook-endpoints'].post.responses['201'])).toContain('WebhookEndpointWithSecret');
    expect(doc.paths['/v2/tms-api/webhook-endpoints/{id}'].get.responses['404']).toBeDefined();
    expect(doc.paths['/v2/tms-api/webhook-endpoints/{id}/replay'].post.responses['202']).toBeDefined();
    expect(Object.keys(doc.components.schemas.WebhookDelivery.properties)).toEqual([
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
    ]);
    expect(doc.components.schemas.WebhookEndpoint.properties.secret).toBeUndefined();
    expect(doc.components.schemas.WebhookEndpointWithSecret.properties.secret).toBeDefined();
  });
});

describe('schedule helpers', () => {
  it('jitters each wait within ±20% and reads Retry-After in seconds or as a date', () => {
    expect(retryDelay(1, () => 0)).toBe(4_000);
    expect(retryDelay(1, () => 1)).toBe(6_000);
    expect(retryDelay(9, () => 0.5)).toBe(86_400_000);
    expect(retryDelay(10, () => 0.5)).toBeNull();
    const now = new Date('2026-11-25T00:00:00Z');
    expect(retryAfterMs('30', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs('999999999', now)).toBe(86_400_000);
  });

  it('Retry-After lengthens a wait of the schedule up to 24 h, never shortens it, and adds no attempt', () => {
    const mid = () => 0.5;
    expect(nextAttemptWait(1, null, mid)).toBe(5_000);
    expect(nextAttemptWait(1, 0, mid)).toBe(5_000);
    expect(nextAttemptWait(1, 120_000, mid)).toBe(120_000);
    expect(nextAttemptWait(1, 10 * 86_400_000, mid)).toBe(86_400_000);
    expect(nextAttemptWait(3, 60_000, mid)).toBe(1_800_000);
    // The last step's jitter may pass 24 h: the schedule still wins.
    expect(nextAttemptWait(9, 0, () => 1)).toBe(103_680_000);
    expect(nextAttemptWait(10, 0, mid)).toBeNull();
    expect(nextAttemptWait(10, 60_000, mid)).toBeNull();
  });
});
