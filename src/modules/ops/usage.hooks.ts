import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WRITE_METHODS, type UsageOptions, type UsageRecorder } from './usage.service.js';

/**
 * The hooks: failures are read from the answer as it is sent (its 422 detail, a batch's failed items),
 * counts when it has gone. Only requests with an API key are counted (a 401 names no key).
 */
export function installUsage(app: FastifyInstance, usage: UsageRecorder, keyOf?: UsageOptions['keyOf']) {
  // Callback-style hooks, not async ones (every API request passes onResponse). Failures are only
  // looked for on write routes (declared after this call), so reads pass no onSend hook.
  const capture = (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (req.principal) usage.captureFailures(req, reply, payload);
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    if (![route.method].flat().some((m) => WRITE_METHODS.has(String(m)))) return;
    route.onSend = [...(route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]), capture] as never;
  });
  app.addHook('onResponse', (req, reply, done) => {
    if (req.principal) {
      usage.count(req.principal, reply.statusCode);
      return done();
    }
    const header = req.headers['x-api-key'];
    if (reply.statusCode !== 429 || !keyOf || typeof header !== 'string') return done();
    keyOf(header)
      .then((principal) => {
        if (principal) usage.count(principal, 429);
      })
      .catch(() => undefined)
      .finally(() => done());
  });
  app.addHook('onClose', () => usage.stop());
}
