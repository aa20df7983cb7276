import type { RecordName } from '../../domain/records.js';
import { isDatabaseUnavailable } from '../db/errors.js';
/**
 * The one error model. Every failure a handler or service can raise is one of these; the error
 * handler renders them. Two body shapes, as the specification requires: `{ error: { code, message } }`
 * for authentication, authorization and rate limiting; `{ detail }` for everything else.
 */

export type LocPart = string | number;

export interface ValidationIssue {
  type: string;
  loc: LocPart[];
  msg: string;
}

/** The body schemas of the OpenAPI document, one per shape of the specification (docs/api.md, "Errors"). */
export type ErrorBodySchema = 'ApiKeyError' | 'RateLimitError' | 'Detail' | 'ValidationErrorBody' | 'InternalError';

/** Which API routes can answer an error: every one, those addressing a record, those with a body, writes. */
export type ErrorScope = 'every' | 'record' | 'body' | 'write' | 'routing' | 'feed';

interface ErrorKind {
  status: number;
  body: ErrorBodySchema;
  scope: ErrorScope;
  /** What the OpenAPI document says of it. */
  description: string;
}

/** Every error the service answers: its status, body shape and where it can happen. */
export const ERRORS = {
  malformed_json: { status: 400, body: 'Detail', scope: 'body', description: 'The body is not valid JSON.' },
  bad_request: {
    status: 400,
    body: 'Detail',
    scope: 'routing',
    description: 'The request cannot be read (a path that is not valid percent-encoding, a Content-Length that does not match the body).',
  },
  unauthorized: { status: 401, body: 'ApiKeyError', scope: 'every', description: 'Missing, malformed, unknown or revoked API key.' },
  forbidden: { status: 403, body: 'ApiKeyError', scope: 'every', description: 'The key lacks the scope this operation needs; the message names it.' },
  not_found: { status: 404, body: 'Detail', scope: 'record', description: 'No record with this external_reference_id in your organization.' },
  route_not_found: { status: 404, body: 'Detail', scope: 'routing', description: 'No such path.' },
  method_not_allowed: { status: 405, body: 'Detail', scope: 'routing', description: 'The path exists with other methods (listed in Allow).' },
  request_timeout: {
    status: 408,
    body: 'Detail',
    scope: 'body',
    description:
      'The body did not arrive within the time limit after the headers (REQUEST_TIMEOUT_SECONDS, 60 s by default; an import part 10 minutes): the answer closes the connection; send the body faster, or split it.',
  },
  conflict: { status: 409, body: 'Detail', scope: 'write', description: 'Duplicate external_reference_id, or the record is still referenced.' },
  idempotency_in_progress: {
    status: 409,
    body: 'Detail',
    scope: 'write',
    description: 'A request with the same Idempotency-Key is still being processed (on any instance); retry after Retry-After (1 second).',
  },
  gone: {
    status: 410,
    body: 'Detail',
    scope: 'feed',
    description: 'The events after this sequence were pruned (retention): resynchronise with the list endpoints, then continue from X-Events-Kept-After.',
  },
  payload_too_large: {
    status: 413,
    body: 'Detail',
    scope: 'body',
    description:
      'The body is larger than the limit (by default 1 MiB, the server setting BODY_LIMIT_BYTES; batch endpoints 10 MiB, BATCH_BODY_LIMIT_BYTES); the detail names the limit and the setting. The answer may come before the body is sent whole: the server reads and discards the rest (up to 64 MiB) so the client can read it.',
  },
  unsupported_media_type: { status: 415, body: 'Detail', scope: 'body', description: "The body is not sent with 'Content-Type: application/json'." },
  validation: { status: 422, body: 'ValidationErrorBody', scope: 'every', description: 'Validation error in the body, query or path.' },
  idempotency_key_reused: {
    status: 422,
    body: 'ValidationErrorBody',
    scope: 'write',
    description: "The Idempotency-Key was already used with another method, path or body (type 'idempotency_key_reused').",
  },
  rate_limited: { status: 429, body: 'RateLimitError', scope: 'every', description: 'Per-minute or per-day limit of the key spent; see Retry-After.' },
  internal: { status: 500, body: 'InternalError', scope: 'every', description: 'Unexpected failure; quote request_id when reporting it.' },
  unavailable: { status: 503, body: 'Detail', scope: 'every', description: 'The database is unreachable; retry after the Retry-After seconds.' },
} as const satisfies Record<string, ErrorKind>;

export type ErrorCode = keyof typeof ERRORS;

export abstract class ApiError extends Error {
  abstract readonly code: ErrorCode;
  get status(): number {
    return ERRORS[this.code].status;
  }
  abstract body(): Record<string, unknown>;
  headers(): Record<string, string> {
    return {};
  }
}

export class DetailError extends ApiError {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
  ) {
    super(detail);
  }
  body() {
    return { detail: this.detail };
  }
}

/** A record kind's name (src/domain/records.ts), or an account's. */
export type ResourceKind = RecordName | 'API key' | 'Organization' | 'User';

export class NotFoundError extends DetailError {
  constructor(kind: ResourceKind, externalReferenceId: string) {
    super('not_found', `${kind} with external_reference_id '${externalReferenceId}' not found`);
  }
}

export class NotFoundByIdError extends DetailError {
  constructor(kind: ResourceKind, id: string) {
    super('not_found', `${kind} with id '${id}' not found`);
  }
}

export class ConflictError extends DetailError {
  constructor(detail: string) {
    super('conflict', detail);
  }
  static duplicate(kind: ResourceKind, externalReferenceId: string): ConflictError {
    return new ConflictError(`${kind} with external_reference_id '${externalReferenceId}' already exists`);
  }
}

/** A 422 lists at most this many problems, with `truncated: true` beside `detail` when there were more (docs/api.md "Bounds of a request"). */
export const MAX_VALIDATION_ISSUES = 100;

/** A 422's body: the first MAX_VALIDATION_ISSUES problems, and `truncated` when some were left out. */
export function validationBody(issues: ValidationIssue[]): { detail: ValidationIssue[]; truncated?: true } {
  return issues.length > MAX_VALIDATION_ISSUES ? { detail: issues.slice(0, MAX_VALIDATION_ISSUES), truncated: true } : { detail: issues };
}

export class ValidationError extends ApiError {
  readonly code = 'validation';
  constructor(readonly issues: ValidationIssue[]) {
    super(
      issues
        .slice(0, MAX_VALIDATION_ISSUES)
        .map((i) => `${i.loc.join('.')}: ${i.msg}`)
        .join('; '),
    );
  }
  static single(loc: LocPart[], msg: string, type = 'value_error'): ValidationError {
    return new ValidationError([{ type, loc, msg }]);
  }
  body() {
    return validationBody(this.issues);
  }
  /** The same problems, found inside a batch item: locations are rewritten under `body.items[i].<kind>`. */
  nestedUnder(prefix: LocPart[]): ValidationError {
    return new ValidationError(this.issues.map((i) => ({ ...i, loc: i.loc[0] === 'body' ? [...prefix, ...i.loc.slice(1)] : i.loc })));
  }
}

/** The key was used before for another method, path or body; its first use's answer stays. */
export class IdempotencyKeyReusedError extends ApiError {
  readonly code = 'idempotency_key_reused';
  constructor() {
    super('This Idempotency-Key was already used for a request with another method, path or body; use a new key for a new operation');
  }
  body() {
    return { detail: [{ type: 'idempotency_key_reused', loc: ['header', 'idempotency-key'], msg: this.message }] };
  }
}

/** The first request with this key has not answered yet (on this instance or another). */
export class IdempotencyKeyInProgressError extends DetailError {
  constructor() {
    super('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed');
  }
  override headers() {
    return { 'Retry-After': '1' };
  }
}

export class UnauthorizedError extends ApiError {
  readonly code = 'unauthorized';
  /** `message`: what was missing, when it is not the API key (the metrics token). */
  constructor(message = 'Invalid or missing API key: send it in the X-API-Key header') {
    super(message);
  }
  body() {
    return { error: { code: 'UNAUTHORIZED', message: this.message } };
  }
}

export class ForbiddenError extends ApiError {
  readonly code = 'forbidden';
  constructor(readonly scope: string) {
    super(`API key does not have the required scope: ${scope}`);
  }
  body() {
    return { error: { code: 'FORBIDDEN', message: this.message } };
  }
}

export class RateLimitedError extends ApiError {
  readonly code = 'rate_limited';
  constructor(readonly retryAfterSeconds: number) {
    super(`Rate limit exceeded. Please retry after ${retryAfterSeconds} seconds.`);
  }
  body() {
    return { error: { code: 'RATE_LIMITED', message: this.message, retry_after: this.retryAfterSeconds } };
  }
  override headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

export class ServiceUnavailableError extends DetailError {
  constructor(readonly retryAfterSeconds = 5) {
    super('unavailable', 'Service temporarily unavailable');
  }
  override headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

export class MalformedJsonError extends DetailError {
  constructor(reason: string) {
    super('malformed_json', `Malformed JSON body: ${reason}`);
  }
}

export class UnsupportedMediaTypeError extends DetailError {
  constructor(received: string | undefined) {
    super(
      'unsupported_media_type',
      received
        ? `Unsupported Content-Type '${received}': send the body as JSON with 'Content-Type: application/json'`
        : `Missing Content-Type: send the body as JSON with 'Content-Type: application/json'`,
    );
  }
}

/** 415 for a compressed body: the service reads bodies as sent (gzip bytes read as JSON said "not UTF-8"). */
export class UnsupportedContentEncodingError extends DetailError {
  constructor(received: string) {
    super('unsupported_media_type', `Unsupported Content-Encoding '${received}': send the body uncompressed (no Content-Encoding, or 'identity')`);
  }
}

/** 1048576 → "1 MiB" (exact sizes only; otherwise the bytes say it). */
function binarySize(bytes: number): string | null {
  if (bytes % 1_048_576 === 0) return `${bytes / 1_048_576} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return null;
}

/** The server setting that sets a route's body limit (README, Configuration). */
export type BodyLimitSetting = 'BODY_LIMIT_BYTES' | 'BATCH_BODY_LIMIT_BYTES';

export class PayloadTooLargeError extends DetailError {
  constructor(limitBytes: number, setting: BodyLimitSetting = 'BODY_LIMIT_BYTES') {
    const size = binarySize(limitBytes);
    const what = setting === 'BATCH_BODY_LIMIT_BYTES' ? 'batch endpoints' : 'this endpoint';
    const fix =
      setting === 'BATCH_BODY_LIMIT_BYTES' ? 'send fewer items per batch, or have the operator raise' : 'send a smaller body, or have the operator raise';
    super(
      'payload_too_large',
      `Request body is larger than the limit of ${limitBytes} bytes${size ? ` (${size})` : ''} for ${what}: ${fix} the server setting ${setting}`,
    );
  }
}

export class RouteNotFoundError extends DetailError {
  constructor() {
    super('route_not_found', 'Not Found');
  }
}

export class MethodNotAllowedError extends DetailError {
  constructor(readonly allowed: string[]) {
    super('method_not_allowed', 'Method Not Allowed');
  }
  override headers() {
    return { Allow: this.allowed.join(', ') };
  }
}

/** A failure nobody planned for: its body never carries more than the request id (no stack trace). */
export class InternalError extends ApiError {
  readonly code = 'internal';
  constructor(readonly requestId: string) {
    super('Internal server error');
  }
  body() {
    return { detail: 'Internal server error', request_id: this.requestId };
  }
}

/** A client error Fastify raised that the table does not name: its own status, the detail shape. */
export class OtherClientError extends DetailError {
  constructor(
    private readonly ownStatus: number,
    detail: string,
  ) {
    super('bad_request', detail);
  }
  override get status() {
    return this.ownStatus;
  }
}

/**
 * The one classification of a failure that is not already an ApiError (the API's error handler, a
 * batch item, the dashboard): a database out of reach is 503, a client error Fastify raised keeps its
 * status, anything else is the service's fault: 500 with the request's id. `log` hears about the last
 * two kinds (a warning and an error).
 */
export function classifyError(err: unknown, requestId: string, log?: { unavailable(err: unknown): void; internal(err: unknown): void }): ApiError {
  if (err instanceof ApiError) return err;
  if (isDatabaseUnavailable(err)) {
    log?.unavailable(err);
    return new ServiceUnavailableError();
  }
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return new OtherClientError(status, (err as Error).message);
  log?.internal(err);
  return new InternalError(requestId);
}

export interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The one rendering of an error: status, headers and body from the error table. */
export function renderError(err: ApiError): RenderedError {
  return { status: err.status, headers: err.headers(), body: err.body() };
}
