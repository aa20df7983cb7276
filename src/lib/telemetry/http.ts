import type { IncomingMessage } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';

type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;
import { ORGANIZATION_ATTRIBUTE, tracer } from './tracing.js';
import { maskApiKeys } from '../http/logging.js';

interface RequestSpan {
  span: Span;
  context: Context;
}

/**
 * A SERVER span per request (name `GET /v2/tms-api/loads/:external_reference_id`; route, status,
 * organization, request id), made active for the request's hooks and handler so its statements,
 * Redis commands and anything else traced become its children. A W3C `traceparent` sent by the caller
 * is its parent. The request's log lines carry `trace_id` beside `reqId`.
 */
export function requestTracing(organizationOf: (req: FastifyRequest) => string | undefined) {
  const spans = new WeakMap<IncomingMessage, RequestSpan>();
  const begin = (raw: IncomingMessage): RequestSpan => {
    let entry = spans.get(raw);
    if (!entry) {
      const parent = propagation.extract(ROOT_CONTEXT, raw.headers);
      const method = raw.method ?? 'HTTP';
      const span = tracer().startSpan(
        method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': maskApiKeys((raw.url ?? '/').split('?')[0]!) } },
        parent,
      );
      entry = { span, context: trace.setSpan(parent, span) };
      spans.set(raw, entry);
    }
    return entry;
  };

  return {
    /**
     * Fastify's childLoggerFactory: the request's logger is made before its first hook runs (and logs
     * "incoming request"), so the span begins here and its trace id is bound to every line.
     */
    childLoggerFactory: ((logger, bindings, opts, raw) => {
      const { span } = begin(raw as IncomingMessage);
      return logger.child({ ...bindings, trace_id: span.spanContext().traceId }, opts);
    }) as ChildLoggerFactory,

    /** Registers the hooks; call before any other hook is added, so the span is active in all of them. */
    install(app: FastifyInstance): void {
      app.addHook('onRequest', (req, _reply, done) => {
        context.with(begin(req.raw).context, done);
      });
      // Reading the body happens in the socket's callbacks, outside the request's context: re-entered here.
      app.addHook('preValidation', (req, _reply, done) => {
        const entry = spans.get(req.raw);
        if (entry) context.with(entry.context, done);
        else done();
      });
      const end = (req: FastifyRequest, status: number | null) => {
        const entry = spans.get(req.raw);
        if (!entry) return;
        spans.delete(req.raw);
        const { span } = entry;
        const route = req.routeOptions.url;
        if (route) {
          span.updateName(`${req.method} ${route}`);
          span.setAttribute('http.route', route);
        }
        const org = organizationOf(req);
        if (org) span.setAttribute(ORGANIZATION_ATTRIBUTE, org);
        span.setAttribute('lanebridge.request_id', req.id);
        if (status === null) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection before the answer' });
        } else {
          span.setAttribute('http.response.status_code', status);
          if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      };
      app.addHook('onResponse', (req, reply, done) => {
        end(req, reply.statusCode);
        done();
      });
      app.addHook('onRequestAbort', (req, done) => {
        end(req, null);
        done();
      });
    },
  };
}
