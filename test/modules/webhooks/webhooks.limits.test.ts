// Issue 26, item 6 (webhooks): endpoints per organization (WEBHOOK_MAX_ENDPOINTS, default 20) and one
// running replay per endpoint, each refused with a D1 409 that says why; both hold under concurrent
// requests on both engines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApp, json, newTenant, uid, type Tenant } from '../../helpers.js';
import { Visitor, orgWithUser } from '../../dashboard/support.js';
import { startReceiver, type Receiver } from './support.js';

const BASE = '/v2/tms-api/webhook-endpoints';
const limitDetail = (n: number) =>
  `This organization already has ${n} webhook endpoints, the most it may have (WEBHOOK_MAX_ENDPOINTS); delete one before adding another`;

let rx: Receiver;
const t = useApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
const small = useApp({ webhookAllowInsecure: true, webhookMaxEndpoints: 3 }, { webhookDelivery: 'manual' });
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

async function customer(tenant: Tenant, name: string) {
  const res = await tenant.post('/v2/tms-api/customers', { external_reference_id: uid('C'), name });
  expect(res.statusCode, res.body).toBe(201);
}

describe('endpoints per organization', () => {
  it('20 by default: the 21st is a 409 that says why; disabled endpoints count; deleting one makes room', async () => {
    const a = await newTenant(t, undefined, { perMinute: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await a.post(BASE, { url: `${rx.url}/${i}` });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(json(res).id);
    }
    await a.put(`${BASE}/${ids[0]}`, { status: 'disabled' });
    const refused = await a.post(BASE, { url: `${rx.url}/21` });
    expect(refused.statusCode).toBe(409);
    expect(json(refused)).toEqual({ detail: limitDetail(20) });
    expect(json(await a.get(`${BASE}?page_size=100`)).pagination.total).toBe(20);
    // Another organization is not affected.
    const b = await newTenant(t);
    expect((await b.post(BASE, { url: rx.url })).statusCode).toBe(201);
    expect((await a.del(`${BASE}/${ids[0]}`)).statusCode).toBe(204);
    expect((await a.post(BASE, { url: `${rx.url}/again` })).statusCode).toBe(201);
    for (const id of ids.slice(1)) await a.put(`${BASE}/${id}`, { status: 'disabled' });
  });

  it('WEBHOOK_MAX_ENDPOINTS sets it, and holds under concurrent creates', async () => {
    const a = await newTenant(small, undefined, { perMinute: 1000 });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => a.post(BASE, { url: `${rx.url}/c${i}` })));
    const codes = answers.map((r) => r.statusCode).sort();
    expect(codes).toEqual([201, 201, 201, 409, 409, 409, 409, 409]);
    for (const r of answers.filter((x) => x.statusCode === 409)) expect(json(r)).toEqual({ detail: limitDetail(3) });
    expect(json(await a.get(BASE)).pagination.total).toBe(3);
  });

  it('the dashboard form says so, and keeps what was typed', async () => {
    const o = await orgWithUser(small);
    for (let i = 0; i < 3; i++) await small.webhooks.service.create(o.orgId, { url: `${rx.url}/d${i}` });
    const v = new Visitor(small);
    await v.signIn(o.email, o.password);
    const res = await v.submit('/settings/webhooks', '/settings/webhooks', { url: `${rx.url}/fourth` });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain(limitDetail(3));
    expect(res.body).toContain(`value="${rx.url}/fourth"`);
  });
});

describe('one running replay per endpoint', () => {
  it('a second replay while the first one’s deliveries are pending is a 409; once they are done, another may start', async () => {
    const a = await newTenant(t);
    const ep = json(await a.post(BASE, { url: rx.url, event_types: ['customer.created'] }));
    await customer(a, 'Replay A');
    await customer(a, 'Replay B');
    await t.webhooks.worker.drain();
    const first = await a.post(`${BASE}/${ep.id}/replay`, { after_sequence: 0 });
    expect(first.statusCode).toBe(202);
    expect(json(first)).toEqual({ queued: 2 });
    for (const body of [{ after_sequence: 0 }, { event_ids: [json(await a.get('/v2/tms-api/events')).items[0].id] }]) {
      const second = await a.post(`${BASE}/${ep.id}/replay`, body);
      expect(second.statusCode).toBe(409);
      expect(json(second)).toEqual({ detail: 'A replay of this endpoint is still running (2 of its deliveries pending); replay again once it has finished' });
    }
    // Another endpoint of the organization may replay meanwhile.
    const other = json(await a.post(BASE, { url: `${rx.url}/other` }));
    expect((await a.post(`${BASE}/${other.id}/replay`, { after_sequence: 0 })).statusCode).toBe(202);
    // Pending deliveries that are not a replay's (a new event being retried) do not count.
    await t.webhooks.worker.drain();
    rx.answer = (r) => (JSON.parse(r.body).data?.name === 'Replay C' ? { status: 500 } : { status: 200 });
    try {
      await customer(a, 'Replay C');
      await t.webhooks.worker.drain();
      expect(json(await a.get(`${BASE}/${ep.id}/deliveries?status=pending`)).pagination.total).toBe(1);
      const third = await a.post(`${BASE}/${ep.id}/replay`, { after_sequence: 0 });
      expect(third.statusCode).toBe(202);
      expect(json(third)).toEqual({ queued: 3 });
    } finally {
      rx.answer = () => ({ status: 200 });
    }
    t.clock.advance(6_001);
    await t.webhooks.worker.drain();
    const log = json(await a.get(`${BASE}/${ep.id}/deliveries?page_size=100`)).items;
    expect(log.map((d: { status: string }) => d.status)).toEqual(Array(log.length).fill('delivered'));
    expect(log).toHaveLength(3 + 2 + 3);
  });

  it('two replays at once: one runs, the other is refused', async () => {
    const a = await newTenant(t);
    const ep = json(await a.post(BASE, { url: rx.url }));
    await customer(a, 'Race');
    await t.webhooks.worker.drain();
    const answers = await Promise.all([1, 2, 3].map(() => a.post(`${BASE}/${ep.id}/replay`, { after_sequence: 0 })));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([202, 409, 409]);
    expect(json(answers.find((r) => r.statusCode === 202)!)).toEqual({ queued: 1 });
  });

  it('the dashboard’s replay form says so', async () => {
    const o = await orgWithUser(t);
    const ep = await t.webhooks.service.create(o.orgId, { url: rx.url });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { 'x-api-key': o.key!, 'content-type': 'application/json' },
      payload: { external_reference_id: uid('C'), name: 'Dashboard Replay' },
    });
    expect(res.statusCode).toBe(201);
    await t.webhooks.worker.drain();
    expect(await t.webhooks.service.replay(o.orgId, ep.id, { after_sequence: 0 })).toEqual({ queued: 1 });
    const v = new Visitor(t);
    await v.signIn(o.email, o.password);
    const page = await v.submit(`/settings/webhooks/${ep.id}`, `/settings/webhooks/${ep.id}/replay`, { after_sequence: '0' });
    expect(page.statusCode).toBe(409);
    expect(page.body).toContain('A replay of this endpoint is still running (1 of its deliveries pending); replay again once it has finished');
    await t.webhooks.worker.drain();
    const again = await v.submit(`/settings/webhooks/${ep.id}`, `/settings/webhooks/${ep.id}/replay`, { after_sequence: '0' });
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain('1 event queued for delivery again.');
  });
});
