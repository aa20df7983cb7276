import { Counter, Gauge, type Registry } from 'prom-client';
import type { RateLimiter } from './rate-limit.js';

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
