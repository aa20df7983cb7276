// Graceful shutdown (issue 9, point 3): SIGTERM while a large batch is in flight. The batch completes
// and is answered, new connections are refused, the database is closed and the process exits 0 within
// 10 seconds.
import { existsSync, rmSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDataStore } from '../../src/lib/db/index.js';
import { letTimePass, waitFor, startApp } from '../helpers.js';
import { createTenant, createTenantInDb, freshPgDatabase, httpRequest, parse, pgAdminUrl, startReadyServer, tempDir, serverCleanups } from './support.js';

const cleanups = serverCleanups();

const ZIPS = [
  ['75201', 'TX'],
  ['77002', 'TX'],
  ['60601', 'IL'],
  ['30303', 'GA'],
  ['90012', 'CA'],
  ['80202', 'CO'],
  ['98101', 'WA'],
  ['10001', 'NY'],
] as const;

/** 100 loads with 25 stops and 10 rates each: about a second or more of work on either engine. */
function bigBatch(tag: string) {
  return {
    items: Array.from({ length: 100 }, (_, i) => ({
      operation: 'create',
      external_reference_id: `${tag}-${i}`,
      load: {
        equipment_type: 'DRY_VAN',
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST',
        status: 'DELIVERED',
        carrier_external_reference_id: 'CAR',
        stops: Array.from({ length: 25 }, (_, s) => ({
          stop_type: s === 0 ? 'Pickup' : 'Delivery',
          location_external_reference_id: `LOC-${s % ZIPS.length}`,
          early_arrival: new Date(Date.UTC(2026, 3, 1, s)).toISOString(),
          late_arrival: new Date(Date.UTC(2026, 3, 1, s, 30)).toISOString(),
        })),
        financial_rates: Array.from({ length: 10 }, (_, r) => ({ rate_entity: r % 2 ? 'CUSTOMER' : 'CARRIER', amount: 100 + r })),
      },
    })),
  };
}

async function shutdownScenario(databaseUrl: string, dialect: 'sqlite' | 'postgres') {
  const tenant = await createTenantInDb(databaseUrl, `Shutdown ${dialect}`);
  const headers = { 'x-api-key': tenant.key };
  // info: the shutdown messages are part of what is checked.
  const server = await startReadyServer({ databaseUrl, logLevel: 'info' });
  const setup = async (path: string, body: unknown) => {
    const r = await httpRequest(server.port, { method: 'POST', path, body, headers });
    expect(r.status, r.text).toBeLessThan(300);
  };
  await setup('/v2/tms-api/customers', { external_reference_id: 'CUST', name: 'Cust' });
  await setup('/v2/tms-api/carriers', { external_reference_id: 'CAR', name: 'Car' });
  await setup('/v2/tms-api/batch/locations', {
    items: ZIPS.map(([zip, state], i) => ({ operation: 'create', location: { external_reference_id: `LOC-${i}`, name: `L${i}`, postal_code: zip, state } })),
  });

  // A keep-alive connection, as integrations use; one request already served on it.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  expect((await httpRequest(server.port, { path: '/v2/tms-api/customers/CUST', headers, agent })).status).toBe(200);
  // An idle keep-alive connection of another client must not hold the shutdown up either.
  const idleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  expect((await httpRequest(server.port, { path: '/healthz', agent: idleAgent })).status).toBe(200);

  let sentAt = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const inFlight = httpRequest(server.port, {
    method: 'POST',
    path: '/v2/tms-api/batch/loads',
    body: bigBatch('BIG'),
    headers,
    agent,
    timeoutMs: 60_000,
    onSent: () => (sentAt = Date.now()),
    holdLastByte: held,
  });
  // SIGTERM while the batch is in the server: it has arrived (Fastify logs it as it starts) and waits for
  // its body's last byte, sent once the server has taken the signal. A fixed wait after sending raced
  // the batch: a signal that comes during its synchronous stretches is taken after it, and on an idle
  // machine on Node 24 the batch was answered before the signal 2 runs in 3.
  const arrived = /"method":"POST","url":"\/v2\/tms-api\/batch\/loads"/;
  await waitFor(() => arrived.test(server.output()), { timeout: 10_000, interval: 2 }).catch(() => {});
  expect(server.output()).toMatch(arrived);
  const termAt = Date.now();
  server.kill('SIGTERM');
  await waitFor(() => server.output().includes('shutting down'), { timeout: 10_000, interval: 2 }).catch(() => {});
  release();

  // New connections are refused from the moment the listener is closed.
  // The listener closes just after the signal is taken: nothing shows it from outside but the refusal checked here.
  await letTimePass(200);
  const refused = await httpRequest(server.port, { path: '/healthz', timeoutMs: 5000 }).then(
    (r) => `answered ${r.status}`,
    (err: { code?: string }) => err.code,
  );
  const answer = await inFlight;
  const answeredAt = Date.now();
  const exit = await server.exited;
  agent.destroy();
  idleAgent.destroy();

  expect(refused).toBe('ECONNREFUSED');
  expect(answer.status, answer.text.slice(0, 300)).toBe(200);
  // Told to close its keep-alive connection, so that the client does not reuse a socket being closed.
  expect(answer.headers.connection).toBe('close');
  const result = parse(answer);
  expect(result).toMatchObject({ success_count: 100, error_count: 0 });
  // The batch was really in flight when the signal came (the answer says to close the connection).
  expect(answeredAt).toBeGreaterThan(termAt);
  expect(exit.code).toBe(0);
  expect(exit.signal).toBeNull();
  expect(exit.at - termAt).toBeLessThan(10_000);
  const out = server.output();
  expect(out).toContain('shutting down');
  expect(out).toContain('database closed');
  expect(out).not.toMatch(/"level":(50|60)/);

  // Everything the batch answered is in the database, whole.
  const store = openDataStore(databaseUrl, { poolSize: 1 });
  try {
    const rows = await store.db
      .selectFrom('loads')
      .select((eb) => [
        'loads.external_reference_id',
        eb.selectFrom('load_stops').whereRef('load_stops.load_id', '=', 'loads.id').select(eb.fn.countAll<number>().as('n')).as('stops'),
        eb.selectFrom('load_rates').whereRef('load_rates.load_id', '=', 'loads.id').select(eb.fn.countAll<number>().as('n')).as('rates'),
      ])
      .where('loads.org_id', '=', tenant.orgId)
      .execute();
    expect(rows).toHaveLength(100);
    for (const r of rows) expect([Number(r.stops), Number(r.rates)], r.external_reference_id).toEqual([25, 10]);
  } finally {
    await store.close();
  }
  return { batchMs: answeredAt - sentAt, answeredAfterTermMs: answeredAt - termAt, exitAfterTermMs: exit.at - termAt };
}

describe('graceful shutdown on SIGTERM', () => {
  it('SQLite: finishes the batch in flight, refuses new connections, closes the database, exits 0 within 10 s', async () => {
    const dir = tempDir('shutdown');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'shutdown.db');
    const figures = await shutdownScenario(file, 'sqlite');
    // The last connection to close checkpoints and removes the WAL: the database was closed, not abandoned.
    expect(existsSync(`${file}-wal`)).toBe(false);
    console.log('shutdown sqlite', figures);
  }, 120_000);

  const admin = pgAdminUrl();
  it.skipIf(!admin)(
    'PostgreSQL: finishes the batch in flight, closes its connections, exits 0 within 10 s',
    async () => {
      const db = await freshPgDatabase(admin!, `lanebridge_rel_shutdown_${process.pid}`);
      cleanups.push(() => db.drop());
      const figures = await shutdownScenario(`${db.url}?application_name=lanebridge_shutdown_${process.pid}`, 'postgres');
      console.log('shutdown postgres', figures);
    },
    120_000,
  );
});

describe('draining', () => {
  it('app.close() during a request on a keep-alive connection: the request is answered with Connection: close, the close does not wait for the keep-alive timeout, and a later request on that connection is never served normally', async () => {
    const t = await startApp();
    const tenant = await createTenant(t.store, 'Drain');
    const h = { 'x-api-key': tenant.key };
    let closed = false;
    try {
      for (const [url, payload] of [
        ['/v2/tms-api/customers', { external_reference_id: 'CUST', name: 'C' }],
        ['/v2/tms-api/carriers', { external_reference_id: 'CAR', name: 'C' }],
        [
          '/v2/tms-api/batch/locations',
          {
            items: ZIPS.map(([zip, state], i) => ({
              operation: 'create',
              location: { external_reference_id: `LOC-${i}`, name: `L${i}`, postal_code: zip, state },
            })),
          },
        ],
      ] as const) {
        const r = await t.app.inject({ method: 'POST', url, headers: h, payload });
        expect(r.statusCode, r.body).toBeLessThan(300);
      }
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (t.app.server.address() as { port: number }).port;
      const batch = JSON.stringify(bigBatch('DRAIN'));
      const socket = connect(port, '127.0.0.1');
      let raw = '';
      socket.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      socket.on('error', () => {});
      const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      // Close once the batch request is in the server (a SQLite batch commits once at its end, so its
      // progress cannot be watched in the database).
      const arrived = new Promise<void>((resolve) => t.app.server.once('request', () => resolve()));
      socket.write(
        `POST /v2/tms-api/batch/loads HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nX-API-Key: ${tenant.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(batch)}\r\n\r\n${batch}`,
      );
      await Promise.race([arrived, letTimePass(20_000)]);
      const closeAt = Date.now();
      const closing = t.app.close().then(() => (closed = true));
      // Another request on the same connection, sent while the app is closing.
      socket.write(`GET /v2/tms-api/customers/CUST HTTP/1.1\r\nHost: x\r\nX-API-Key: ${tenant.key}\r\n\r\n`);
      await Promise.race([ended, letTimePass(15_000)]);
      await Promise.race([closing, letTimePass(15_000)]);
      expect(closed, 'app.close() still waiting').toBe(true);
      expect(Date.now() - closeAt).toBeLessThan(10_000);
      const responses = raw.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(responses[0]).toMatch(/^HTTP\/1\.1 200 /);
      expect(responses[0]).toMatch(/\r\nconnection: close\r\n/i);
      expect(JSON.parse(responses[0]!.split('\r\n\r\n')[1]!)).toMatchObject({ success_count: 100, error_count: 0 });
      // The second request is not read (the connection closed after the first answer), or refused in D1 form.
      expect(responses.length).toBeLessThanOrEqual(2);
      if (responses[1]) {
        expect(responses[1]).toMatch(/^HTTP\/1\.1 503 /);
        expect(responses[1]).toMatch(/\r\nretry-after: \d+\r\n/i);
        expect(JSON.parse(responses[1].split('\r\n\r\n')[1]!)).toEqual({ detail: 'Service temporarily unavailable' });
      }
    } finally {
      if (!closed) await t.app.close().catch(() => {});
      await t.store.close();
    }
  }, 60_000);
});
