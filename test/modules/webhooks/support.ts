// A real HTTP receiver on 127.0.0.1 for the webhook tests: records every request, answers as told.
import http from 'node:http';
import { waitFor } from '../../helpers.js';

export interface Received {
  headers: Record<string, string>;
  body: string;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number; hang?: boolean };

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** How the next requests are answered (default 200). */
  answer: (r: Received, index: number) => Answer;
  /** Requests being answered now (a hanging or slow answer). */
  inFlight: () => number;
  /** The most requests in flight at once for one webhook-id. */
  maxConcurrentPerId: () => number;
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const inFlightById = new Map<string, number>();
  let maxPerId = 0;
  let inFlight = 0;
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = {
    url: '',
    port: 0,
    received,
    answer: () => ({ status: 200 }),
    inFlight: () => inFlight,
    maxConcurrentPerId: () => maxPerId,
    async waitFor(n, timeoutMs = 10_000) {
      await waitFor(() => received.length >= n, { timeout: timeoutMs }).catch(() => {
        throw new Error(`receiver got ${received.length} requests, expected ${n}`);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const index = received.length;
      received.push(r);
      const id = r.headers['webhook-id'] ?? '';
      inFlightById.set(id, (inFlightById.get(id) ?? 0) + 1);
      maxPerId = Math.max(maxPerId, inFlightById.get(id)!);
      inFlight++;
      const a = receiver.answer(r, index);
      const done = () => {
        inFlight--;
        inFlightById.set(id, inFlightById.get(id)! - 1);
      };
      if (a.hang) {
        hanging.add(res);
        res.on('close', done);
        return;
      }
      setTimeout(() => {
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
        res.end('{"ok":true}');
        done();
      }, a.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  receiver.port = typeof addr === 'object' && addr ? addr.port : 0;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  return receiver;
}
