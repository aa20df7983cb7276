import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one app instance (a registry per instance, so tests can build many apps). */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'lanebridge_process_' });
  const { requests, duration, observeRequest } = requestMetrics(registry);
  const analyticsRuns = new Counter({
    name: 'lanebridge_analytics_runs_total',
    help: 'Lane analytics runs: one per write request that changes loads, one per batch request.',
    registers: [registry],
  });
  const cacheLookups = new Counter({
    name: 'lanebridge_cache_lookups_total',
    help: 'Lookups in what is kept in memory: cache "read" (GET answers), "key" (checked API keys) or "lane" (the history rows of an open load\'s lane), result hit or miss.',
    labelNames: ['cache', 'result'] as const,
    registers: [registry],
  });
  const cacheCounters = (cache: 'read' | 'key' | 'lane') => {
    const hit = cacheLookups.labels({ cache, result: 'hit' });
    const miss = cacheLookups.labels({ cache, result: 'miss' });
    return { hit: () => hit.inc(), miss: () => miss.inc() };
  };
  // Issue 31: refused bodies read to their end after the early answer, or cut at REFUSED_BODY_DRAIN_*.
  const refusedBodies = new Counter({
    name: 'lanebridge_refused_body_drains_total',
    help: 'Requests answered before their body was read (413, 415, 401…) whose rest was read and discarded: outcome drained (to its end) or cut (at 64 MiB or 10 s).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const refusedBodyDrained = (outcome: 'drained' | 'cut') => refusedBodies.labels({ outcome }).inc();
  // Webhook deliveries, one count per attempt by outcome (delivered, retry: another attempt
  // follows, failed: final).
  const webhookDeliveries = new Counter({
    name: 'lanebridge_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry (another attempt is scheduled) or failed (no attempt left, or the endpoint was disabled).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookOutcomes = {
    outcome: (o: 'delivered' | 'retry' | 'failed') => webhookDeliveries.labels({ outcome: o }).inc(),
  };
  const registerWebhookQueue = (read: () => Promise<WebhookQueueFigures>) => webhookQueueGauges(registry, read);
  return { registry, requests, duration, analyticsRuns, observeRequest, cacheCounters, webhookOutcomes, registerWebhookQueue, refusedBodyDrained };
}

/** Requests answered by method, route pattern and status, and their durations. */
function requestMetrics(registry: Registry) {
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
  return { requests, duration, observeRequest };
}

interface WebhookQueueFigures {
  pending: number;
  oldestAgeSeconds: number;
}

/** The webhook queue's gauges, read from the database at each scrape (one read shared by both). */
function webhookQueueGauges(registry: Registry, read: () => Promise<WebhookQueueFigures>) {
  let last: { at: number; figures: Promise<WebhookQueueFigures> } | null = null;
  const figures = () => {
    if (!last || Date.now() - last.at > 500) {
      // A database that does not answer within a second leaves the gauges empty (NaN), not the scrape waiting.
      const unknown = { pending: NaN, oldestAgeSeconds: NaN };
      const timeout = new Promise<typeof unknown>((r) => setTimeout(() => r(unknown), 1000).unref());
      last = { at: Date.now(), figures: Promise.race([read().catch(() => unknown), timeout]) };
    }
    return last.figures;
  };
  new Gauge({
    name: 'lanebridge_webhook_queue_depth',
    help: 'Webhook deliveries pending (waiting for their first attempt or a retry), all organizations.',
    registers: [registry],
    async collect() {
      this.set((await figures()).pending);
    },
  });
  new Gauge({
    name: 'lanebridge_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest pending webhook delivery, in seconds (0 when none is pending).',
    registers: [registry],
    async collect() {
      this.set((await figures()).oldestAgeSeconds);
    },
  });
}

export type Metrics = ReturnType<typeof createMetrics>;
