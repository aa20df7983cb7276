/**
 * Shared mode under stress and failure: counters in Redis hold across instances under concurrency; a
 * Redis that is down, goes away, hangs or comes back never fails a request, is reported in /readyz and
 * /metrics, is logged once per outage, and is used again as soon as it answers.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import type { Clock } from '../../../src/lib/clock.js';
import { openDataStore } from '../../../src/lib/db/index.js';
import { createRateLimiter } from '../../../src/lib/http/rate-limit.js';
import { cleanRedis, freePort } from '../../fixtures.js';
import { letTimePass, waitFor, json, newTenant, startApp, type TestApp } from '../../helpers.js';

const run = promisify(execFile);
const REDIS_URL = process.env.LANEBRIDGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `lanebridge-test:${process.pid}:${Date.now()}:`;
const CUSTOMERS = '/v2/tms-api/customers';
const NOW = '2030-03-10T08:00:15.000Z';
const fixedClock: Clock = { now: () => new Date(NOW) };
const minuteIndex = Math.floor(Date.parse(NOW) / 60_000);

/** Captures the app's log lines (pino JSON) so tests can count warnings. */
function logCapture() {
  const lines: { level: number; msg: string }[] = [];
  return {
    lines,
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    about: (text: string) => lines.filter((l) => l.msg.includes(text)),
  };
}

afterAll(() => cleanRedis(REDIS_URL, PREFIX));

describe('shared counters under concurrency', () => {
  it('never lets more than the limit through when many requests hit several limiters at once', async () => {
    const log = { warn: () => {}, info: () => {} };
    const limiters = Array.from({ length: 4 }, () =>
      // A long timeout: this is about atomicity, on a machine busy with the rest of the suite.
      createRateLimiter({ enabled: true, redisUrl: REDIS_URL, keyPrefix: `${PREFIX}direct:`, clock: fixedClock, log, commandTimeoutMs: 5000 }),
    );
    try {
      await Promise.all(limiters.map((l) => l.ready(2000)));
      const calls = Array.from({ length: 2000 }, (_, i) => limiters[i % 4]!.consume('key_atomic', 100, 150));
      const results = await Promise.all(calls);
      expect(results.filter((r) => r.allowed)).toHaveLength(100);
      // Each accepted request saw a distinct count: remaining 99 down to 0, once each.
      const remaining = results
        .filter((r) => r.allowed)
        .map((r) => r.remaining)
        .sort((x, y) => x - y);
      expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(limiters.every((l) => l.status().fallbacks === 0)).toBe(true);
      // The day counter moved with the minute one, and refusals were not counted.
      const redis = new Redis(REDIS_URL);
      try {
        const day = Math.floor(Date.parse(NOW) / 86_400_000);
        expect(await redis.get(`${PREFIX}direct:{key_atomic}:d:${day}`)).toBe('100');
        expect(await redis.get(`${PREFIX}direct:{key_atomic}:m:${minuteIndex}`)).toBe('100');
        const ttl = await redis.ttl(`${PREFIX}direct:{key_atomic}:m:${minuteIndex}`);
        expect(ttl).toBeGreaterThan(60);
        expect(ttl).toBeLessThanOrEqual(120);
      } finally {
        redis.disconnect();
      }
    } finally {
      await Promise.all(limiters.map((l) => l.close()));
    }
  });

  it('shares one budget between two app instances: exactly the limit succeeds across both', async () => {
    const config = { redisUrl: REDIS_URL, rateLimitKeyPrefix: `${PREFIX}apps:` };
    const rateLimit = { commandTimeoutMs: 5000 };
    const one = await startApp(config, { clock: fixedClock, rateLimit });
    const store = openDataStore(one.config.databaseUrl);
    const two = await buildApp({ config: one.config, store, clock: fixedClock, logger: false, rateLimit });
    try {
      const a = await newTenant(one, undefined, { perMinute: 40 });
      const requests = Array.from({ length: 240 }, (_, i) => (i % 2 === 0 ? one.app : two.app).inject({ method: 'GET', url: CUSTOMERS, headers: a.headers }));
      const codes = (await Promise.all(requests)).map((r) => r.statusCode);
      expect(codes.filter((c) => c === 200)).toHaveLength(40);
      expect(codes.filter((c) => c === 429)).toHaveLength(200);
      expect(one.rateLimiter.status().fallbacks + two.rateLimiter.status().fallbacks).toBe(0);
    } finally {
      await two.app.close();
      await store.close();
      await one.close();
    }
  });
});

describe('Redis unreachable from the start', () => {
  let t: TestApp;
  const logs = logCapture();

  beforeAll(async () => {
    const port = await freePort();
    t = await startApp({ redisUrl: `redis://127.0.0.1:${port}`, rateLimitKeyPrefix: `${PREFIX}dead:` }, { logger: logs.logger });
  });
  afterAll(async () => t.close());

  it('keeps answering with per-instance limits, and says so in /readyz, /metrics and one warning', async () => {
    const a = await newTenant(t, undefined, { perMinute: 30 });
    for (let i = 0; i < 30; i++) {
      const res = await a.get(CUSTOMERS);
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(29 - i));
    }
    // The limit still holds, counted in this process.
    const limited = await a.get(CUSTOMERS);
    expect(limited.statusCode).toBe(429);
    expect(json(limited).error.code).toBe('RATE_LIMITED');

    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(json(ready)).toEqual({
      status: 'ready',
      checks: { database: 'ok', rate_limits: 'in_process_fallback', redis: 'unreachable' },
    });
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^lanebridge_rate_limit_redis_up 0$/m);
    const fallbacks = Number(/^lanebridge_rate_limit_fallbacks_total (\d+)$/m.exec(metrics)?.[1]);
    expect(fallbacks).toBe(31);

    // Reconnection attempts go on in the background, without a warning each.
    await letTimePass(1500);
    await a.get(CUSTOMERS);
    const warnings = logs.about('Redis unreachable');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe(40);
  });
});

describe('Redis going away and coming back', () => {
  let dir: string;
  let port: number;
  let pidFile: string;

  async function startRedis(extra: string[] = []) {
    await run('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile,
      '--dir',
      dir,
      '--enable-debug-command',
      'local',
      ...extra,
    ]);
    await waitFor(
      async () => {
        try {
          return (await run('redis-cli', ['-p', String(port), 'ping'])).stdout.trim() === 'PONG';
        } catch {
          return false;
        }
      },
      { what: 'redis to start', interval: 50 },
    );
  }

  async function stopRedis() {
    try {
      await run('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    } catch {
      // redis-cli reports the dropped connection of a shutdown as an error; the check below decides
    }
    await waitFor(
      async () => {
        try {
          await run('redis-cli', ['-p', String(port), 'ping']);
          return false;
        } catch {
          return true;
        }
      },
      { what: 'redis to stop', interval: 50 },
    );
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lanebridge-redis-'));
    pidFile = join(dir, 'redis.pid');
    port = await freePort();
    await startRedis();
  });

  afterAll(async () => {
    // Whatever happened in the test, the throwaway Redis does not outlive it.
    try {
      await run('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    } catch {
      // already stopped
    }
    try {
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      if (pid > 0) process.kill(pid, 'SIGKILL');
    } catch {
      // no pid file or no such process: it is gone
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves every request through an outage mid-stream and goes back to Redis by itself', async () => {
    const logs = logCapture();
    const t = await startApp(
      { redisUrl: `redis://127.0.0.1:${port}`, rateLimitKeyPrefix: `${PREFIX}flap:` },
      { clock: fixedClock, logger: logs.logger, rateLimit: { retryAfterFailureMs: 100 } },
    );
    const redis = new Redis(`redis://127.0.0.1:${port}`, { retryStrategy: () => 50, maxRetriesPerRequest: 1 });
    redis.on('error', () => {});
    try {
      const a = await newTenant(t, undefined, { perMinute: 1_000_000, perDay: 1_000_000 });
      const counter = `${PREFIX}flap:{${a.keyId}}:m:${minuteIndex}`;
      const readiness = async () => json(await t.app.inject({ method: 'GET', url: '/readyz' })).checks.rate_limits as string;

      for (let i = 0; i < 5; i++) expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
      expect(await redis.get(counter)).toBe('5');
      expect(await readiness()).toBe('redis');

      // A steady stream of requests; Redis is shut down in the middle of it.
      const statuses: number[] = [];
      let streaming = true;
      const stream = (async () => {
        while (streaming) {
          statuses.push((await a.get(CUSTOMERS)).statusCode);
          await letTimePass(2);
        }
      })();
      // The stream runs for a while on each side of the outage: how long it runs is part of the test.
      await letTimePass(150);
      await stopRedis();
      await letTimePass(300);
      expect(await readiness()).toBe('in_process_fallback');
      const during = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(during).toMatch(/^lanebridge_rate_limit_redis_up 0$/m);
      expect(Number(/^lanebridge_rate_limit_fallbacks_total (\d+)$/m.exec(during)?.[1])).toBeGreaterThan(0);

      // Back again (empty: --save ''): the limiter returns to it without being told.
      await startRedis();
      await waitFor(async () => (await readiness()) === 'redis', { what: 'the limiter to use Redis again', interval: 50 });
      await letTimePass(100);
      streaming = false;
      await stream;

      expect(statuses.length).toBeGreaterThan(50);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const before = Number((await redis.get(counter)) ?? 0);
      expect(before).toBeGreaterThan(0); // requests after the restart were counted in the new Redis
      await a.get(CUSTOMERS);
      expect(Number(await redis.get(counter))).toBe(before + 1);
      expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^lanebridge_rate_limit_redis_up 1$/m);

      // One warning for the outage, one line when it ended.
      expect(logs.about('Redis unreachable')).toHaveLength(1);
      expect(logs.about('Redis reachable again')).toHaveLength(1);
    } finally {
      redis.disconnect();
      await t.close();
    }
  });

  it('falls back within the command timeout when Redis hangs, without failing a request', async () => {
    const t = await startApp(
      { redisUrl: `redis://127.0.0.1:${port}`, rateLimitKeyPrefix: `${PREFIX}hang:` },
      { clock: fixedClock, rateLimit: { commandTimeoutMs: 100, retryAfterFailureMs: 200 } },
    );
    const admin = new Redis(`redis://127.0.0.1:${port}`);
    try {
      const a = await newTenant(t, undefined, { perMinute: 1_000_000 });
      expect((await a.get(CUSTOMERS)).statusCode).toBe(200);
      // The server stops answering for 1.5 s (the connection stays open).
      void admin.call('DEBUG', 'SLEEP', '1.5').catch(() => {});
      // The command on its way to Redis (nothing to watch: the server answers nobody while it sleeps).
      await letTimePass(50);
      const started = Date.now();
      const results = [];
      for (let i = 0; i < 20; i++) results.push(await a.get(CUSTOMERS));
      const elapsed = Date.now() - started;
      expect(results.map((r) => r.statusCode).filter((s) => s !== 200)).toEqual([]);
      // One request paid the timeout; the ones after it skipped Redis while it was known to be failing.
      expect(elapsed).toBeLessThan(1000);
      expect(t.rateLimiter.status().fallbacks).toBeGreaterThan(0);
      await waitFor(
        async () => {
          await a.get(CUSTOMERS);
          return t.rateLimiter.status().redisUp === true;
        },
        { what: 'Redis to answer again', interval: 50 },
      );
    } finally {
      admin.disconnect();
      await t.close();
    }
  });
});
