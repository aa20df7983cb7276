// Issue 26, item 1: every attempt ends by its deadline whatever the receiver does, and at most 64 KiB of
// an answer is read, also while the collector runs (on Node 20 a collection took AbortSignal.any's
// timeout away). Hostile receivers on 127.0.0.1 here; the deliverer in a child process with --expose-gc
// (test/support/webhook-attempt-probe.ts), so its memory is measured alone and gc() can be forced.
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgres } from '../../helpers.js';

/** What a receiver saw of the attempt: when the request arrived and when its connection closed. */
interface Seen {
  arrivedAt: number;
  closedAt: number | null;
  bytesSent: number;
}

interface Hostile {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

const GIB = 1024 ** 3;
// Every receiver stops by itself after this long, whatever the deliverer does (a bounded test).
const RECEIVER_LIFETIME_MS = 30_000;

async function hostile(behave: (res: http.ServerResponse, seen: Seen, stopped: () => boolean) => void): Promise<Hostile> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const s: Seen = { arrivedAt: Date.now(), closedAt: null, bytesSent: 0 };
      seen.push(s);
      let closed = false;
      res.on('close', () => {
        closed = true;
        s.closedAt = Date.now();
      });
      const lifetime = setTimeout(() => res.destroy(), RECEIVER_LIFETIME_MS);
      res.on('close', () => clearTimeout(lifetime));
      behave(res, s, () => closed);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`,
    seen,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const receivers: Record<string, Hostile> = {};
let warm: Hostile;

beforeAll(async () => {
  warm = await hostile((res) => res.writeHead(204).end());
  // Never answers: no status line at all.
  receivers.silent = await hostile(() => undefined);
  // Answers 200 at once, then a byte of body every second: the body never ends.
  receivers.drip = await hostile((res, seen, stopped) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('x');
    const timer = setInterval(() => {
      if (stopped()) return clearInterval(timer);
      res.write('y');
      seen.bytesSent++;
    }, 1000);
  });
  // Answers 500 with a 1 GiB body, made from one 64 KiB buffer written again and again (never 1 GiB in memory).
  receivers.huge = await hostile((res, seen, stopped) => {
    res.writeHead(500, { 'content-type': 'application/octet-stream', 'content-length': String(GIB) });
    const chunk = Buffer.alloc(64 * 1024, 'z');
    const pump = () => {
      while (!stopped() && seen.bytesSent < GIB) {
        seen.bytesSent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!stopped()) res.end();
    };
    pump();
  });
});

afterAll(async () => {
  for (const r of [warm, ...Object.values(receivers)]) await r?.close();
});

interface ProbeResult {
  drainMs: number;
  rssBefore: number;
  rssMax: number;
  rssAfter: number;
  log: Record<string, { status: string; attempt: number; response_status: number | null; duration_ms: number | null; error: string | null }>;
}

function runProbe(args: unknown): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'test/support/webhook-attempt-probe.ts', JSON.stringify(args)], {
      env: { ...process.env, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    // The probe itself is bounded: killed if it has not finished in 90 s.
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`probe exited ${code ?? signal}\n${out}\n${err}`));
      try {
        resolve(JSON.parse(line) as ProbeResult);
      } catch {
        reject(new Error(`probe said: ${out}\n${err}`));
      }
    });
  });
}

const MB = 1024 * 1024;

// The child uses a SQLite file of its own whatever the suite's engine: no storage of the suite's is
// involved, so the PostgreSQL run leaves it out.
describe.skipIf(isPostgres())('an attempt ends by its deadline, whatever the receiver does, with the collector running', () => {
  it('silent, drip-feeding and 1 GiB receivers: each attempt ends within 11 s, deliverer RSS grows < 50 MB, connections closed', async () => {
    const result = await runProbe({ warmUrl: warm.url, urls: Object.fromEntries(Object.entries(receivers).map(([k, r]) => [k, r.url])) });
    const growth = (result.rssMax - result.rssBefore) / MB;
    console.log(
      `attempt limits: drain ${result.drainMs} ms; RSS ${(result.rssBefore / MB).toFixed(1)} MB → max ${(result.rssMax / MB).toFixed(1)} MB (+${growth.toFixed(1)}) → ${(result.rssAfter / MB).toFixed(1)} MB after gc; ` +
        Object.entries(result.log)
          .map(([k, d]) => `${k} ${d.duration_ms} ms`)
          .join(', ') +
        `; ${(receivers.huge!.seen[0]?.bytesSent ?? 0) / MB} MiB of the 1 GiB written before the connection closed`,
    );
    // The three ran side by side: all ended by the 10 s deadline (plus the bookkeeping).
    expect(result.drainMs).toBeLessThan(11_000);
    expect(growth).toBeLessThan(50);

    expect(result.log.silent).toMatchObject({ status: 'pending', attempt: 1, response_status: null, error: 'Timed out after 10 s' });
    // A 200 arrived: delivered, though its body never ended (cut at the deadline).
    expect(result.log.drip).toMatchObject({ status: 'delivered', attempt: 1, response_status: 200, error: null });
    expect(result.log.huge).toMatchObject({
      status: 'pending',
      attempt: 1,
      response_status: 500,
      error: "HTTP 500 (The answer's body is longer than 64 KiB: the rest was not read; connection closed)",
    });
    for (const name of ['silent', 'drip'] as const) {
      const d = result.log[name]!;
      expect(d.duration_ms, name).toBeGreaterThanOrEqual(9_900);
      expect(d.duration_ms, name).toBeLessThan(11_000);
    }
    expect(result.log.huge!.duration_ms).toBeLessThan(2_000);
    // Each receiver saw its connection closed by the deliverer within 11 s of the request.
    for (const [name, r] of Object.entries(receivers)) {
      expect(r.seen, name).toHaveLength(1);
      const s = r.seen[0]!;
      expect(s.closedAt, name).not.toBeNull();
      expect(s.closedAt! - s.arrivedAt, name).toBeLessThan(11_000);
    }
    // At most a few MiB left the receiver before the connection closed (socket buffers), far from 1 GiB.
    expect(receivers.huge!.seen[0]!.bytesSent).toBeLessThan(32 * MB);
  }, 120_000);
});
