// Issue 45 (docs/api.md, "Slow requests"): a request body must arrive within REQUEST_TIMEOUT_SECONDS
// (here 1 s); an import part may take 10 minutes. A client on a bare socket sends its headers and part
// of its body, then stalls: the server answers 408 in the D1 detail shape and closes the connection.
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useApp, newTenant, type Tenant } from '../../helpers.js';
import { parseRawAnswer, type RawAnswer } from '../../support/raw-http.js';

type Answer = RawAnswer;

/** A client on a bare socket: `send` writes bytes, `answer()` is the parsed answer once whole, `closed` once the server closed. */
function rawClient(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  let closed = false;
  socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  socket.on('error', () => (closed = true));
  socket.on('close', () => (closed = true));
  return {
    send: (text: string) => socket.write(text),
    closed: () => closed,
    destroy: () => socket.destroy(),
    answer: (): Answer | null => parseRawAnswer(received),
  };
}

function head(method: string, path: string, headers: Record<string, string>): string {
  return [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
}

const SLOW_DETAIL = "Request timed out: the body did not arrive within 1 second of the request's headers: send it faster, or split it into smaller requests";

describe('request bodies arrive within REQUEST_TIMEOUT_SECONDS', () => {
  let port: number;
  let a: Tenant;

  const t = useApp({ requestTimeoutMs: 1000, refusedBodyDrainMs: 200 });
  beforeAll(async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
    a = await newTenant(t);
  });

  it("Node's own limit is the longest a route allows (an import part's 10 minutes), not the 1 s default", () => {
    expect(t.app.server.requestTimeout).toBe(600_000);
  });

  it('a body that stalls is answered 408 (D1 detail) and its connection closed; nothing is written', async () => {
    const body = JSON.stringify({ external_reference_id: 'SLOW-1', name: 'Slow Customer' });
    const client = rawClient(port);
    client.send(head('POST', '/v2/tms-api/customers', { 'x-api-key': a.key, 'content-type': 'application/json', 'content-length': String(body.length) }));
    client.send(body.slice(0, 20));
    const answer = await vi.waitFor(() => client.answer() ?? Promise.reject(new Error('no answer yet')), { timeout: 5000, interval: 50 });
    expect(answer.status).toBe(408);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.headers['connection']).toBe('close');
    expect(answer.headers['x-request-id']).toBeTruthy();
    expect(JSON.parse(answer.body)).toEqual({ detail: SLOW_DETAIL });
    // The server lets go of the socket (after at most the refused-body drain, 200 ms here).
    await vi.waitFor(() => expect(client.closed()).toBe(true), { timeout: 3000, interval: 50 });
    expect((await a.get('/v2/tms-api/customers/SLOW-1')).statusCode).toBe(404);
  });

  it('a chunked body that stalls is cut the same way', async () => {
    const client = rawClient(port);
    client.send(head('PUT', '/v2/tms-api/customers/SLOW-2', { 'x-api-key': a.key, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }));
    client.send('5\r\n{"nam\r\n');
    const answer = await vi.waitFor(() => client.answer() ?? Promise.reject(new Error('no answer yet')), { timeout: 5000, interval: 50 });
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({ detail: SLOW_DETAIL });
    await vi.waitFor(() => expect(client.closed()).toBe(true), { timeout: 3000, interval: 50 });
  });

  it('an import part stalled as long is not cut: it has 10 minutes', async () => {
    const created = await a.post('/v2/tms-api/imports', { resource: 'customers', format: 'ndjson' });
    expect(created.statusCode).toBe(201);
    const id = created.json().id as string;
    const part = '{"external_reference_id":"PART-1","name":"Part One"}\n';
    const upload = rawClient(port);
    upload.send(
      head('PUT', `/v2/tms-api/imports/${id}/parts/1`, { 'x-api-key': a.key, 'content-type': 'application/x-ndjson', 'content-length': String(part.length) }),
    );
    upload.send(part.slice(0, 10));
    // A JSON body started at the same time is cut at its 1 s: the upload has waited as long by then.
    const slow = rawClient(port);
    slow.send(head('POST', '/v2/tms-api/customers', { 'x-api-key': a.key, 'content-type': 'application/json', 'content-length': '50' }));
    slow.send('{');
    await vi.waitFor(() => expect(slow.answer()?.status).toBe(408), { timeout: 5000, interval: 50 });
    expect(upload.answer()).toBeNull();
    upload.send(part.slice(10));
    const answer = await vi.waitFor(() => upload.answer() ?? Promise.reject(new Error('no answer yet')), { timeout: 5000, interval: 50 });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ id, part: 1, bytes: part.length });
    upload.destroy();
    slow.destroy();
  });
});
