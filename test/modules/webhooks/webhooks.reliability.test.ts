// Webhook deliveries survive a killed process (D12: "a process killed mid-delivery leaves the delivery to
// be retried, never lost"), and several instances on PostgreSQL never send one delivery twice at once.
import { spawn } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { openDataStore } from '../../../src/lib/db/index.js';
import { waitFor, json, newTenant, startApp, isPostgres, uid } from '../../helpers.js';
import { BIN, createTenantInDb, httpRequest, parse, startReadyServer, serverCleanups } from '../../reliability/support.js';
import { startReceiver } from './support.js';

const cleanups = serverCleanups();

describe('a delivering process killed mid-delivery', () => {
  it('SIGKILL while the receiver holds the request; after a restart (`bin/lanebridge worker`) the event is delivered', async () => {
    const databaseUrl = await cleanups.database('webhook_crash');
    const rx = await startReceiver();
    cleanups.push(() => rx.close());
    const env = { WEBHOOK_ALLOW_INSECURE: 'on', LANEBRIDGE_INTERNAL: JSON.stringify({ webhookLeaseMs: 2000 }) };
    const { key } = await createTenantInDb(databaseUrl, 'Webhook crash');
    const headers = { 'x-api-key': key };
    const server = await startReadyServer({ databaseUrl, env });
    const created = await httpRequest(server.port, { method: 'POST', path: '/v2/tms-api/webhook-endpoints', headers, body: { url: rx.url } });
    expect(created.status, created.text).toBe(201);
    const endpoint = parse(created);
    // The first attempt is held by the receiver (no answer) while the process is killed.
    rx.answer = (_r, i) => (i === 0 ? { status: 200, hang: true } : { status: 200 });
    const customer = await httpRequest(server.port, {
      method: 'POST',
      path: '/v2/tms-api/customers',
      headers,
      body: { external_reference_id: uid('C'), name: 'Killed Mid Delivery' },
    });
    expect(customer.status).toBe(201);
    await rx.waitFor(1);
    server.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');
    const eventId = rx.received[0]!.headers['webhook-id']!;

    // A process that only delivers takes it over once the dead process's lease has ended.
    const worker = spawn(BIN, ['worker'], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', WORKER_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    worker.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    worker.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => worker.on('exit', (code) => r(code)));
    cleanups.push(() => void worker.kill('SIGKILL'));
    await rx.waitFor(2, 20_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${out}`);
    });
    const again = rx.received[1]!;
    expect(again.headers['webhook-id']).toBe(eventId);
    expect(again.body).toBe(rx.received[0]!.body);
    expect(new Webhook(endpoint.secret).verify(again.body, again.headers)).toMatchObject({
      id: eventId,
      type: 'customer.created',
      data: { name: 'Killed Mid Delivery' },
    });
    // Recorded as delivered.
    const store = openDataStore(databaseUrl, { poolSize: 1 });
    try {
      // Up to 20 s, as the wait for the second receipt: on a slow machine the restarted worker records
      // the delivery seconds after the receiver has it.
      let row: Awaited<ReturnType<typeof delivery>>;
      const delivery = () => store.db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirst();
      await waitFor(async () => (row = await delivery())?.status === 'delivered', { timeout: 20_000, interval: 100 }).catch(() => {
        throw new Error(`not recorded: ${JSON.stringify(row)}`);
      });
      // The killed attempt left no outcome: 1 when the kill came first, 2 on a slow machine where the
      // dead process's own 1 s limit (lease 2 s − 1 s) expired and recorded a failure just before it.
      expect(row).toMatchObject({ status: 'delivered', response_status: 200, claim: null });
      expect([1, 2]).toContain(Number(row!.attempt));
    } finally {
      await store.close();
    }
    // The worker's probes and metrics (WORKER_PORT=0: the port it took is in its start line).
    // The worker logs in serve's format (Pino JSON lines: numeric level, epoch ms time, pid, hostname, msg).
    const started = out
      .split('\n')
      .filter((l) => l.includes('"Lanebridge webhook worker started"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)[0];
    expect(started, out).toMatchObject({
      level: 30,
      pid: expect.any(Number),
      hostname: expect.any(String),
      time: expect.any(Number),
      database: expect.any(String),
    });
    const address = started?.address as string | undefined;
    expect(address, out).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await fetch(`${address}/readyz`)).json()).toEqual({ status: 'ready', checks: { database: 'ok' } });
    const metrics = await (await fetch(`${address}/metrics`)).text();
    expect(metrics).toMatch(/^lanebridge_webhook_deliveries_total\{outcome="delivered"\} 1$/m);
    expect(metrics).toMatch(/^lanebridge_webhook_queue_depth 0$/m);
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});

describe('inside serve', () => {
  it('delivers right after the write commits (woken, not polled), and a write on another instance by the poll', async () => {
    const rx = await startReceiver();
    cleanups.push(() => rx.close());
    const one = await startApp({ webhookAllowInsecure: true });
    const two = await startApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
    cleanups.push(
      () => one.close(),
      () => two.close(),
    );
    const tenant = await newTenant(one);
    const ep = json(await tenant.post('/v2/tms-api/webhook-endpoints', { url: rx.url }));
    const t0 = Date.now();
    expect((await tenant.post('/v2/tms-api/customers', { external_reference_id: uid('C'), name: 'Woken' })).statusCode).toBe(201);
    await rx.waitFor(1, 5_000);
    // Well under the 1 s poll: the commit woke the worker.
    expect(rx.received[0]!.at - t0).toBeLessThan(900);
    expect(new Webhook(ep.secret).verify(rx.received[0]!.body, rx.received[0]!.headers)).toMatchObject({ type: 'customer.created', data: { name: 'Woken' } });
    if (isPostgres()) {
      // The same organization written through an instance that does not deliver: the other one's poll sends it.
      const res = await two.app.inject({
        method: 'POST',
        url: '/v2/tms-api/customers',
        headers: { ...tenant.headers, 'content-type': 'application/json' },
        payload: { external_reference_id: uid('C'), name: 'Polled' },
      });
      expect(res.statusCode).toBe(201);
      await rx.waitFor(2, 5_000);
      expect(JSON.parse(rx.received[1]!.body)).toMatchObject({ type: 'customer.created', data: { name: 'Polled' } });
    }
  }, 30_000);
});

describe.skipIf(!isPostgres())('several instances on PostgreSQL', () => {
  it('never send the same delivery attempt twice at once, and deliver every event once', async () => {
    const rx = await startReceiver();
    cleanups.push(() => rx.close());
    rx.answer = () => ({ status: 200, delayMs: 15 });
    const one = await startApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
    const two = await startApp({ webhookAllowInsecure: true }, { webhookDelivery: 'manual' });
    cleanups.push(
      () => one.close(),
      () => two.close(),
    );
    const tenant = await newTenant(one);
    const ep = json(await tenant.post('/v2/tms-api/webhook-endpoints', { url: rx.url }));
    const items = Array.from({ length: 80 }, (_, i) => ({ operation: 'create', customer: { external_reference_id: uid(`MI${i}`), name: `Instance ${i}` } }));
    const batch = await tenant.post('/v2/tms-api/batch/customers', { items });
    expect(batch.statusCode, batch.body).toBe(200);
    // Both instances work the same queue at once, several passes each.
    await Promise.all([one.webhooks.worker.drain(), two.webhooks.worker.drain(), one.webhooks.worker.drain(), two.webhooks.worker.drain()]);
    await one.webhooks.worker.drain();
    const ids = rx.received.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(80);
    expect(new Set(ids).size).toBe(80);
    expect(rx.maxConcurrentPerId()).toBe(1);
    const names = rx.received.map((r) => JSON.parse(r.body).data.name).sort();
    expect(names).toEqual(items.map((i) => i.customer.name).sort());
    const log = json(await tenant.get(`/v2/tms-api/webhook-endpoints/${ep.id}/deliveries?page_size=100`));
    expect(log.pagination.total).toBe(80);
    expect(log.items.every((d: { status: string; attempt: number }) => d.status === 'delivered' && d.attempt === 1)).toBe(true);
  }, 60_000);
});
