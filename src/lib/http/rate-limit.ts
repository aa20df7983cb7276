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
  if (!opts.enabled) return disabledLimiter();
  const memory = new MemoryCounters();
  const stats = { fallbacks: 0, limited: 0 };
  if (!opts.redisUrl) return memoryLimiter(opts.clock, memory, stats);
  return redisLimiter(opts, opts.redisUrl, memory, stats);
}

/** Embedded mode (no REDIS_URL): every key counted in this process. */
function memoryLimiter(clock: Clock, memory: MemoryCounters, stats: LimiterStats): RateLimiter {
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

interface LimiterStats {
  fallbacks: number;
  limited: number;
}

/** The limiter's Redis client: not connected until the first request or ready(). */
function limiterRedis(redisUrl: string, opts: RateLimiterOptions): LimiterRedis {
  // Generous enough that a busy event loop (timers fire before pending replies are read) is not taken
  // for an outage; short enough that a hung Redis costs the requests in flight half a second at most.
  const commandTimeout = opts.commandTimeoutMs ?? 500;
  const redis = new Redis(redisUrl, {
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
  return redis;
}

/**
 * Whether Redis answers, as the limiter sees it. `outage` drives the log (one warning when an outage
 * starts, one line when it ends); `skipUntil` keeps requests off a Redis that just failed (a hung server
 * would otherwise cost every request the full command timeout); after it, the next request tries Redis
 * again.
 */
class RedisHealth {
  connected = false;
  outage = false;
  skipUntil = 0;
  closing = false;

  constructor(
    private readonly log: Logger,
    private readonly retryAfterFailureMs: number,
  ) {}

  markDown(err: unknown) {
    this.skipUntil = Date.now() + this.retryAfterFailureMs;
    this.connected = false;
    if (!this.outage) {
      this.outage = true;
      this.log.warn({ err: errorMessage(err) }, 'Redis unreachable: rate limits are counted per instance until it answers again');
    }
  }

  markUp() {
    this.skipUntil = 0;
    this.connected = true;
    if (this.outage) {
      this.outage = false;
      this.log.info({}, 'Redis reachable again: rate limits are shared across instances again');
    }
  }
}

/** REDIS_URL: both windows counted in Redis by one script, in process while Redis does not answer. */
function redisLimiter(opts: RateLimiterOptions, redisUrl: string, memory: MemoryCounters, stats: LimiterStats): RateLimiter {
  const { clock } = opts;
  const prefix = opts.keyPrefix ?? 'lanebridge:rl:';
  const redis = limiterRedis(redisUrl, opts);
  const health = new RedisHealth(opts.log, opts.retryAfterFailureMs ?? 1000);
  const isUp = () => health.connected && redis.status === 'ready';

  redis.on('ready', () => health.markUp());
  redis.on('error', (err) => {
    if (!health.closing) health.markDown(err);
  });
  redis.on('close', () => {
    if (!health.closing) health.markDown(new Error('connection closed'));
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
      if (!health.connected) health.markUp();
      const r = makeResult(allowed === 1, m, d, perMinute, perDay, nowMs);
      if (!r.allowed) stats.limited++;
      return r;
    } catch (err) {
      health.markDown(err);
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
      if (redis.status !== 'ready' || (health.skipUntil !== 0 && Date.now() < health.skipUntil)) {
        if (health.connected && redis.status !== 'ready') health.markDown(new Error(`connection ${redis.status}`));
        return fallback(keyId, perMinute, perDay, nowMs);
      }
      return viaRedis(keyId, perMinute, perDay, nowMs);
    },
    status: () => ({ mode: 'redis', redisUp: isUp(), ...stats }),
    async probe() {
      if (redis.status === 'ready') {
        try {
          await redis.ping();
          health.markUp();
        } catch (err) {
          health.markDown(err);
        }
      }
      return { mode: 'redis', redisUp: isUp(), ...stats };
    },
    ready(timeoutMs = 1000) {
      readyPromise ??= waitForRedis(redis, timeoutMs, connect);
      return readyPromise;
    },
    close() {
      health.closing = true;
      return quitRedis(redis);
    },
  };
}

async function quitRedis(redis: Redis) {
  try {
    if (redis.status === 'ready') await redis.quit();
  } catch {
    // already gone
  } finally {
    redis.disconnect();
  }
}

/** Resolves once Redis is ready, or has failed, or after `timeoutMs` (never rejects). */
function waitForRedis(redis: Redis, timeoutMs: number, connect: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
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
