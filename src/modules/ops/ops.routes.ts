import type { FastifyInstance } from 'fastify';
import type { DataStore } from '../../lib/db/index.js';
import type { Metrics } from '../../lib/http/metrics.js';

/** Liveness, readiness and metrics: no key, not part of the versioned API. */
export function opsRoutes(app: FastifyInstance, deps: { store: DataStore; metrics: Metrics }) {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const database = await deps.store.ping(2000);
    if (database) return { status: 'ready', checks: { database: 'ok' } };
    return reply
      .code(503)
      .header('retry-after', '5')
      .send({ status: 'not_ready', detail: 'Service temporarily unavailable', checks: { database: 'unreachable' } });
  });

  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
