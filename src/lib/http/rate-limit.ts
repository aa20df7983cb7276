/**
 * Per-key rate limits (spec section 8; docs/api.md, "Authentication and scopes";
 * docs/deployment.md, "Rate limits"): fixed windows of the current UTC minute and the current UTC day,
 * counted per API key id.
 *
 * Two stores:
 * - in-process counters (embedded mode, no REDIS_URL): one Map entry per key, nothing else;
 * - Redis (REDIS_URL): one Lua script per request checks both windows and increments both in one atomic
 *   round trip, so concurrent requests on any number of instances never get past a limit.
 *
 * A refused request spends nothing: the script increments only when both windows still have room, so a
 * client that keeps calling while limited does not burn its day budget.
 *
 * When Redis fails (error, timeout, not connected) the request is counted in this process instead, a
 * warning is logged once per outage, /readyz and /metrics say so, and the next requests go back to
 * Redis by themselves as soon as it answers again. The limiter never fails a request.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../clock.js';

export interface RateLimitResult {
  allowed: boolean;
  /** The per-minute limit (X-RateLimit-Limit). */
  limit: number;
  /** Requests still accepted in the current minute: the per-minute remainder, capped by what is left of the day. */
  remaining: number;
  /** Unix time, in seconds, when the current minute window ends (X-RateLimit-Reset). */
  reset: number;
  /** When refused: seconds until the spent window (the day when the day is spent, else the minute) ends. */
  retryAfter: number;
}

export type RateLimitMode = 'off' | 'memory' | 'redis';

export interface RateLimitStatus {
  mode: RateLimitMode;
  /** Redis mode only: whether the last exchange with Redis worked and the connection is up. */
  redisUp: boolean | null;
  /** Requests counted in process because Redis was unavailable (since start). */
  fallbacks: number;
  /** Requests refused with 429 (since start). */
  limited: number;
}

export interface RateLimiter {
  readonly mode: RateLimitMode;
  /** Counts one request of `keyId` against its limits; never throws. Synchronous in embedded mode. */
  consume(keyId: string, perMinute: number, perDay: number): RateLimitResult | Promise<RateLimitResult>;
  status(): RateLimitStatus;
  /** For /readyz: a fresh look at Redis (a PING with the command timeout) when it is configured. */
  probe(): Promise<RateLimitStatus>;
  /** Resolves once Redis is connected, has failed, or `timeoutMs` passed (never rejects). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface Logger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface RateLimiterOptions {
  /** 'off' disables counting and the headers (benchmarks, or a gateway that limits in front). */
  enabled: boolean;
  redisUrl?: string | undefined;
  /** Prefix of every Redis key (share one Redis between deployments, or tests between runs). */
  keyPrefix?: string;
  clock: Clock;
  log: Logger;
  /** Milliseconds a Redis command may take before the request falls back (default 500). */
  commandTimeoutMs?: number;
  /** After a Redis failure, requests skip Redis for this long before one tries it again (default 1000). */
  retryAfterFailureMs?: number;
  /** Extra ioredis options (tests). */
  redisOptions?: RedisOptions;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** Builds the result from the counts after this request (or the counts that refused it). */
function makeResult(allowed: boolean, minuteCount: number, dayCount: number, perMinute: number, perDay: number, nowMs: number): RateLimitResult {
  const minuteEnd = (Math.floor(nowMs / MINUTE_MS) + 1) * MINUTE_MS;
  let retryAfter = 0;
  if (!allowed) {
    const end = dayCount >= perDay ? (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS : minuteEnd;
    retryAfter = Math.max(1, Math.ceil((end - nowMs) / 1000));
  }
  return {
    allowed,
    limit: perMinute,
    remaining: Math.max(0, Math.min(perMinute - minuteCount, perDay - dayCount)),
    reset: minuteEnd / 1000,
    retryAfter,
  };
}

interface Entry {
  minute: number;
  minuteCount: number;
  day: number;
  dayCount: number;
}

/** In-process fixed-window counters: the embedded store, and the fallback of the Redis store. */
export class MemoryCounters {
  private readonly entries = new Map<string, Entry>();

  consume(keyId: string, perMinute: number, perDay: number, nowMs: number): RateLimitResult {
    const minute = Math.floor(nowMs / MINUTE_MS);
    const day = Math.floor(nowMs / DAY_MS);
    let e = this.entries.get(keyId);
    if (!e) {
      if (this.entries.size >= 50_000) this.sweep(day);
      e = { minute, minuteCount: 0, day, dayCount: 0 };
      this.entries.set(keyId, e);
    }
    if (e.minute !== minute) {
      e.minute = minute;
      e.minuteCount = 0;
    }
    if (e.day !== day) {
      e.day = day;
      e.dayCount = 0;
    }
    if (e.minuteCount >= perMinute || e.dayCount >= perDay) {
      return makeResult(false, e.minuteCount, e.dayCount, perMinute, perDay, nowMs);
    }
    e.minuteCount++;
    e.dayCount++;
    return makeResult(true, e.minuteCount, e.dayCount, perMinute, perDay, nowMs);
  }

  /** Drops keys not seen today (bounds memory when very many keys come and go). */
  private sweep(day: number) {
    for (const [k, e] of this.entries) if (e.day !== day) this.entries.delete(k);
  }
}

/**
 * KEYS[1]: the key's counter of this minute, KEYS[2]: of this day. ARGV: per-minute limit, per-day
 * limit, minute key TTL, day key TTL (seconds; the window index is in the key name, the TTL only
 * collects old windows). Returns {allowed (1/0), minute count, day count}.
 */
const CONSUME_LUA = `
local m = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(redis.call('GET', KEYS[2]) or '0')
if m >= tonumber(ARGV[1]) or d >= tonumber(ARGV[2]) then
  return {0, m, d}
end
m = redis.call('INCR', KEYS[1])
if m == 1 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
d = redis.call('INCR', KEYS[2])
if d == 1 then redis.call('EXPIRE', KEYS[2], ARGV[4]) end
return {1, m, d}
`;

type LimiterRedis = Redis & {
  lbConsume(minuteKey: string, dayKey: string, perMinute: number, perDay: number, minuteTtl: number, dayTtl: number): Promise<[number, number, number]>;
};

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const { clock, log } = opts;
  if (!opts.enabled) return disabledLimiter();
  const memory = new MemoryCounters();
  const stats = { fallbacks: 0, limited: 0 };

  if (!opts.redisUrl) {
    return {
      mode: 'memory',
      consume(keyId, perMinute, perDay) {
        const r = memory.consume(keyId, perMinute, perDay, clock.now().getTime());
        if (!r.allowed) stats.limited++;
        return r;
      },
      status: () => ({ mode: 'memory', redisUp: null, ...stats }),
      probe: async () => ({ mode: 'memory', redisUp: null, ...stats }),
      ready: async () => {},
      close: async () => {},
    };
  }

  const prefix = opts.keyPrefix ?? 'lanebridge:rl:';
  // Generous enough that a busy event loop (timers fire before pending replies are read) is not taken
  // for an outage; short enough that a hung Redis costs the requests in flight half a second at most.
  const commandTimeout = opts.commandTimeoutMs ?? 500;
  const retryAfterFailureMs = opts.retryAfterFailureMs ?? 1000;
  const redis = new Redis(opts.redisUrl, {
    // Fail fast instead of queueing while disconnected: the request is then counted in process.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout,
    // No request waits for a connection (they are counted in process until it is ready), so this only
    // bounds how long a connection attempt may take. It is ioredis's default: a short one fires on a
    // busy boot (timers run before the pending connect is read) and was taken for an outage.
    connectTimeout: 10_000,
    // Keep reconnecting (quickly at first, then every second) for as long as the process lives.
    retryStrategy: (times) => Math.min(times * 100, 1000),
    // Connected by ready(), once the app is built: a command in flight while the boot runs synchronous
    // work (the geocoder's data) would time out on a blocked event loop and look like an outage.
    lazyConnect: true,
    // Commands issued in the same tick go out in one write: under load, one syscall for many requests
    // (the socket writes were the largest part of the limiter's cost without it).
    enableAutoPipelining: true,
    ...opts.redisOptions,
  }) as LimiterRedis;
  redis.defineCommand('lbConsume', { numberOfKeys: 2, lua: CONSUME_LUA });

  // `outage` drives the log (one warning when an outage starts, one line when it ends); `skipUntil`
  // keeps requests off a Redis that just failed (a hung server would otherwise cost every request the
  // full command timeout); after it, the next request tries Redis again.
  let connected = false;
  let outage = false;
  let skipUntil = 0;
  let closing = false;

  function markDown(err: unknown) {
    skipUntil = Date.now() + retryAfterFailureMs;
    connected = false;
    if (!outage) {
      outage = true;
      log.warn({ err: errorMessage(err) }, 'Redis unreachable: rate limits are counted per instance until it answers again');
    }
  }
  function markUp() {
    skipUntil = 0;
    connected = true;
    if (outage) {
      outage = false;
      log.info({}, 'Redis reachable again: rate limits are shared across instances again');
    }
  }
  const isUp = () => connected && redis.status === 'ready';

  redis.on('ready', markUp);
  redis.on('error', (err) => {
    if (!closing) markDown(err);
  });
  redis.on('close', () => {
    if (!closing) markDown(new Error('connection closed'));
  });

  function fallback(keyId: string, perMinute: number, perDay: number, nowMs: number): RateLimitResult {
    stats.fallbacks++;
    const r = memory.consume(keyId, perMinute, perDay, nowMs);
    if (!r.allowed) stats.limited++;
    return r;
  }

  async function viaRedis(keyId: string, perMinute: number, perDay: number, nowMs: number): Promise<RateLimitResult> {
    const minute = Math.floor(nowMs / MINUTE_MS);
    const day = Math.floor(nowMs / DAY_MS);
    // The hash tag keeps both counters of a key on one slot (Redis Cluster).
    const base = `${prefix}{${keyId}}`;
    try {
      const [allowed, m, d] = await redis.lbConsume(`${base}:m:${minute}`, `${base}:d:${day}`, perMinute, perDay, 120, 90_000);
      if (!connected) markUp();
      const r = makeResult(allowed === 1, m, d, perMinute, perDay, nowMs);
      if (!r.allowed) stats.limited++;
      return r;
    } catch (err) {
      markDown(err);
      return fallback(keyId, perMinute, perDay, nowMs);
    }
  }

  let readyPromise: Promise<void> | null = null;
  const connect = () => {
    if (redis.status === 'wait') redis.connect().catch(() => {}); // failures arrive as 'error' events
  };

  return {
    mode: 'redis',
    consume(keyId, perMinute, perDay) {
      const nowMs = clock.now().getTime();
      if (redis.status === 'wait') connect();
      if (redis.status !== 'ready' || (skipUntil !== 0 && Date.now() < skipUntil)) {
        if (connected && redis.status !== 'ready') markDown(new Error(`connection ${redis.status}`));
        return fallback(keyId, perMinute, perDay, nowMs);
      }
      return viaRedis(keyId, perMinute, perDay, nowMs);
    },
    status: () => ({ mode: 'redis', redisUp: isUp(), ...stats }),
    async probe() {
      if (redis.status === 'ready') {
        try {
          await redis.ping();
          markUp();
        } catch (err) {
          markDown(err);
        }
      }
      return { mode: 'redis', redisUp: isUp(), ...stats };
    },
    ready(timeoutMs = 1000) {
      readyPromise ??= new Promise<void>((resolve) => {
        if (redis.status === 'ready') return resolve();
        const done = () => {
          clearTimeout(timer);
          redis.off('ready', done);
          redis.off('error', done);
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        redis.once('ready', done);
        redis.once('error', done);
        connect();
      });
      return readyPromise;
    },
    async close() {
      closing = true;
      try {
        if (redis.status === 'ready') await redis.quit();
      } catch {
        // already gone
      } finally {
        redis.disconnect();
      }
    },
  };
}

function disabledLimiter(): RateLimiter {
  const status = (): RateLimitStatus => ({ mode: 'off', redisUp: null, fallbacks: 0, limited: 0 });
  return {
    mode: 'off',
    consume: (_keyId, perMinute) => ({ allowed: true, limit: perMinute, remaining: perMinute, reset: 0, retryAfter: 0 }),
    status,
    probe: async () => status(),
    ready: async () => {},
    close: async () => {},
  };
}

/** The limiter's state in the app's Prometheus registry, read when /metrics is scraped. */
export function registerRateLimitMetrics(registry: Registry, limiter: RateLimiter) {
  if (limiter.mode === 'off') return;
  let limitedSeen = 0;
  new Counter({
    name: 'lanebridge_rate_limited_total',
    help: 'Requests refused with 429 because a key spent its per-minute or per-day budget.',
    registers: [registry],
    collect() {
      const { limited } = limiter.status();
      this.inc(limited - limitedSeen);
      limitedSeen = limited;
    },
  });
  if (limiter.mode !== 'redis') return;
  new Gauge({
    name: 'lanebridge_rate_limit_redis_up',
    help: '1 when rate limits are counted in Redis (shared by all instances), 0 while they fall back to per-instance counters.',
    registers: [registry],
    collect() {
      this.set(limiter.status().redisUp ? 1 : 0);
    },
  });
  let fallbacksSeen = 0;
  new Counter({
    name: 'lanebridge_rate_limit_fallbacks_total',
    help: 'Requests counted in process because Redis was unreachable or too slow.',
    registers: [registry],
    collect() {
      const { fallbacks } = limiter.status();
      this.inc(fallbacks - fallbacksSeen);
      fallbacksSeen = fallbacks;
    },
  });
}
