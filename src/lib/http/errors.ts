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

export abstract class ApiError extends Error {
  abstract readonly status: number;
  abstract body(): Record<string, unknown>;
  headers(): Record<string, string> {
    return {};
  }
}

export class DetailError extends ApiError {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
  body() {
    return { detail: this.detail };
  }
}

export type ResourceKind = 'Customer' | 'Carrier' | 'Location' | 'Load' | 'Market rate snapshot' | 'API key' | 'Organization' | 'User';

export class NotFoundError extends DetailError {
  constructor(kind: ResourceKind, externalReferenceId: string) {
    super(404, `${kind} with external_reference_id '${externalReferenceId}' not found`);
  }
}

export class NotFoundByIdError extends DetailError {
  constructor(kind: ResourceKind, id: string) {
    super(404, `${kind} with id '${id}' not found`);
  }
}

export class ConflictError extends DetailError {
  constructor(detail: string) {
    super(409, detail);
  }
  static duplicate(kind: ResourceKind, externalReferenceId: string): ConflictError {
    return new ConflictError(`${kind} with external_reference_id '${externalReferenceId}' already exists`);
  }
}

export class ValidationError extends ApiError {
  readonly status = 422;
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
  }
  static single(loc: LocPart[], msg: string, type = 'value_error'): ValidationError {
    return new ValidationError([{ type, loc, msg }]);
  }
  body() {
    return { detail: this.issues };
  }
  /** The same problems, found inside a batch item: locations are rewritten under `body.items[i].<kind>`. */
  nestedUnder(prefix: LocPart[]): ValidationError {
    return new ValidationError(
      this.issues.map((i) => ({ ...i, loc: i.loc[0] === 'body' ? [...prefix, ...i.loc.slice(1)] : i.loc })),
    );
  }
}

export class UnauthorizedError extends ApiError {
  readonly status = 401;
  constructor() {
    super('Invalid or missing API key');
  }
  body() {
    return { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key' } };
  }
}

export class ForbiddenError extends ApiError {
  readonly status = 403;
  constructor(readonly scope: string) {
    super(`API key does not have the required scope: ${scope}`);
  }
  body() {
    return { error: { code: 'FORBIDDEN', message: this.message } };
  }
}

export class RateLimitedError extends ApiError {
  readonly status = 429;
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
    super(503, 'Service temporarily unavailable');
  }
  override headers() {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

export class MalformedJsonError extends DetailError {
  constructor(reason: string) {
    super(400, `Malformed JSON body: ${reason}`);
  }
}

export class UnsupportedMediaTypeError extends DetailError {
  constructor(received: string | undefined) {
    super(
      415,
      received
        ? `Unsupported Content-Type '${received}': send the body as JSON with 'Content-Type: application/json'`
        : `Missing Content-Type: send the body as JSON with 'Content-Type: application/json'`,
    );
  }
}

export class PayloadTooLargeError extends DetailError {
  constructor(limitBytes: number) {
    super(413, `Request body is larger than the limit of ${limitBytes} bytes`);
  }
}
