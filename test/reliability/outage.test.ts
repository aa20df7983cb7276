// Database outage (issue 9, point 2). Stopping the machine's PostgreSQL would break every other test
// running at the same time, so this test runs a throwaway PostgreSQL cluster of its own (initdb on a
// temporary directory, its own port and socket directory), points a real server process at it, and
// stops and restarts that cluster while requests flow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PgCluster,
  createTenantInDb,
  findPgBin,
  freePort,
  httpRequest,
  killAllServers,
  parse,
  startReadyServer,
  type HttpResult,
  type ServerProcess,
} from './support.js';
import { waitFor, letTimePass } from '../helpers.js';

const PG_BIN = findPgBin();

interface Outcome {
  at: number;
  label: string;
  status: number | string;
  ms: number;
  res?: HttpResult;
}

let cluster: PgCluster | null = null;
let server: ServerProcess;
let headers: Record<string, string>;

beforeAll(async () => {
  if (!PG_BIN) return;
  cluster = new PgCluster(PG_BIN, await freePort());
  cluster.init();
  cluster.start();
  const tenant = await createTenantInDb(cluster.url, 'Outage');
  headers = { 'x-api-key': tenant.key };
  server = await startReadyServer({ databaseUrl: cluster.url });
  const seeded = await httpRequest(server.port, {
    method: 'POST',
    path: '/v2/tms-api/customers',
    body: { external_reference_id: 'KEEP', name: 'Keep' },
    headers,
  });
  expect(seeded.status, seeded.text).toBe(201);
}, 120_000);

afterAll(async () => {
  if (server && (server.proc.exitCode !== null || server.proc.signalCode !== null)) console.error(`server output:\n${server.output()}`);
  await killAllServers();
  cluster?.destroy();
});

let seq = 0;
const REQUESTS: { label: string; make: () => { method: string; path: string; body?: unknown } }[] = [
  { label: 'get', make: () => ({ method: 'GET', path: '/v2/tms-api/customers/KEEP' }) },
  { label: 'list', make: () => ({ method: 'GET', path: '/v2/tms-api/customers?page_size=5' }) },
  {
    label: 'create',
    make: () => ({ method: 'POST', path: '/v2/tms-api/customers', body: { external_reference_id: `O-${process.pid}-${++seq}`, name: 'During outage' } }),
  },
  {
    label: 'batch',
    make: () => ({
      method: 'POST',
      path: '/v2/tms-api/batch/customers',
      body: { items: Array.from({ length: 10 }, (_, i) => ({ operation: 'upsert', external_reference_id: `OB-${i}`, customer: { name: `b${++seq}` } })) },
    }),
  },
];

/** Clients sending requests back to back (each with a 15 s client timeout) until `stop()` is called. */
function flow(port: number, clients: number) {
  const outcomes: Outcome[] = [];
  let running = true;
  const loop = async (c: number) => {
    let i = c;
    for (let n = 0; running && n < 5000; n++) {
      const spec = REQUESTS[i++ % REQUESTS.length]!;
      const req = spec.make();
      const started = Date.now();
      try {
        const res = await httpRequest(port, { ...req, headers, timeoutMs: 15_000 });
        outcomes.push({ at: started, label: spec.label, status: res.status, ms: res.ms, res });
      } catch (err) {
        outcomes.push({ at: started, label: spec.label, status: (err as { code?: string }).code ?? 'error', ms: Date.now() - started });
      }
      await letTimePass(25);
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, c) => loop(c)));
  return {
    outcomes,
    async stop() {
      running = false;
      await done;
    },
  };
}

function expectUnavailable(o: Outcome) {
  expect(o.status, `${o.label} during the outage: ${o.res?.text.slice(0, 200)}`).toBe(503);
  expect(parse(o.res!), o.label).toEqual({ detail: 'Service temporarily unavailable' });
  expect(Number(o.res!.headers['retry-after']), o.label).toBeGreaterThan(0);
  expect(o.res!.headers['x-request-id'], o.label).toBeTruthy();
}

describe.skipIf(!PG_BIN)('database outage on a PostgreSQL cluster of our own', () => {
  it('answers 503 with Retry-After within 10 s while the database is down, stays up, and recovers by itself', async () => {
    const traffic = flow(server.port, 4);
    await letTimePass(1500);
    const stoppedAt = Date.now();
    cluster!.stop('fast');
    // While down: readiness says so, liveness does not change.
    await letTimePass(500);
    const ready = await httpRequest(server.port, { path: '/readyz', timeoutMs: 15_000 });
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(10_000);
    expect(Number(ready.headers['retry-after'])).toBeGreaterThan(0);
    expect(parse(ready)).toMatchObject({ status: 'not_ready', checks: { database: 'unreachable' } });
    expect((await httpRequest(server.port, { path: '/healthz' })).status).toBe(200);
    await letTimePass(3500);
    const restartedAt = Date.now();
    cluster!.start();

    // Recovery without touching the server process: requests succeed again within 20 s.
    const recovered = async () =>
      (await httpRequest(server.port, { path: '/v2/tms-api/customers/KEEP', headers, timeoutMs: 15_000 })).status === 200 && Date.now();
    const recoveredAt = await waitFor(recovered, { timeout: 20_000, interval: 100 }).catch(() => 0);
    expect(recoveredAt, 'the service did not recover after PostgreSQL came back').toBeGreaterThan(0);
    await letTimePass(1500);
    await traffic.stop();
    expect(server.proc.exitCode).toBeNull();
    expect(server.proc.signalCode).toBeNull();

    const all = traffic.outcomes;
    // Nothing hung, nothing failed at the transport level, nothing was a 500.
    expect(Math.max(...all.map((o) => o.ms))).toBeLessThan(10_000);
    expect(
      all.filter((o) => typeof o.status !== 'number'),
      'transport failures',
    ).toEqual([]);
    expect(all.filter((o) => o.status === 500).map((o) => o.res?.text)).toEqual([]);
    const before = all.filter((o) => o.at + o.ms < stoppedAt);
    const during = all.filter((o) => o.at > stoppedAt + 200 && o.at + o.ms < restartedAt);
    const after = all.filter((o) => o.at > recoveredAt + 200);
    expect(before.length).toBeGreaterThan(10);
    expect(during.length).toBeGreaterThan(10);
    expect(after.length).toBeGreaterThan(10);
    for (const o of before) expect([200, 201], `${o.label} before: ${o.res?.text.slice(0, 200)}`).toContain(o.status);
    for (const o of during) expectUnavailable(o);
    for (const o of after) expect([200, 201], `${o.label} after: ${o.res?.text.slice(0, 200)}`).toContain(o.status);
    // Readiness is back too.
    expect((await httpRequest(server.port, { path: '/readyz' })).status).toBe(200);
    console.log('outage', {
      requests: all.length,
      before: before.length,
      during: during.length,
      after: after.length,
      maxMs: Math.max(...all.map((o) => o.ms)),
      recoveryMs: recoveredAt - restartedAt,
    });
  }, 120_000);
});
