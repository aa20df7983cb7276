import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DataStore } from '../lib/db/index.js';
import type { Clock } from '../lib/clock.js';
import type { Metrics } from '../lib/http/metrics.js';
import type { RateLimiterOptions } from '../lib/http/rate-limit.js';
import type { DashboardOptions } from '../dashboard/plugin.js';
import type { Resolver } from '../modules/webhooks/url-policy.js';

// What the composition root (src/app.ts) is given, and what each of its steps reads.

export interface AppDeps {
  config: Config;
  store: DataStore;
  clock?: Clock;
  /** Pino options, or false for silence (tests). */
  logger?: boolean | Record<string, unknown>;
  /** Load the geocoder's data at boot (default true). */
  warmGeocoder?: boolean;
  /** Dashboard overrides (tests: a faster sign-in throttle, shorter sessions). */
  dashboard?: Partial<Pick<DashboardOptions, 'signInThrottle' | 'sessions'>>;
  /**
   * Extra limiter options (tests: a short Redis timeout, ioredis options). The limiter itself follows
   * the config: `rateLimits` off, `redisUrl` set (Redis) or not (in process), `rateLimitKeyPrefix`; it
   * counts with `clock`, so a fake clock moves its windows.
   */
  rateLimit?: Partial<Pick<RateLimiterOptions, 'commandTimeoutMs' | 'retryAfterFailureMs' | 'redisOptions'>>;
  /**
   * load.recommendations_changed follows load writes in the background (default), or only when
   * `recommendations.sweep()` is called (tests that count a request's statements).
   */
  recommendationFollowUp?: 'background' | 'manual';
  /**
   * Webhook deliveries (docs/webhooks.md) are sent in the background after each commit and by a poll
   * (default when config.webhookWorker is on), or only when `webhooks.worker.drain()` is called (tests).
   * Follows `recommendationFollowUp: 'manual'` when not given (tests that count a request's statements).
   */
  webhookDelivery?: 'background' | 'manual';
  /** How webhook URLs' host names are resolved for the URL rules (tests: a fixed table; default the system's). */
  webhookResolve?: Resolver;
  /**
   * Imports (docs/imports.md) run in the background (default when config.importWorker is on), or only when
   * `imports.runner.drain()` is called (tests). Follows `webhookDelivery` when not given.
   */
  importRunner?: 'background' | 'manual';
  /**
   * Spans per request and per Redis command (OpenTelemetry, started by startTracing when
   * OTEL_EXPORTER_OTLP_ENDPOINT is set; statements are traced by the store: openDataStore's `traced`).
   * Off (the default): no hook, no subscription, nothing loaded.
   */
  tracing?: boolean;
}

/** What every step of buildApp reads: the app, its deps, and the clock and metrics they share. */
export interface AppContext {
  app: FastifyInstance;
  deps: AppDeps;
  config: Config;
  store: DataStore;
  clock: Clock;
  metrics: Metrics;
}
