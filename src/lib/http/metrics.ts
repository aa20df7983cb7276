import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one app instance (a registry per instance, so tests can build many apps). */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lanebridge_process_' });
  const requests = new Counter({
    name: 'lanebridge_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'lanebridge_http_request_duration_seconds',
    help: 'Time from request received to response sent, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const analyticsRuns = new Counter({
    name: 'lanebridge_analytics_runs_total',
    help: 'Lane analytics runs: one per write request that changes loads, one per batch request.',
    registers: [registry],
  });
  const cacheLookups = new Counter({
    name: 'lanebridge_cache_lookups_total',
    help: 'Lookups in the answers kept in memory: cache "read" (GET answers) or "key" (checked API keys), result hit or miss.',
    labelNames: ['cache', 'result'] as const,
    registers: [registry],
  });
  const cacheCounters = (cache: 'read' | 'key') => {
    const hit = cacheLookups.labels({ cache, result: 'hit' });
    const miss = cacheLookups.labels({ cache, result: 'miss' });
    return { hit: () => hit.inc(), miss: () => miss.inc() };
  };
  // Label children bound once per method, route and status: prom-client otherwise hashes the labels
  // on every observation (a visible part of a cached GET).
  const bound = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  function observeRequest(method: string, route: string, status: number, seconds: number) {
    const key = `${method} ${route} ${status}`;
    let b = bound.get(key);
    if (!b) {
      b = { count: requests.labels({ method, route, status: String(status) }), time: duration.labels({ method, route }) };
      bound.set(key, b);
    }
    b.count.inc();
    b.time.observe(seconds);
  }
  return { registry, requests, duration, analyticsRuns, observeRequest, cacheCounters };
}

export type Metrics = ReturnType<typeof createMetrics>;
