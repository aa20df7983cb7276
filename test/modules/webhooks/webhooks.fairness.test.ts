// Issue 26, item 2: in-flight slots per organization (and per endpoint) under the process-wide cap, so
// one organization's slow endpoints never hold every other organization's deliveries; a deleted or
// disabled endpoint frees its slot at once. The apps here run a background worker, which works every
// organization's rows: on PostgreSQL each gets a database of its own (the suite's is shared).
import { describe, expect, it } from 'vitest';
import { deliverySlots } from '../../../src/modules/webhooks/slots.js';
import { letTimePass, waitFor, isPostgres, json, newTenant, startAppOn, uid, type Tenant } from '../../helpers.js';
import { freshPgDatabase, pgAdminUrl, serverCleanups } from '../../reliability/support.js';
import { startReceiver } from './support.js';

const BASE = '/v2/tms-api/webhook-endpoints';
const cleanups = serverCleanups();

async function ownDatabase(name: string): Promise<string | null> {
  const admin = pgAdminUrl();
  if (!admin) return null;
  const db = await freshPgDatabase(admin, `${name}_${process.pid}`);
  cleanups.push(() => db.drop());
  return db.url;
}

/** waitFor that answers how long it waited. */
async function until(what: string, check: () => boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  await waitFor(check, { timeout: timeoutMs, interval: 10, what });
  return Date.now() - t0;
}

async function write(tenant: Tenant, name: string) {
  const res = await tenant.post('/v2/tms-api/customers', { external_reference_id: uid('C'), name });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).id as string;
}

describe('fair delivery: slots per organization under the process-wide cap', () => {
  it('64 endpoints of one organization that never answer leave another organization’s delivery within 2 s; deleting or disabling them frees their slots at once', async () => {
    const slow = await startReceiver();
    const fast = await startReceiver();
    cleanups.push(
      () => slow.close(),
      () => fast.close(),
    );
    slow.answer = () => ({ status: 200, hang: true });
    const databaseUrl = await ownDatabase('webhook_fairness');
    const t = await startAppOn(databaseUrl, { webhookAllowInsecure: true, webhookMaxEndpoints: 100 }, { webhookDelivery: 'background' });
    cleanups.push(() => t.close());
    const hog = await newTenant(t, undefined, { perMinute: 100_000 });
    const other = await newTenant(t);
    const hogEndpoints: string[] = [];
    for (let i = 0; i < 64; i++) hogEndpoints.push(json(await hog.post(BASE, { url: `${slow.url}/${i}` })).id);
    await other.post(BASE, { url: fast.url });

    // One write of the hog: 64 deliveries to receivers that hold every request without answering.
    await write(hog, 'Hog');
    await until('the hog’s attempts in flight', () => slow.inFlight() >= 16, 5_000);
    await letTimePass(300);
    // The hog holds its share (16 of the 64 slots), not the process.
    expect(slow.inFlight()).toBe(16);
    expect(t.webhooks.worker.inFlightByOrg().get(hog.orgId)).toBe(16);

    const t0 = Date.now();
    const theirs = await write(other, 'Other Organization');
    await fast.waitFor(1, 2_000);
    const latency = fast.received[0]!.at - t0;
    expect(JSON.parse(fast.received[0]!.body)).toMatchObject({ type: 'customer.created', data: { id: theirs, name: 'Other Organization' } });
    expect(latency).toBeLessThan(2_000);

    // Disabling half and deleting the rest: every slot is free (and every connection closed) at once,
    // not when the attempts' 10 s run out.
    for (const [i, id] of hogEndpoints.entries()) {
      const res = i % 2 === 0 ? await hog.put(`${BASE}/${id}`, { status: 'disabled' }) : await hog.del(`${BASE}/${id}`);
      expect(res.statusCode).toBe(i % 2 === 0 ? 200 : 204);
    }
    const freed = await until('slots freed', () => t.webhooks.worker.inFlight() === 0 && slow.inFlight() === 0, 1_000);
    console.log(`fairness: another organization delivered in ${latency} ms with the hog's 16 slots held; slots free ${freed} ms after the last delete`);
    expect(t.webhooks.worker.inFlightByOrg().size).toBe(0);
    const disabled = json(await hog.get(`${BASE}/${hogEndpoints[0]}/deliveries`)).items[0];
    expect(disabled).toMatchObject({ status: 'failed', error: 'Endpoint disabled' });
  }, 60_000);

  it.skipIf(!isPostgres())(
    'an endpoint deleted through another instance frees its slot at this one’s next poll',
    async () => {
      const slow = await startReceiver();
      cleanups.push(() => slow.close());
      slow.answer = () => ({ status: 200, hang: true });
      const databaseUrl = (await ownDatabase('webhook_fairness_two'))!;
      const delivering = await startAppOn(databaseUrl, { webhookAllowInsecure: true }, { webhookDelivery: 'background' });
      const other = await startAppOn(databaseUrl, { webhookAllowInsecure: true, webhookWorker: false });
      cleanups.push(
        () => delivering.close(),
        () => other.close(),
      );
      const tenant = await newTenant(delivering);
      const ep = json(await tenant.post(BASE, { url: slow.url }));
      await write(tenant, 'Held');
      await until('the attempt in flight', () => slow.inFlight() === 1, 5_000);
      const res = await other.app.inject({ method: 'DELETE', url: `${BASE}/${ep.id}`, headers: tenant.headers });
      expect(res.statusCode).toBe(204);
      // The poll runs every second.
      const freed = await until('slot freed', () => delivering.webhooks.worker.inFlight() === 0 && slow.inFlight() === 0, 2_500);
      expect(freed).toBeLessThan(2_500);
    },
    30_000,
  );
});

describe('slots (the scheduler’s bookkeeping)', () => {
  it('one chain per endpoint, at most `perOrg` per organization, at most `total` in all, oldest due first', () => {
    const slots = deliverySlots({ total: 4, perOrg: 2 });
    const due = [
      { id: 'd1', endpoint_id: 'a1', org_id: 'A' },
      { id: 'd2', endpoint_id: 'a1', org_id: 'A' },
      { id: 'd3', endpoint_id: 'a2', org_id: 'A' },
      { id: 'd4', endpoint_id: 'a3', org_id: 'A' },
      { id: 'd5', endpoint_id: 'b1', org_id: 'B' },
      { id: 'd6', endpoint_id: 'c1', org_id: 'C' },
      { id: 'd7', endpoint_id: 'c2', org_id: 'C' },
    ];
    const picks = slots.choose(due, 10);
    expect(picks).toEqual([
      { endpointId: 'a1', orgId: 'A', ids: ['d1', 'd2'] },
      { endpointId: 'a2', orgId: 'A', ids: ['d3'] },
      { endpointId: 'b1', orgId: 'B', ids: ['d5'] },
      { endpointId: 'c1', orgId: 'C', ids: ['d6'] },
    ]);
    const chains = picks.map((p) => slots.open(p.endpointId, p.orgId));
    expect(slots.room()).toBe(0);
    expect(slots.fullOrgs()).toEqual(['A']);
    expect(slots.choose(due, 10)).toEqual([]);
    // A chain closed frees its slot and its organization's share.
    slots.close(chains[0]!);
    expect(slots.fullOrgs()).toEqual([]);
    expect(slots.choose(due, 1)).toEqual([{ endpointId: 'a1', orgId: 'A', ids: ['d1'] }]);
    // Cutting a chain aborts its attempt in flight.
    const control = chains[1]!.nextAttempt();
    expect(slots.cut('a2', 'endpoint_removed')).toBe(true);
    expect(control.signal.aborted).toBe(true);
    expect(chains[1]!.nextAttempt().signal.aborted).toBe(true);
  });
});
