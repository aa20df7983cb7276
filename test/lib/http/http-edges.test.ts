// Issue 26, point 6 (the HTTP edge): HTTP-parser 400s in the D1 shape with an X-Request-Id,
// METRICS_TOKEN on `serve` and `worker`, and TRUST_PROXY for client addresses and Secure cookies.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig, parseTrustProxy } from '../../../src/config.js';
import { waitFor, json, startApp, type TestApp } from '../../helpers.js';
import { createTenantInDb, tempDir } from '../../reliability/support.js';

const apps: TestApp[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});
async function app(...args: Parameters<typeof startApp>): Promise<TestApp> {
  const t = await startApp(...args);
  apps.push(t);
  return t;
}

/** Sends raw bytes and returns everything the server answers until it closes (at most 5 s). */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    socket.on('error', () => undefined);
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

function parseResponse(text: string) {
  const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) as unknown };
}

describe('requests the HTTP parser refuses', () => {
  it('answer in the D1 detail shape with an X-Request-Id, and close', async () => {
    const t = await app();
    const port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
    const cases: [string, number, string][] = [
      ['GARBAGE\r\n\r\n', 400, 'Malformed HTTP request: the request line does not start with a known method'],
      [
        'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
        400,
        'Malformed HTTP request: a header name or value contains a character HTTP does not allow',
      ],
      [
        'POST /v2/tms-api/customers HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
        400,
        'Malformed HTTP request: the Content-Length header is not a number',
      ],
      [
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'Request headers are larger than the limit of 16384 bytes: send fewer or shorter headers',
      ],
    ];
    for (const [bytes, status, detail] of cases) {
      const res = parseResponse(await rawExchange(port, bytes));
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ detail });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
      expect(res.headers.connection).toBe('close');
    }
  });
});

describe('METRICS_TOKEN', () => {
  const token = 'metrics-token-0123456789abcdef';
  const unauthorized = { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing metrics token: send Authorization: Bearer <METRICS_TOKEN>' } };

  it('serve: /metrics wants the Bearer token (401 in the D1 shape otherwise); the probes stay open', async () => {
    const t = await app({ metricsToken: token });
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${token}`, `Bearer ${token}x`, token]) {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      expect(res.statusCode, authorization).toBe(401);
      expect(json(res)).toEqual(unauthorized);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.body).not.toContain('lanebridge_');
    }
    const ok = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('lanebridge_http_requests_total');
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('unset (the default), /metrics is open as before', async () => {
    const t = await app();
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });

  it('is at least 16 printable characters', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_TOKEN: 'has a space in it, long enough' })).toThrow(/METRICS_TOKEN/);
    expect(loadConfig({ METRICS_TOKEN: token }).metricsToken).toBe(token);
  });

  it('bin/lanebridge worker: the same on its metrics port', async () => {
    const databaseUrl = inject('databaseUrl') ?? join(tempDir('metrics-worker'), 'w.db');
    await createTenantInDb(databaseUrl, 'Metrics worker');
    const worker = spawn(join(process.cwd(), 'bin/lanebridge'), ['worker'], {
      // LOG_LEVEL info: the start line (with the address) is an info line, as serve's is.
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', WORKER_PORT: '0', HOST: '127.0.0.1', METRICS_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    worker.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    worker.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    try {
      const address = await waitFor(() => /"address":"(http:\/\/[^"]+)"/.exec(out)?.[1], { timeout: 30_000, interval: 100, what: "the worker's start line" });
      const denied = await fetch(`${address}/metrics`);
      expect(denied.status).toBe(401);
      expect(await denied.json()).toEqual(unauthorized);
      const wrong = await fetch(`${address}/metrics`, { headers: { authorization: 'Bearer not-the-token-at-all' } });
      expect(wrong.status).toBe(401);
      const ok = await fetch(`${address}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('lanebridge_webhook_deliveries_total');
      expect((await fetch(`${address}/healthz`)).status).toBe(200);
    } finally {
      worker.kill('SIGKILL');
    }
  }, 60_000);
});

describe('TRUST_PROXY', () => {
  it('takes off, on, a hop count, or addresses and CIDRs; anything else stops the process with a message naming it', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(parseTrustProxy('off')).toBe(false);
    expect(parseTrustProxy('on')).toBe(true);
    expect(parseTrustProxy('true')).toBe(true);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('0')).toBe(false);
    expect(parseTrustProxy('10.0.0.0/8, 192.168.1.7 ,loopback,fd00::/8')).toEqual(['10.0.0.0/8', '192.168.1.7', 'loopback', 'fd00::/8']);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow("TRUST_PROXY: '10.0.0.0/33' is not an address");
    expect(() => loadConfig({ TRUST_PROXY: 'proxy.internal' })).toThrow(ConfigError);
  });

  /** An app whose log lines are collected, and the client address of each `incoming request`. */
  async function loggedApp(trustProxy: ReturnType<typeof parseTrustProxy>) {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const t = await app({ trustProxy }, { logger: { level: 'info', stream } });
    // An organization exists, so /signin is the sign-in page (not the first run).
    await t.services.accounts.createOrganization(`Proxy ${process.pid}`);
    const addressOf = async (headers: Record<string, string>, remoteAddress = '127.0.0.1') => {
      const res = await t.app.inject({ method: 'GET', url: '/healthz', headers, remoteAddress });
      const line = lines.find((l) => l.reqId === res.headers['x-request-id'] && l.req);
      return (line?.req as { remoteAddress?: string } | undefined)?.remoteAddress;
    };
    /** Whether the sign-in page's cookie is Secure (DASHBOARD_COOKIE_SECURE=auto: when the request came over TLS). */
    const secureCookie = async (headers: Record<string, string>, remoteAddress = '127.0.0.1') => {
      const res = await t.app.inject({ method: 'GET', url: '/signin', headers, remoteAddress });
      const cookie = String(res.headers['set-cookie'] ?? '');
      expect(cookie).toMatch(/^lb_form=/);
      return /;\s*Secure/i.test(cookie);
    };
    return { t, addressOf, secureCookie };
  }

  const forwarded = { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' };

  it('off (the default): X-Forwarded-* is ignored: the peer is the client, cookies follow the connection', async () => {
    const { addressOf, secureCookie } = await loggedApp(false);
    expect(await addressOf(forwarded)).toBe('127.0.0.1');
    expect(await secureCookie(forwarded)).toBe(false);
  });

  it('a list: behind a trusted proxy the client is X-Forwarded-For and the cookies are Secure; another peer cannot claim either', async () => {
    const { addressOf, secureCookie } = await loggedApp(['127.0.0.1/32']);
    expect(await addressOf(forwarded)).toBe('203.0.113.7');
    expect(await secureCookie(forwarded)).toBe(true);
    expect(await secureCookie({})).toBe(false);
    // A chain: the address the trusted proxy saw is the client's, not what the client wrote before it.
    expect(await addressOf({ 'x-forwarded-for': '198.51.100.1, 203.0.113.7' })).toBe('203.0.113.7');
    // A peer that is not a trusted proxy: its X-Forwarded-* are its own words.
    expect(await addressOf(forwarded, '192.0.2.50')).toBe('192.0.2.50');
    expect(await secureCookie(forwarded, '192.0.2.50')).toBe(false);
  });

  it('a hop count: that many proxies in front, whoever the peer is', async () => {
    const { addressOf, secureCookie } = await loggedApp(2);
    expect(await addressOf({ 'x-forwarded-for': '198.51.100.1, 203.0.113.7, 10.0.0.2' })).toBe('203.0.113.7');
    expect(await secureCookie(forwarded)).toBe(true);
  });

  it('on: every peer is a proxy (the first address of X-Forwarded-For is the client)', async () => {
    const { addressOf } = await loggedApp(true);
    expect(await addressOf({ 'x-forwarded-for': '198.51.100.1, 203.0.113.7' })).toBe('198.51.100.1');
  });
});
