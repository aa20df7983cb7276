/**
 * A request body must arrive within REQUEST_TIMEOUT_SECONDS of its headers (docs/api.md, "Slow
 * requests"). Two layers, because Node's own limit is one number per server:
 *
 * - Node's `server.requestTimeout` (the whole request, headers and body) is set to the longest limit
 *   any route declares, so it never cuts a route's longer allowance; it is the backstop for all of them
 *   (checked every 30 s by Node; its 408 is written by clientErrorHandler).
 * - A route that declares `config.bodyTimeoutMs` times its body itself (the import part upload, with
 *   its own 408); every other route gets REQUEST_TIMEOUT_SECONDS as a deadline here: past it, the body reader fails with a 408 in the detail shape, the
 *   answer closes the connection, and what is still arriving is read and dropped within the refused-body
 *   bounds (REFUSED_BODY_DRAIN_*), then cut.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DetailError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How long this route's body may take to arrive, in ms (import parts: 10 minutes): the route times it itself. */
    bodyTimeoutMs?: number;
  }
}

/** 408: the body did not arrive in time. */
export class BodyTimeoutError extends DetailError {
  constructor(ms: number) {
    super(
      'request_timeout',
      `Request timed out: the body did not arrive within ${formatSeconds(ms)} of the request's headers: send it faster, or split it into smaller requests`,
    );
  }
}

function formatSeconds(ms: number): string {
  const s = Math.round(ms / 100) / 10;
  return `${s} second${s === 1 ? '' : 's'}`;
}

/** Body bytes are still to come (light-my-request's requests have no socket and are complete). */
function bodyPending(req: FastifyRequest): boolean {
  const raw = req.raw;
  if (raw.complete !== false) return false;
  return raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length']) > 0;
}

function expire(req: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, ms: number): void {
  if (reply.sent || req.raw.complete) return;
  const err = new BodyTimeoutError(ms);
  req.log.info({ timeoutMs: ms }, 'request body too slow: answered 408');
  // A client this slow is not kept: the answer closes the connection.
  reply.raw.shouldKeepAlive = false;
  // Fastify's body reader listens for errors: failing it gives one answer, through the error handler.
  if (payload.listenerCount('error') > 0) payload.emit('error', err);
  else void reply.send(err);
}

export function installBodyDeadline(app: FastifyInstance, opts: { defaultMs: number }): void {
  let longest = opts.defaultMs;
  app.addHook('onRoute', (route) => {
    const ms = route.config?.bodyTimeoutMs;
    if (typeof ms === 'number' && ms > longest) longest = ms;
  });
  app.addHook('onReady', (done) => {
    app.server.requestTimeout = longest;
    done();
  });
  app.addHook('preParsing', (req, reply, payload, done) => {
    // A route that declares its limit times its body itself; the longest limit is Node's own (above).
    const ms = opts.defaultMs;
    if (req.routeOptions.config?.bodyTimeoutMs !== undefined || ms >= longest || !bodyPending(req)) return done(null, payload);
    const timer = setTimeout(() => expire(req, reply, payload, ms), ms);
    const clear = () => clearTimeout(timer);
    req.raw.once('end', clear);
    reply.raw.once('close', clear);
    done(null, payload);
  });
}
