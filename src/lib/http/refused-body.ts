/**
 * A refusal the client can read (issue 31). The service answers some requests before it has read
 * their body: 413 from the Content-Length (or as soon as a chunked body passes the limit), 415, and
 * 401/403/429 decided from the headers. A client that writes its whole body before it reads (Node's
 * `fetch`, most HTTP libraries) is still writing when that answer goes out; closing the connection then
 * makes the kernel reset it, and the client sees `EPIPE`/`ECONNRESET` instead of the answer.
 *
 * So, as web servers do (nginx's `lingering_close`), after an early answer the rest of the body is read
 * and thrown away, up to a bound of bytes and of time (REFUSED_BODY_DRAIN_BYTES, _SECONDS): nothing of
 * it is parsed or kept, so memory stays flat. A body that ends within the bound leaves the connection
 * usable (keep-alive); one that goes past it is cut off, as before. When the connection must close
 * anyway (the client asked for it, or the server is shutting down), the answer is followed by the
 * close of the sending side only, and the connection is dropped once the client has finished (or at
 * the bound): the client reads the answer either way.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface RefusedBodyDrainOptions {
  /** Bytes read and discarded after the answer before the connection is cut (0: cut at once). */
  maxBytes: number;
  /** Milliseconds after the answer before the connection is cut, whatever was received. */
  maxMs: number;
  /** Told how each drain ended: the body read to its end (or the client gone), or cut at a bound. */
  onOutcome?: (outcome: 'drained' | 'cut') => void;
}

/** `destroySoon` is what Node's HTTP server calls after an answer that closes the connection. */
type LingeringSocket = Socket & { destroySoon?: () => void };

/** The request still has body bytes on the wire that nobody is going to read. */
function hasUnreadBody(req: FastifyRequest): boolean {
  const raw = req.raw;
  // `complete` turns true once the parser has seen the whole message (light-my-request has none: no socket).
  if (raw.complete !== false) return false;
  const headers = raw.headers;
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length']) > 0;
}

/**
 * `drain(req, reply, keepAlive)` is called from an onSend hook, before the head is written: when the
 * request's body was not read, the rest is drained after the answer. `keepAlive` false: the answer
 * closes the connection (shutdown). Connections still draining are closed when the server closes.
 */
export function refusedBodyDrain(app: FastifyInstance, o: RefusedBodyDrainOptions) {
  const draining = new Set<LingeringSocket>();

  app.addHook('preClose', (done) => {
    // A shutdown does not wait for a client still sending a refused body.
    for (const socket of draining) socket.destroy();
    draining.clear();
    done();
  });

  function drain(req: FastifyRequest, reply: FastifyReply, keepAlive: boolean) {
    if (!hasUnreadBody(req)) return;
    const raw = req.raw;
    const socket = raw.socket as LingeringSocket | null;
    if (!socket || socket.destroyed || draining.has(socket)) return;
    // Fastify asks to close after a body it refused; the drain below makes that unnecessary, unless the
    // client asked to close (or the server is closing): then the answer says so, and the close lingers.
    if (keepAlive && reply.raw.shouldKeepAlive) reply.removeHeader('connection');
    else reply.header('connection', 'close');
    if (o.maxBytes === 0 || o.maxMs === 0) return;
    draining.add(socket);
    let received = 0;
    let lingering = false;
    const finish = (cut: boolean) => {
      if (!draining.delete(socket)) return;
      clearTimeout(timer);
      raw.removeListener('data', onData);
      raw.removeListener('end', onEnd);
      socket.removeListener('close', onClose);
      if (Object.hasOwn(socket, 'destroySoon')) Reflect.deleteProperty(socket, 'destroySoon');
      o.onOutcome?.(cut ? 'cut' : 'drained');
      if (cut || lingering) socket.destroy();
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > o.maxBytes) finish(true);
    };
    const onEnd = () => finish(false);
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(true), o.maxMs);
    // Reading from here on also keeps Node from dumping the body itself (unbounded) after the answer.
    raw.on('data', onData);
    raw.once('end', onEnd);
    socket.once('close', onClose);
    raw.resume();
    // When the answer closes the connection, Node calls destroySoon() once it is written: close only our
    // side (FIN), keep reading until the client is done, then drop it (a close with unread data resets).
    socket.destroySoon = () => {
      lingering = true;
      socket.end();
    };
  }

  return { drain };
}
