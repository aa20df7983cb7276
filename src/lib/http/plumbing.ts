import { STATUS_CODES, maxHeaderSize, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  DetailError,
  classifyError,
  MalformedJsonError,
  MethodNotAllowedError,
  OtherClientError,
  RouteNotFoundError,
  renderError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  UnsupportedContentEncodingError,
  UnsupportedMediaTypeError,
  ValidationError,
  type LocPart,
  type ValidationIssue,
} from './errors.js';
import { API_PREFIX } from './auth.js';
import { bodyShapeIssue, decodeUtf8 } from './body-scan.js';
import { cutListsToBounds } from './body-bounds.js';
import { checksForJsonText, queryEncodingIssues, textIssues, type TextChecks } from './input-text.js';
import { ajvErrorsToIssues, bodyAjv, queryAjv } from './validation.js';
import type { Metrics } from './metrics.js';
import { newRequestId } from './request-id.js';
import { refusedBodyDrain, type RefusedBodyDrainOptions } from './refused-body.js';
import { noteStrippedKeys, strictIssuesOf } from './ignored-fields.js';

function send(reply: FastifyReply, err: ApiError) {
  const { status, headers, body } = renderError(err);
  // A key found revoked or expired by the route's own statement (after it was counted): a 401 names no budget.
  if (status === 401) for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) reply.removeHeader(h);
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** What any failure of a request is answered as (the table's entry), logged when it is the service's fault. */
export function asApiError(error: unknown, req: FastifyRequest, bodyLimitBytes: number): ApiError {
  const fe = error as FastifyError & { validation?: unknown; validationContext?: string };
  const invalid =
    error instanceof ValidationError
      ? error
      : fe.validation
        ? new ValidationError(ajvErrorsToIssues(fe.validation as never, fe.validationContext ?? 'body'))
        : null;
  if (invalid) {
    // Strict handling
    // (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`"): a
    // request that also failed its schema names its unknown fields in the same 422; lists cut to their
    // bound (body-bounds.ts) come first.
    const strict = strictIssuesOf(req);
    const withStrict = strict && !invalid.issues.includes(strict[0]!) ? [...strict, ...invalid.issues] : invalid.issues;
    const oversize = oversizeLists.get(req);
    const issues = oversize && !withStrict.includes(oversize[0]!) ? [...oversize, ...withStrict] : withStrict;
    return issues === invalid.issues ? invalid : new ValidationError(issues);
  }
  if (error instanceof ApiError) return error;
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeError(req.headers['content-type']);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      // Every batch route is under /batch/ and takes BATCH_BODY_LIMIT_BYTES; the others BODY_LIMIT_BYTES.
      return new PayloadTooLargeError(
        req.routeOptions.bodyLimit ?? bodyLimitBytes,
        req.routeOptions.url?.startsWith(`${API_PREFIX}/batch/`) ? 'BATCH_BODY_LIMIT_BYTES' : 'BODY_LIMIT_BYTES',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new MalformedJsonError('the body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new MalformedJsonError(fe.message);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DetailError('bad_request', 'Request body length does not match its Content-Length header');
    default:
      break;
  }
  return classifyError(error, req.id, {
    unavailable: (err) => req.log.warn({ err }, 'database unavailable'),
    internal: (err) => req.log.error({ err }, 'unhandled error'),
  });
}

/** Errors Fastify raises before routing: a path past the router's limit, or not valid percent-encoding. */
export function frameworkErrorHandler(error: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', req.id);
  // Every path parameter is an external_reference_id: one past the router's limit is the same 422 as one of 256 to 512 characters.
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return send(reply, ValidationError.single(['path', 'external_reference_id'], 'String should have at most 255 characters', 'string_too_long'));
  }
  return send(
    reply,
    new DetailError('bad_request', error.code === 'FST_ERR_BAD_URL' ? 'Malformed URL: the path is not valid percent-encoding' : 'Bad request'),
  );
}

/** What Node's HTTP parser (llhttp) could not read, in words a caller can act on. */
const PARSER_PROBLEMS: Record<string, string> = {
  HPE_INVALID_METHOD: 'the request line does not start with a known method',
  HPE_INVALID_URL: 'the request target is not a valid URL',
  HPE_INVALID_VERSION: 'the request line does not end with HTTP/1.1 (or HTTP/1.0)',
  HPE_INVALID_CONSTANT: 'the request line is malformed',
  HPE_INVALID_HEADER_TOKEN: 'a header name or value contains a character HTTP does not allow',
  HPE_LF_EXPECTED: 'a line does not end with CRLF',
  HPE_CR_EXPECTED: 'a line does not end with CRLF',
  HPE_INVALID_CONTENT_LENGTH: 'the Content-Length header is not a number',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'the request has Content-Length more than once, or both Content-Length and Transfer-Encoding: chunked',
  HPE_INVALID_TRANSFER_ENCODING: 'Transfer-Encoding must end with chunked and cannot come with Content-Length',
  HPE_INVALID_CHUNK_SIZE: 'a chunk of the chunked body has an invalid size',
};

/**
 * Requests Node's HTTP parser refuses before any route or hook sees them (Node's `clientError`: a
 * malformed request line or header, headers over the size limit, headers too slow): the detail shape
 * (docs/api.md, "Errors") and an `X-Request-Id` (made here: the headers could not be read), logged with
 * it at info. The answer closes the connection; the socket is dropped a second later if the client does
 * not close it first.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException & { bytesParsed?: number }, socket: Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const requestId = newRequestId({ headers: {} } as IncomingMessage);
  let error: ApiError;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    error = new OtherClientError(431, `Request headers are larger than the limit of ${maxHeaderSize} bytes: send fewer or shorter headers`);
  } else if (err.code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    error = new OtherClientError(408, 'Request timed out: the request line and headers did not arrive in time');
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // Node's requestTimeout: the longest any route allows (src/lib/http/body-deadline.ts).
    error = new OtherClientError(
      408,
      'Request timed out: the request (headers and body) did not arrive in time: send it faster, or split it into smaller requests',
    );
  } else {
    error = new DetailError('bad_request', `Malformed HTTP request: ${PARSER_PROBLEMS[err.code ?? ''] ?? 'the request line or headers cannot be parsed'}`);
  }
  this.log.info({ requestId, code: err.code, remoteAddress: socket.remoteAddress }, 'malformed HTTP request refused');
  if (socket.writable) {
    const { status, headers, body } = renderError(error);
    const text = JSON.stringify(body);
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Bad Request'}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      `X-Request-Id: ${requestId}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
  }
  setTimeout(() => socket.destroy(), 1000).unref();
}

function invalidUtf8Message(offset: number): string {
  return `the body is not valid UTF-8 at byte offset ${offset} (counted from 0); send the JSON text encoded as UTF-8`;
}

/** Entries for lists of a body cut to their schema's bound (body-bounds.ts): the request fails with them. */
const oversizeLists = new WeakMap<FastifyRequest, ValidationIssue[]>();

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Batch items refused for their text before the batch runs, by index (see refusedBatchItems). */
const refusedItems = new WeakMap<FastifyRequest, Map<number, ValidationIssue[]>>();

/** Adds items refused before the batch runs (strict handling: unknown fields); their entries join any refused text's. */
export function refuseBatchItems(req: FastifyRequest, byItem: ReadonlyMap<number, ValidationIssue[]>): void {
  const map = refusedItems.get(req) ?? new Map<number, ValidationIssue[]>();
  for (const [index, issues] of byItem) map.set(index, [...(map.get(index) ?? []), ...issues]);
  refusedItems.set(req, map);
}

/** The items of this batch request that carry refused text (NUL, a lone surrogate): each fails 422 on its own. */
export function refusedBatchItems(req: FastifyRequest): ReadonlyMap<number, ValidationIssue[]> | null {
  return refusedItems.get(req) ?? null;
}

function routePattern(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

const hasBom = (b: Buffer) => b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;

/** Request ids, JSON-only bodies, validation, the one error handler, 404/405, and request metrics. */
export function installPlumbing(app: FastifyInstance, opts: { metrics: Metrics; bodyLimitBytes: number; refusedBodies: RefusedBodyDrainOptions }): void {
  const { metrics } = opts;
  // An answer sent before the body was read (413, 415, 401, …) is followed by a bounded drain of the rest.
  const refused = refusedBodyDrain(app, { ...opts.refusedBodies, onOutcome: metrics.refusedBodyDrained });

  // While the server drains (app.close()): responses to requests in flight close their keep-alive
  // connection (else it would hold the close up until the keep-alive timeout), and a request that still
  // arrives on one is refused with the API's 503 and Retry-After (Fastify's own answer has another body).
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  // The per-request hooks take callbacks rather than being async: no promise per hook on every request.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    if (closing) return done(new ServiceUnavailableError());
    // Bodies are read as sent: a compressed one is refused before it is read (docs/api.md, Bounds of a request).
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && BODY_METHODS.has(req.method) && !/^\s*identity\s*$/i.test(encoding))
      return done(new UnsupportedContentEncodingError(encoding));
    done();
  });

  app.addHook('onSend', (req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    refused.drain(req, reply, !closing);
    done(null, payload);
  });

  // Bodies whose text may carry refused text (NUL, a lone surrogate) and so need a walk (input-text.ts).
  const bodiesToCheck = new WeakMap<FastifyRequest, TextChecks>();
  installJsonParser(app, bodiesToCheck);
  installRequestChecks(app, bodiesToCheck);

  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv.compile(schema) : queryAjv.compile(schema)));
  app.setSchemaErrorFormatter((errors, dataVar) => {
    const err = new ValidationError(ajvErrorsToIssues(errors as never, dataVar));
    return err as unknown as Error;
  });

  app.setErrorHandler((error: FastifyError | ApiError, req: FastifyRequest, reply: FastifyReply) => send(reply, asApiError(error, req, opts.bodyLimitBytes)));
  installNotFound(app);

  app.addHook('onResponse', (req, reply, done) => {
    metrics.observeRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/** Only JSON bodies, read as bytes and checked before and after JSON.parse (docs/api.md, "Bounds of a request"). */
function installJsonParser(app: FastifyInstance, bodiesToCheck: WeakMap<FastifyRequest, TextChecks>) {
  // Only JSON bodies are accepted; any other media type is answered 415 before it is read.
  app.removeAllContentTypeParsers();
  // Read as bytes: Fastify's own decoding would replace bytes that are not UTF-8 without a word.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    // A UTF-8 byte order mark is ignored, as RFC 8259 allows (JSON.parse would name an invisible character).
    const skipped = hasBom(body as Buffer) ? 3 : 0;
    const bytes = (body as Buffer).subarray(skipped);
    const decoded = decodeUtf8(bytes);
    if ('badByteAt' in decoded) return done(new MalformedJsonError(invalidUtf8Message(skipped + decoded.badByteAt)), undefined);
    const text = decoded.text;
    // An empty body where the route takes none (a DELETE from a client that sends Content-Type on every request).
    if (text.trim() === '') return done(req.routeOptions.schema?.body ? new MalformedJsonError('the body is empty') : null, undefined);
    // Bounds JSON.parse's own time (one synchronous call) before it runs: docs/api.md "Bounds of a request".
    const shape = bodyShapeIssue(bytes);
    if (shape) return done(new ValidationError([shape]), undefined);
    let parsed: unknown;
    try {
      // No reviver: V8 parses any depth iteratively, but a reviver recurses (a deep body overflowed the stack).
      parsed = JSON.parse(text);
    } catch (err) {
      return done(new MalformedJsonError((err as Error).message), undefined);
    }
    const checks = checksForJsonText(text);
    if (checks) {
      // `__proto__` keys are dropped now (merged objects keep their prototypes); the rest is checked below.
      if (checks.stripProto) {
        const stripped: LocPart[][] = [];
        textIssues(parsed, ['body'], { nul: false, surrogates: false, stripProto: true, onStrip: (loc) => stripped.push(loc) });
        // Named as ignored fields, or refused under strict handling, like any field not in the schema.
        if (stripped.length > 0) noteStrippedKeys(req, stripped);
      }
      if (checks.nul || checks.surrogates) bodiesToCheck.set(req, { nul: checks.nul, surrogates: checks.surrogates });
    }
    done(null, parsed);
  });
}

/** Before the handler: the media type, lists cut to their bounds, refused text in the path, query and body. */
function installRequestChecks(app: FastifyInstance, bodiesToCheck: WeakMap<FastifyRequest, TextChecks>) {
  app.addHook('preValidation', (req, _reply, done) => {
    // A body request that carries no Content-Type at all (and so skipped the parsers) is refused too.
    if (BODY_METHODS.has(req.method) && req.routeOptions.schema?.body) {
      const ct = req.headers['content-type'];
      if (!ct || !/^application\/json\s*(;|$)/i.test(ct)) return done(new UnsupportedMediaTypeError(ct));
    }
    // Lists over their schema's bound are named and cut before anything else walks the body.
    const bodySchema = req.routeOptions.schema?.body;
    if (bodySchema && req.body !== null && typeof req.body === 'object') {
      const cut = cutListsToBounds(req.body, bodySchema, req.routeOptions.config?.batchItemSchemas);
      if (cut.request.length > 0) oversizeLists.set(req, cut.request);
      if (cut.items.size > 0) refuseBatchItems(req, cut.items);
    }
    // NUL and lone surrogates, wherever they are (known or ignored fields, batch items, keys): one entry each.
    const bodyChecks = bodiesToCheck.get(req);
    let issues = [
      ...textIssues(req.params, ['path']),
      ...queryEncodingIssues(req.url),
      ...textIssues(req.query, ['query']),
      ...(bodyChecks ? textIssues(req.body, ['body'], bodyChecks) : []),
    ];
    // In a batch, a problem inside an item fails that item alone (docs/api.md, "Batches"); the
    // envelope's fail the request.
    if (bodyChecks && issues.length > 0 && req.routeOptions.url?.startsWith(`${API_PREFIX}/batch/`)) {
      const byItem = new Map<number, ValidationIssue[]>();
      issues = issues.filter((issue) => {
        const [root, items, index] = issue.loc;
        if (root !== 'body' || items !== 'items' || typeof index !== 'number') return true;
        byItem.set(index, [...(byItem.get(index) ?? []), issue]);
        return false;
      });
      if (byItem.size > 0) refuseBatchItems(req, byItem);
    }
    done(issues.length > 0 ? new ValidationError(issues) : undefined);
  });

  // A body whose lists were cut answers 422 even when what was left passed its schema.
  app.addHook('preHandler', (req, _reply, done) => {
    const oversize = oversizeLists.get(req);
    done(oversize ? new ValidationError(oversize) : undefined);
  });
}

/** 405 when the path exists with other methods, 404 otherwise. */
function installNotFound(app: FastifyInstance) {
  const knownRoutes: { pattern: RegExp; method: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) knownRoutes.push({ pattern: routePattern(route.url), method: String(method) });
  });
  app.setNotFoundHandler((req, reply) => {
    const path = (req.raw.url ?? '/').split('?')[0] ?? '/';
    const allowed = [...new Set(knownRoutes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    return send(reply, allowed.length > 0 ? new MethodNotAllowedError(allowed.sort()) : new RouteNotFoundError());
  });
}

export { newRequestId };
