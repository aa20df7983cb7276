import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataStore } from '../../lib/db/index.js';
import { ServiceUnavailableError, UnauthorizedError, renderError } from '../../lib/http/errors.js';
import type { Metrics } from '../../lib/http/metrics.js';
import type { RateLimiter, RateLimitStatus } from '../../lib/http/rate-limit.js';

/**
 * Where rate limits are counted, for /readyz: `in_process` (embedded), `redis`, `in_process_fallback`
 * (Redis configured but unreachable: the service keeps answering, with per-instance counters), `off`.
 */
function rateLimitChecks(s: RateLimitStatus): Record<string, string> {
  if (s.mode === 'off') return { rate_limits: 'off' };
  if (s.mode === 'memory') return { rate_limits: 'in_process' };
  return s.redisUp ? { rate_limits: 'redis', redis: 'ok' } : { rate_limits: 'in_process_fallback', redis: 'unreachable' };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether the request carries `Authorization: Bearer <token>` (compared in constant time, whatever its length). */
function bearerMatches(req: FastifyRequest, expected: Buffer): boolean {
  const header = req.headers.authorization;
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m !== null && timingSafeEqual(digest(m[1]!), expected);
}

/**
 * Liveness, readiness and metrics: no API key, not part of the versioned API. With `metricsToken`
 * (METRICS_TOKEN), /metrics wants it as a Bearer token (401 in the API's error shape otherwise;
 * docs/deployment.md, "`/metrics` and `METRICS_TOKEN`"); the probes stay open for the orchestrator.
 */
export function opsRoutes(app: FastifyInstance, deps: { store: DataStore; metrics: Metrics; rateLimiter?: RateLimiter; metricsToken?: string | undefined }) {
  const metricsToken = deps.metricsToken ? digest(deps.metricsToken) : null;
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    // Redis is not a readiness condition: without it limits are counted per instance, and the detail says so.
    // The webhook worker process has no rate limiter: its checks name the database only.
    const [database, limits] = await Promise.all([deps.store.ping(2000), deps.rateLimiter?.probe()]);
    const checks = limits ? rateLimitChecks(limits) : {};
    if (database) return { status: 'ready', checks: { database: 'ok', ...checks } };
    const { status, headers, body } = renderError(new ServiceUnavailableError());
    return reply
      .code(status)
      .headers(headers)
      .send({ status: 'not_ready', ...body, checks: { database: 'unreachable', ...checks } });
  });

  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (metricsToken && !bearerMatches(req, metricsToken)) {
      const { status, headers, body } = renderError(new UnauthorizedError('Invalid or missing metrics token: send Authorization: Bearer <METRICS_TOKEN>'));
      return reply
        .code(status)
        .headers({ ...headers, 'www-authenticate': 'Bearer realm="metrics"' })
        .type('application/json; charset=utf-8')
        .send(body);
    }
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
