import Fastify, { type FastifyInstance } from 'fastify';
import type { AppContext, AppDeps } from './context.js';
import type { AccountsService } from '../modules/accounts/accounts.service.js';
import { loggerOptions } from '../lib/http/logging.js';
import { installAuth } from '../lib/http/auth.js';
import { installIdempotency } from '../lib/http/idempotency.js';
import { installOpenApi } from '../lib/http/openapi.js';
import { clientErrorHandler, frameworkErrorHandler, installPlumbing, newRequestId } from '../lib/http/plumbing.js';
import { installBodyDeadline } from '../lib/http/body-deadline.js';
import { foreground } from '../lib/http/foreground.js';
import { createRateLimiter } from '../lib/http/rate-limit.js';
import { registerRateLimitMetrics } from '../lib/http/rate-limit-metrics.js';
import { requestTracing } from '../lib/telemetry/http.js';
import { traceRedisCommands } from '../lib/telemetry/redis.js';
import { API_SCHEMAS } from './openapi-schemas.js';

// The HTTP side of the composition root (src/app.ts): the Fastify instance and the plumbing every
// route runs behind (request spans, the requests in flight, rate limits, errors, auth, Idempotency-Key,
// the OpenAPI document).

/** TRUST_PROXY as a hop count: the nearest `hops` addresses of the chain are proxies (as Fastify reads a number). */
function trustHops(hops: number) {
  return (_address: string, hop: number) => hop < hops;
}

/** Paths under the API prefix that need no key. */
const PUBLIC_API_PATHS = new Set(['/v2/tms-api/openapi.json']);

/** The Fastify instance, with the request spans as its first hook when tracing is on. */
export function createFastify(deps: AppDeps): FastifyInstance {
  const { config } = deps;
  const requestSpans = deps.tracing ? requestTracing((req) => req.principal?.orgId ?? req.dashboardSession?.orgId) : null;
  const app = Fastify({
    logger: deps.logger === false ? false : loggerOptions(config.logLevel, typeof deps.logger === 'object' ? deps.logger : {}),
    genReqId: newRequestId,
    // With tracing on, each request's log lines carry its trace id beside its request id.
    ...(requestSpans ? { childLoggerFactory: requestSpans.childLoggerFactory } : {}),
    // TRUST_PROXY: req.ip (logs, the dashboard's sign-in throttle) and req.protocol (Secure cookies) from X-Forwarded-*.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    // Requests that arrive while closing get the API's 503 (docs/api.md, "Errors") from the plumbing
    // (Fastify's has another body).
    return503OnClosing: false,
    forceCloseConnections: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // Errors raised before routing get the same shapes.
    frameworkErrors: frameworkErrorHandler,
    // And those Node's HTTP parser refuses (a malformed request line or header): the same detail shape,
    // an X-Request-Id.
    clientErrorHandler,
  });

  // First of all hooks, so the request's span is active in every other one.
  if (requestSpans) {
    requestSpans.install(app);
    const stopRedisSpans = traceRedisCommands();
    app.addHook('onClose', async () => stopRedisSpans());
  }
  return app;
}

/** The requests in flight: the recommendations follow-up gives way to them between its steps. */
export function trackRequests(app: FastifyInstance) {
  const requests = foreground();
  app.addHook('onRequest', (req, reply, done) => {
    // 'close' comes once the answer is sent or the connection is gone, whichever way the request ended.
    reply.raw.once('close', requests.enter());
    done();
  });
  // An API write about to run: authenticated (the key check is an onRequest hook), within its limits, its
  // body read and valid. While such writes arrive an import on SQLite takes short chunks (docs/imports.md);
  // reads, refused requests and the imports API's own calls (an upload's parts) do not count.
  app.addHook('preHandler', (req, _reply, done) => {
    const scope = req.routeOptions.config?.scope;
    if (scope && scope !== 'write:imports' && req.method !== 'GET' && req.method !== 'HEAD') requests.wrote();
    done();
  });
  return requests;
}

/** What every API route runs behind, in order: rate limits, plumbing, the body deadline, the key check, Idempotency-Key, the OpenAPI document. */
export async function installHttp({ app, deps, config, store, clock, metrics }: AppContext, accounts: AccountsService) {
  const rateLimiter = createRateLimiter({
    enabled: config.rateLimits,
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimitKeyPrefix,
    clock,
    log: app.log,
    ...deps.rateLimit,
  });
  app.addHook('onClose', () => rateLimiter.close());
  registerRateLimitMetrics(metrics.registry, rateLimiter);

  installPlumbing(app, {
    metrics,
    bodyLimitBytes: config.bodyLimitBytes,
    refusedBodies: { maxBytes: config.refusedBodyDrainBytes, maxMs: config.refusedBodyDrainMs },
  });
  // Bodies arrive within REQUEST_TIMEOUT_SECONDS (a route may declare longer), else 408.
  installBodyDeadline(app, { defaultMs: config.requestTimeoutMs });
  const routeTable = installAuth(app, store, accounts, PUBLIC_API_PATHS, rateLimiter);
  // Idempotency-Key on every write route declared below
  // (docs/api.md, "Safe retries: `Idempotency-Key`"): after the key check and the rate limit. A claim's
  // lease outlasts the longest request (a load batch's deadline) by a minute.
  installIdempotency(app, { db: store.db, clock, ttlHours: config.idempotencyTtlHours, leaseMs: config.loadBatchDeadlineMs + 60_000, log: app.log });
  await installOpenApi(app, API_SCHEMAS);
  return { rateLimiter, routeTable };
}
