import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  DetailError,
  ERRORS,
  ForbiddenError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  InternalError,
  MalformedJsonError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  RouteNotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  ValidationError,
  renderError,
  type ApiError,
  type ErrorCode,
} from '../../../src/lib/http/errors.js';
import { errorResponses } from '../../../src/lib/http/openapi.js';
import { BodyTimeoutError } from '../../../src/lib/http/body-deadline.js';
import { EventsGoneError } from '../../../src/modules/events/events.service.js';

// One error table (src/lib/http/errors.ts): every error the service raises renders from it, and the
// OpenAPI document's error responses are generated from it.

const one: Record<ErrorCode, ApiError> = {
  malformed_json: new MalformedJsonError('Unexpected end of JSON input'),
  bad_request: new DetailError('bad_request', 'Malformed URL: the path is not valid percent-encoding'),
  unauthorized: new UnauthorizedError(),
  forbidden: new ForbiddenError('write:loads'),
  not_found: new NotFoundError('Load', 'LOAD-001'),
  route_not_found: new RouteNotFoundError(),
  method_not_allowed: new MethodNotAllowedError(['GET', 'POST']),
  request_timeout: new BodyTimeoutError(60_000),
  conflict: ConflictError.duplicate('Customer', 'CUST-ACME-001'),
  idempotency_in_progress: new IdempotencyKeyInProgressError(),
  idempotency_key_reused: new IdempotencyKeyReusedError(),
  gone: new EventsGoneError(12, 40),
  payload_too_large: new PayloadTooLargeError(1_048_576),
  unsupported_media_type: new UnsupportedMediaTypeError('text/plain'),
  validation: ValidationError.single(['body', 'name'], 'Field required', 'missing'),
  rate_limited: new RateLimitedError(30),
  internal: new InternalError('req_1'),
  unavailable: new ServiceUnavailableError(),
};

describe('the error table', () => {
  it('renders every code with its status, the D1 body and its headers', () => {
    const rendered = Object.fromEntries(Object.entries(one).map(([code, err]) => [code, renderError(err)]));
    expect(rendered).toEqual({
      malformed_json: { status: 400, headers: {}, body: { detail: 'Malformed JSON body: Unexpected end of JSON input' } },
      bad_request: { status: 400, headers: {}, body: { detail: 'Malformed URL: the path is not valid percent-encoding' } },
      unauthorized: {
        status: 401,
        headers: {},
        body: { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } },
      },
      forbidden: { status: 403, headers: {}, body: { error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: write:loads' } } },
      not_found: { status: 404, headers: {}, body: { detail: "Load with external_reference_id 'LOAD-001' not found" } },
      route_not_found: { status: 404, headers: {}, body: { detail: 'Not Found' } },
      method_not_allowed: { status: 405, headers: { Allow: 'GET, POST' }, body: { detail: 'Method Not Allowed' } },
      request_timeout: {
        status: 408,
        headers: {},
        body: {
          detail: "Request timed out: the body did not arrive within 60 seconds of the request's headers: send it faster, or split it into smaller requests",
        },
      },
      conflict: { status: 409, headers: {}, body: { detail: "Customer with external_reference_id 'CUST-ACME-001' already exists" } },
      idempotency_in_progress: {
        status: 409,
        headers: { 'Retry-After': '1' },
        body: { detail: 'A request with this Idempotency-Key is still being processed' },
      },
      idempotency_key_reused: {
        status: 422,
        headers: {},
        body: {
          detail: [
            {
              type: 'idempotency_key_reused',
              loc: ['header', 'idempotency-key'],
              msg: 'This Idempotency-Key was already used for a request with another method, path or body; use a new key for a new operation',
            },
          ],
        },
      },
      gone: {
        status: 410,
        headers: { 'X-Events-Kept-After': '40' },
        body: { detail: 'Events after sequence 12 are no longer kept; resynchronise with the list endpoints and updated_since' },
      },
      payload_too_large: {
        status: 413,
        headers: {},
        body: {
          detail:
            'Request body is larger than the limit of 1048576 bytes (1 MiB) for this endpoint: send a smaller body, or have the operator raise the server setting BODY_LIMIT_BYTES',
        },
      },
      unsupported_media_type: {
        status: 415,
        headers: {},
        body: { detail: "Unsupported Content-Type 'text/plain': send the body as JSON with 'Content-Type: application/json'" },
      },
      validation: { status: 422, headers: {}, body: { detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required' }] } },
      rate_limited: {
        status: 429,
        headers: { 'Retry-After': '30' },
        body: { error: { code: 'RATE_LIMITED', message: 'Rate limit exceeded. Please retry after 30 seconds.', retry_after: 30 } },
      },
      internal: { status: 500, headers: {}, body: { detail: 'Internal server error', request_id: 'req_1' } },
      unavailable: { status: 503, headers: { 'Retry-After': '5' }, body: { detail: 'Service temporarily unavailable' } },
    });
    for (const [code, err] of Object.entries(one)) expect(err.status, code).toBe(ERRORS[code as ErrorCode].status);
  });

  it('gives the OpenAPI error responses of a route from the table', () => {
    const write = errorResponses({ method: 'PUT', url: '/v2/tms-api/loads/:external_reference_id' }) as Record<string, { $ref: string }>;
    const read = errorResponses({ method: 'GET', url: '/v2/tms-api/loads' }) as Record<string, { $ref: string }>;
    expect(Object.keys(write).sort()).toEqual(['400', '401', '403', '404', '408', '409', '413', '415', '422', '429', '500', '503']);
    expect(Object.keys(read).sort()).toEqual(['401', '403', '422', '429', '500', '503']);
    for (const e of Object.values(ERRORS).filter((e) => e.scope !== 'routing' && e.scope !== 'feed')) expect(write[e.status]!.$ref).toBe(`${e.body}#`);
    // The change feed alone answers 410 (D11).
    const feed = errorResponses({ method: 'GET', url: '/v2/tms-api/events' }) as Record<string, { $ref: string }>;
    expect(Object.keys(feed).sort()).toEqual(['401', '403', '410', '422', '429', '500', '503']);
  });
});
