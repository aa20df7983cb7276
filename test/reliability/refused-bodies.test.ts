// Issue 31: a refusal the client can read. The service answers 413 (and 415, 401, 403) before it has
// read the body; a client that writes the whole body before reading (Node's fetch) used to get
// `TypeError: fetch failed` (EPIPE) in about half of the runs, because the server closed the connection
// while the client was still writing. Now the rest of the body is read and discarded, up to a bound.
//
// A real `serve` process (the race needs the client and the server in different processes), on the
// suite's engine, under a parallel request loop. Repeats: 2 MiB 100 times per client and route, 12 MiB
// 10 times, 60 MiB 2 times (the larger ones take longer and exercise the same path).
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openDataStore } from '../../src/lib/db/index.js';
import { accountsService } from '../../src/modules/accounts/accounts.service.js';
import { letTimePass, waitFor, useApp } from '../helpers.js';
import { parseRawAnswer } from '../support/raw-http.js';
import { createTenantInDb, killAllServers, startReadyServer, tempDir, type ServerProcess } from './support.js';

const MiB = 1_048_576;
const BODY_LIMIT = MiB;
// Lowered from 10 MiB so that every size of the issue (2, 12, 60 MiB) is over both limits.
const BATCH_LIMIT = 1536 * 1024;
const SINGLE = '/v2/tms-api/customers';
const BATCH = '/v2/tms-api/batch/customers';
const DETAIL_SINGLE = `Request body is larger than the limit of ${BODY_LIMIT} bytes (1 MiB) for this endpoint: send a smaller body, or have the operator raise the server setting BODY_LIMIT_BYTES`;
const DETAIL_BATCH = `Request body is larger than the limit of ${BATCH_LIMIT} bytes (1536 KiB) for batch endpoints: send fewer items per batch, or have the operator raise the server setting BATCH_BODY_LIMIT_BYTES`;
const CHUNK = Buffer.alloc(64 * 1024, 'x');

interface RawResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Body bytes handed to the socket, and whether the whole body was. */
  sent: number;
  sentAll: boolean;
  /** A socket error (EPIPE, ECONNRESET), if any. */
  error: string | null;
  ms: number;
}

/**
 * A client on a bare socket: writes the head, then the body in 64 KiB chunks as fast as the socket
 * takes them (`Content-Length`, or chunked when `chunked`), reading the answer meanwhile. Done when the
 * answer is whole and the body is sent, or the connection is gone; at most `timeoutMs`.
 */
function rawPost(
  port: number,
  o: { path: string; headers: Record<string, string>; bytes: number; chunked?: boolean; intervalMs?: number; timeoutMs?: number },
): Promise<RawResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let sent = 0;
    let sentAll = false;
    let error: string | null = null;
    let settled = false;
    const head = [
      `POST ${o.path} HTTP/1.1`,
      'Host: 127.0.0.1',
      o.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${o.bytes}`,
      ...Object.entries(o.headers).map(([k, v]) => `${k}: ${v}`),
      '',
      '',
    ].join('\r\n');
    const answer = () => parseRawAnswer(received);
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const a = answer();
      resolve({ status: a?.status ?? 0, headers: a?.headers ?? {}, body: a?.body ?? '', sent, sentAll, error, ms: Date.now() - started });
    };
    const maybeDone = () => {
      if (sentAll && answer()) finish();
    };
    const pump = () => {
      while (sent < o.bytes && !socket.destroyed) {
        const n = Math.min(CHUNK.length, o.bytes - sent);
        const piece = o.chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), CHUNK.subarray(0, n), Buffer.from('\r\n')]) : CHUNK.subarray(0, n);
        sent += n;
        const more = socket.write(piece);
        if (o.intervalMs) return void setTimeout(pump, o.intervalMs);
        if (!more) return void socket.once('drain', pump);
      }
      if (sent >= o.bytes && !sentAll) {
        socket.write(o.chunked ? '0\r\n\r\n' : '', () => {
          sentAll = true;
          maybeDone();
        });
      }
    };
    const timer = setTimeout(finish, o.timeoutMs ?? 30_000);
    socket.on('connect', () => {
      socket.write(head);
      pump();
    });
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      maybeDone();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    socket.on('close', finish);
  });
}

/** Resident memory of a process, in bytes (Linux). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** A request loop beside the tests (bounded: it stops when told, after 60 s, or after 20,000 requests). */
function backgroundLoad(port: number, key: string, loops = 2) {
  let stop = false;
  const statuses = new Map<number, number>();
  const until = Date.now() + 60_000;
  const loop = async () => {
    for (let i = 0; i < 10_000 && !stop && Date.now() < until; i++) {
      const res = await fetch(`http://127.0.0.1:${port}${SINGLE}?page_size=5`, { headers: { 'x-api-key': key } }).catch(() => null);
      await res?.arrayBuffer();
      statuses.set(res?.status ?? 0, (statuses.get(res?.status ?? 0) ?? 0) + 1);
    }
  };
  const running = Promise.all(Array.from({ length: loops }, loop));
  return {
    async stop() {
      stop = true;
      await running;
      return Object.fromEntries(statuses);
    },
  };
}

const bodies = new Map<number, Uint8Array<ArrayBuffer>>();
/** A body of `mib` MiB (made once per size; fetch sends the same bytes every time). */
function bodyOf(mib: number): Uint8Array<ArrayBuffer> {
  let b = bodies.get(mib);
  if (!b) bodies.set(mib, (b = new Uint8Array(new ArrayBuffer(mib * MiB)).fill(0x78)));
  return b;
}

describe('refused bodies are drained so the client reads the answer (issue 31)', () => {
  let server: ServerProcess;
  let key = '';
  let readOnlyKey = '';

  beforeAll(async () => {
    const pgUrl = inject('databaseUrl');
    const databaseUrl = pgUrl ?? join(tempDir('refused'), 'refused.db');
    const tenant = await createTenantInDb(databaseUrl, 'Refused bodies');
    key = tenant.key;
    const store = openDataStore(databaseUrl, { poolSize: 1 });
    try {
      readOnlyKey = (await accountsService(store).createKey(tenant.orgId, { name: 'ro', externalSystem: 'vitest', scopes: ['read:customers'] })).key;
    } finally {
      await store.close();
    }
    server = await startReadyServer({ databaseUrl, env: { BATCH_BODY_LIMIT_BYTES: String(BATCH_LIMIT) } });
  }, 60_000);

  afterAll(async () => {
    await killAllServers();
  });

  const json = { 'content-type': 'application/json' };

  it('413 with the D1 body for 2, 12 and 60 MiB, by fetch and by a raw socket (length and chunked), on a single-record and a batch route, under load', async () => {
    const load = backgroundLoad(server.port, key);
    const failures: string[] = [];
    let runs = 0;
    const started = Date.now();
    for (const [mib, repeats] of [
      [2, 100],
      [12, 10],
      [60, 2],
    ] as const) {
      for (const [path, detail] of [
        [SINGLE, DETAIL_SINGLE],
        [BATCH, DETAIL_BATCH],
      ] as const) {
        for (let i = 0; i < repeats; i++) {
          runs++;
          try {
            const res = await fetch(`http://127.0.0.1:${server.port}${path}`, { method: 'POST', headers: { ...json, 'x-api-key': key }, body: bodyOf(mib) });
            const body = await res.json();
            if (res.status !== 413 || body.detail !== detail || !res.headers.get('x-request-id'))
              failures.push(`fetch ${mib} MiB ${path}: ${res.status} ${JSON.stringify(body)}`);
          } catch (err) {
            failures.push(`fetch ${mib} MiB ${path}: ${String((err as Error).cause ?? err)}`);
          }
          for (const chunked of [false, true]) {
            runs++;
            const r = await rawPost(server.port, { path, headers: { ...json, 'x-api-key': key }, bytes: mib * MiB, chunked });
            const ok = r.status === 413 && JSON.parse(r.body || '{}').detail === detail && !!r.headers['x-request-id'] && r.sentAll && r.error === null;
            if (!ok)
              failures.push(`raw ${chunked ? 'chunked' : 'length'} ${mib} MiB ${path}: ${r.status} ${r.body} sent ${r.sent} all ${r.sentAll} error ${r.error}`);
          }
        }
      }
    }
    const loadStatuses = await load.stop();
    console.log(
      `refused bodies: ${runs} oversized requests in ${Date.now() - started} ms, ${failures.length} failed; parallel load ${JSON.stringify(loadStatuses)}`,
    );
    expect(failures).toEqual([]);
    expect(Object.keys(loadStatuses)).toEqual(['200']);
    expect(loadStatuses[200]).toBeGreaterThan(10);
  }, 120_000);

  it('401, 403 and 415 decided before the body is read reach a client sending 12 MiB', async () => {
    const load = backgroundLoad(server.port, key, 1);
    const cases = [
      {
        name: '401',
        headers: { ...json, 'x-api-key': 'lbk_wrong' },
        status: 401,
        body: { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } },
      },
      {
        name: '403',
        headers: { ...json, 'x-api-key': readOnlyKey },
        status: 403,
        body: { error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: write:customers' } },
      },
      {
        name: '415',
        headers: { 'content-type': 'text/plain', 'x-api-key': key },
        status: 415,
        body: { detail: "Unsupported Content-Type 'text/plain': send the body as JSON with 'Content-Type: application/json'" },
      },
    ];
    const failures: string[] = [];
    for (const c of cases) {
      for (let i = 0; i < 10; i++) {
        try {
          const res = await fetch(`http://127.0.0.1:${server.port}${SINGLE}`, { method: 'POST', headers: c.headers, body: bodyOf(12) });
          const body = await res.json();
          if (res.status !== c.status || JSON.stringify(body) !== JSON.stringify(c.body))
            failures.push(`fetch ${c.name}: ${res.status} ${JSON.stringify(body)}`);
        } catch (err) {
          failures.push(`fetch ${c.name}: ${String((err as Error).cause ?? err)}`);
        }
        const r = await rawPost(server.port, { path: SINGLE, headers: c.headers, bytes: 12 * MiB, chunked: i % 2 === 1 });
        if (r.status !== c.status || r.body !== JSON.stringify(c.body) || !r.sentAll || r.error)
          failures.push(`raw ${c.name}: ${r.status} ${r.body} ${r.error}`);
      }
    }
    await load.stop();
    expect(failures).toEqual([]);
  }, 60_000);

  it('a client sending past the bound (64 MiB) is cut off; the server reads it without keeping it (RSS + < 128 MiB of 270 MiB sent)', async () => {
    const pid = server.proc.pid!;
    await letTimePass(200); // the server settles before its baseline is read
    const before = rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
    // Four clients at once, each sending up to 256 MiB: two 413s, a 401 (Node alone would read that body
    // to its end, however long) and a 413 on the batch route.
    const cases = [
      { path: SINGLE, key, status: 413 },
      { path: BATCH, key, status: 413 },
      { path: SINGLE, key: 'lbk_wrong', status: 401 },
      { path: SINGLE, key, status: 413 },
    ];
    const results = await Promise.all(
      cases.map((c) => rawPost(server.port, { path: c.path, headers: { ...json, 'x-api-key': c.key }, bytes: 256 * MiB, timeoutMs: 30_000 })),
    );
    clearInterval(sampler);
    peak = Math.max(peak, rssOf(pid));
    console.log(
      `past the bound: sent ${results.map((r) => (r.sent / MiB).toFixed(1)).join(', ')} MiB before the cut (${results.map((r) => r.ms).join(', ')} ms); server RSS ${(before / MiB).toFixed(1)} → peak ${(peak / MiB).toFixed(1)} MiB`,
    );
    for (const [i, r] of results.entries()) {
      // The answer came first; the connection was cut once the drain passed 64 MiB.
      expect(r.status).toBe(cases[i]!.status);
      expect(r.sentAll).toBe(false);
      expect(r.sent).toBeGreaterThan(64 * MiB);
      expect(r.sent).toBeLessThan(128 * MiB);
    }
    // Kept bodies would be the 270 MB sent. What grows here is the garbage of reading them, collected
    // when the collector gets to it: under 1 MB in most runs, up to 31 MB seen on Node 20 and 67 MB on
    // Node 24 (its heap and socket buffers are collected later). The bound leaves room for that, not for
    // the bodies.
    expect(peak - before).toBeLessThan(128 * MiB);
    // The server still answers.
    const res = await fetch(`http://127.0.0.1:${server.port}${SINGLE}?page_size=1`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
  }, 60_000);
});

describe('the drain bounds (in process)', () => {
  let port = 0;
  let key = '';
  const t = useApp({ refusedBodyDrainMs: 500 });
  beforeAll(async () => {
    const org = await t.services.accounts.createOrganization(`Drain ${process.pid}`);
    key = (await t.services.accounts.createKey(org.id, { name: 't', externalSystem: 't', scopes: ['write:customers'] })).key;
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = Number(new URL(address).port);
  });

  it('a client trickling a refused body is cut off after the drain time (config.refusedBodyDrainMs), having read its 413', async () => {
    const r = await rawPost(port, {
      path: SINGLE,
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      bytes: 64 * MiB,
      intervalMs: 50,
      timeoutMs: 10_000,
    });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body).detail).toBe(DETAIL_SINGLE);
    expect(r.sentAll).toBe(false);
    // Cut about 500 ms after the answer (which came once 1 MiB had arrived, about a second in).
    expect(r.ms).toBeGreaterThan(500);
    expect(r.ms).toBeLessThan(5_000);
  });

  it('a body that ends within the bound leaves the connection usable (keep-alive)', async () => {
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    const body = Buffer.alloc(2 * MiB, 'x');
    socket.write(`POST ${SINGLE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: ${key}\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body);
    socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await waitFor(() => text.includes('{"status":"ok"}'), { timeout: 2000, what: 'the /healthz answer after the 413' }).catch(() => {}); // the expectations below say what came
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).not.toMatch(/connection: close/i);
    expect(text).toContain('HTTP/1.1 200 OK');
    expect(text).toContain('{"status":"ok"}');
  });

  it('a client that asked for Connection: close reads its 413, sends the rest, and the server closes after it (no reset)', async () => {
    // allowHalfOpen: the client keeps sending after the server has closed its side, as curl does.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    await new Promise((r) => socket.once('connect', r));
    let text = '';
    let error: string | null = null;
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    const closed = new Promise((r) => socket.once('close', r));
    socket.write(
      `POST ${SINGLE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: ${key}\r\nConnection: close\r\nContent-Length: ${12 * MiB}\r\n\r\n`,
    );
    for (let sent = 0; sent < 12 * MiB; sent += CHUNK.length) {
      if (!socket.write(CHUNK)) await new Promise((r) => socket.once('drain', r));
    }
    socket.end();
    const timedOut = await Promise.race([closed.then(() => false), letTimePass(10_000).then(() => true)]);
    socket.destroy();
    expect(timedOut).toBe(false);
    expect(error).toBeNull();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text, text.slice(0, 400)).toMatch(/connection: close/i);
    expect(text).toContain(DETAIL_SINGLE);
  });

  it('/metrics counts drains by outcome', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.body).toMatch(/lanebridge_refused_body_drains_total\{outcome="cut"\} [1-9]/);
    expect(res.body).toMatch(/lanebridge_refused_body_drains_total\{outcome="drained"\} [1-9]/);
  });
});
