import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type, type TSchema } from '@sinclair/typebox';
import { API_PREFIX } from './auth.js';
import { CANONICAL_TIMESTAMP, CI_ENUM } from './validation.js';
import { ERRORS, type ErrorScope } from './errors.js';
import { documentIdempotency } from './idempotency.js';

const ValidationIssueSchema = Type.Object(
  {
    type: Type.String({ examples: ['missing', 'string_too_long', 'enum', 'value_error'] }),
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: "Starts with 'body', 'query' or 'path'; ends with the field." }),
    msg: Type.String({ examples: ['Field required'] }),
  },
  { $id: 'ValidationIssue' },
);

export const ErrorSchemas = {
  ApiKeyError: Type.Object(
    {
      error: Type.Object({
        code: Type.String({ enum: ['UNAUTHORIZED', 'FORBIDDEN'] }),
        message: Type.String({
          examples: ['Invalid or missing API key: send it in the X-API-Key header', 'API key does not have the required scope: write:loads'],
        }),
      }),
    },
    { $id: 'ApiKeyError', description: 'Authentication and authorization failures (401, 403).' },
  ),
  RateLimitError: Type.Object(
    {
      error: Type.Object({
        code: Type.Literal('RATE_LIMITED'),
        message: Type.String(),
        retry_after: Type.Integer({ description: 'Seconds until the spent window resets.' }),
      }),
    },
    { $id: 'RateLimitError' },
  ),
  Detail: Type.Object(
    { detail: Type.String({ examples: ["Customer with external_reference_id 'CUST-ACME-001' not found"] }) },
    { $id: 'Detail', description: 'Every other error: a message that says what to fix.' },
  ),
  ValidationIssue: ValidationIssueSchema,
  ValidationErrorBody: Type.Object(
    {
      detail: Type.Array(Type.Ref(ValidationIssueSchema), { maxItems: 100, description: 'One entry per problem, at most the first 100.' }),
      truncated: Type.Optional(Type.Literal(true, { description: 'Present (true) when there were more than 100 problems: only the first 100 are listed.' })),
    },
    { $id: 'ValidationErrorBody' },
  ),
  InternalError: Type.Object({ detail: Type.Literal('Internal server error'), request_id: Type.String() }, { $id: 'InternalError' }),
};

const ref = (id: string, description: string) => ({ description, $ref: `${id}#` });

/** Every failure an API route can answer, from the error table (src/lib/http/errors.ts), added to its responses. */
export function errorResponses(route: Pick<RouteOptions, 'method' | 'url'>): Record<string, unknown> {
  const methods = [route.method].flat().map(String);
  const hasBody = methods.some((m) => m === 'POST' || m === 'PUT');
  const applies: Record<ErrorScope, boolean> = {
    every: true,
    record: route.url.includes(':external_reference_id'),
    body: hasBody,
    write: hasBody || methods.includes('DELETE'),
    routing: false,
    feed: route.url.endsWith('/events'),
  };
  const out: Record<string, { description: string; $ref: string }> = {};
  for (const e of Object.values(ERRORS)) {
    if (!applies[e.scope]) continue;
    const seen = out[e.status];
    out[e.status] = seen ? { ...seen, description: `${seen.description} ${e.description}` } : ref(e.body, e.description);
  }
  return out;
}

/** A regular expression (ECMA 262, no flags) that matches exactly the spellings of `values` in any letter case. */
export function anyCasePattern(values: readonly string[]): string {
  const one = (v: string) =>
    [...v]
      .map((c) => {
        const lower = c.toLowerCase();
        const upper = c.toUpperCase();
        if (lower !== upper) return `[${upper}${lower}]`;
        return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
      })
      .join('');
  return `^(?:${values.map(one).join('|')})$`;
}

/** What the server accepts as a timestamp (src/lib/time.ts): ISO 8601, the offset optional (UTC), or a bare date. */
export const ACCEPTED_TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}(?:[Tt ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:[Zz]|[+-]\\d{2}:?\\d{2})?)?$';

/**
 * Input conventions the validators apply through private keywords, written out for every other tool:
 * - an enumeration accepted in any letter case becomes `anyOf` the canonical `enum` (what responses
 *   return) and a `pattern` matching every spelling the server accepts, so a validating proxy or a
 *   generated client accepts `PICKUP` as the server does;
 * - a timestamp accepted without an offset becomes a `pattern` of the accepted forms (a `date-time`
 *   format would refuse `2025-01-31T14:00:00`, which the server reads as UTC).
 */
function publishInputConventions(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(publishInputConventions);
  if (!node || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  if (Array.isArray(obj[CI_ENUM])) {
    const values = obj[CI_ENUM] as string[];
    const nullable = Array.isArray(obj.type) && obj.type.includes('null');
    delete obj[CI_ENUM];
    delete obj.type;
    obj.anyOf = [
      { type: 'string', enum: values, description: 'The canonical spelling, returned in responses.' },
      { type: 'string', pattern: anyCasePattern(values), description: 'The same values in any letter case.' },
      ...(nullable ? [{ type: 'null' }] : []),
    ];
    const note = `One of ${values.join(', ')}, accepted in any letter case and returned in this spelling.`;
    obj.description = obj.description ? `${String(obj.description)} ${note}` : note;
  }
  if (obj[CANONICAL_TIMESTAMP]) {
    const endOfDay = obj[CANONICAL_TIMESTAMP] === 'end-of-day';
    delete obj[CANONICAL_TIMESTAMP];
    delete obj.format;
    obj.pattern = ACCEPTED_TIMESTAMP_PATTERN;
    const note = endOfDay
      ? 'ISO 8601 date-time; without an offset it is read as UTC.'
      : 'ISO 8601 date-time; without an offset it is read as UTC, and a bare date as midnight UTC. Returned as UTC with milliseconds and Z.';
    obj.description = obj.description ? `${String(obj.description)} ${note}` : note;
    obj.examples = ['2025-01-31T14:00:00Z'];
  }
  // A nullable enumeration lists null among its values (else validators refuse every null).
  if (Array.isArray(obj.enum) && Array.isArray(obj.type) && obj.type.includes('null') && !obj.enum.includes(null)) obj.enum = [...obj.enum, null];
  for (const v of Object.values(obj)) publishInputConventions(v);
}

const HEADER_COMPONENTS: Record<string, { description: string; required?: boolean; schema: Record<string, unknown> }> = {
  RequestId: {
    description: 'Identifies the request in the service logs: the X-Request-Id you sent, else one generated. Quote it when reporting a problem.',
    required: true,
    schema: { type: 'string', minLength: 1 },
  },
  RateLimitLimit: {
    description:
      'Requests allowed per minute for this API key (default 100). Sent on every answer once the key is recognised, unless the deployment turned rate limits off.',
    schema: { type: 'integer', minimum: 0 },
  },
  RateLimitRemaining: {
    description: 'Requests left in the current UTC minute for this API key.',
    schema: { type: 'integer', minimum: 0 },
  },
  RateLimitReset: {
    description: 'When the current per-minute window resets, in Unix seconds.',
    schema: { type: 'integer', minimum: 0 },
  },
  RetryAfter: {
    description: 'Seconds to wait before sending the request again.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  IgnoredFields: {
    description:
      'The request fields this answer ignored (unknown body fields at any depth, unknown query parameters), comma-separated, e.g. `body.nmae, body.contacts[0].phone_number, query.custmer_id` (at most 100; a name that is not printable ASCII or has a comma is percent-encoded). Absent when nothing was ignored. Send `Prefer: handling=strict` to have them refused instead.',
    schema: { type: 'string' },
  },
  PreferenceApplied: {
    description: "RFC 7240: `handling=strict` when the request's `Prefer: handling=strict` was honoured.",
    schema: { type: 'string', enum: ['handling=strict'] },
  },
  EventsKeptAfter: {
    description: 'The oldest sequence still kept: after resynchronising from the list endpoints, continue the feed with after set to this value.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
};

const headerRef = (name: keyof typeof HEADER_COMPONENTS) => ({ $ref: `#/components/headers/${name}` });

/**
 * The headers every API answer carries (docs/api.md, "The OpenAPI document and the TypeScript client"),
 * declared on each response: X-Request-Id on all, X-RateLimit-* once the key is recognised (not on 401),
 * Retry-After on 429 and 503, and the event feed's X-Events-Kept-After on its 410.
 */
function declareResponseHeaders(doc: Record<string, unknown>): void {
  const components = (doc.components ??= {}) as Record<string, Record<string, unknown>>;
  Object.assign((components.headers ??= {}), HEADER_COMPONENTS);
  (components.parameters ??= {}).Prefer = {
    name: 'Prefer',
    in: 'header',
    required: false,
    description:
      'RFC 7240. `handling=strict`: unknown body fields (at any depth) and query parameters are refused with a 422 naming each one (`type` `unknown_field`, with a "did you mean" when a known name is one or two edits away) instead of being ignored; the answer carries `Preference-Applied: handling=strict`. In a batch, an item with an unknown field fails alone. A key made strict answers every request this way.',
    schema: { type: 'string' },
    example: 'handling=strict',
  };
  const paths = (doc.paths ?? {}) as Record<string, Record<string, { responses?: Record<string, { headers?: Record<string, unknown> }> }>>;
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.startsWith(API_PREFIX)) continue;
    for (const op of Object.values(operations)) {
      if (op && typeof op === 'object') {
        const withParams = op as { parameters?: unknown[] };
        withParams.parameters = [...(withParams.parameters ?? []), { $ref: '#/components/parameters/Prefer' }];
      }
      for (const [status, response] of Object.entries(op?.responses ?? {})) {
        const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('RequestId') };
        if (status !== '401') {
          headers['X-RateLimit-Limit'] = headerRef('RateLimitLimit');
          headers['X-RateLimit-Remaining'] = headerRef('RateLimitRemaining');
          headers['X-RateLimit-Reset'] = headerRef('RateLimitReset');
        }
        if (status === '429' || status === '503') headers['Retry-After'] = headerRef('RetryAfter');
        // Fields are looked at once the key is let in (not on 401, 403 or 429).
        if (!['401', '403', '429'].includes(status)) {
          headers['Lanebridge-Ignored-Fields'] = headerRef('IgnoredFields');
          headers['Preference-Applied'] = headerRef('PreferenceApplied');
        }
        if (status === '410') headers['X-Events-Kept-After'] = headerRef('EventsKeptAfter');
        response.headers = { ...headers, ...(response.headers ?? {}) };
      }
    }
  }
}

/**
 * Query parameters with a default (page, page_size, sort) are optional to callers: the schema lists them
 * as required only because the validator fills in the default. The document says what a client may omit.
 */
function optionalWhenDefaulted(doc: unknown): void {
  const paths =
    (doc as { paths?: Record<string, Record<string, { parameters?: { in?: string; required?: boolean; schema?: { default?: unknown } }[] }>> }).paths ?? {};
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      for (const p of op?.parameters ?? []) {
        if (p.in === 'query' && p.schema && 'default' in p.schema) p.required = false;
      }
    }
  }
}

/** The document's introduction: what an integrator needs before the first call, in the document itself. */
const API_DESCRIPTION = [
  'Push customers, carriers, locations and loads from your TMS; read lane history, carrier recommendations and the change feed; receive it by webhook.',
  '',
  "**Authentication.** Every `/v2/tms-api` operation needs the `X-API-Key` header (`lbk_` followed by 64 hexadecimal characters). A missing or invalid key answers 401, a key without the operation's scope 403 naming it (`read:<resource>` for GET, `write:<resource>` for writes).",
  '',
  '**Errors.** Authentication, authorization and rate limiting answer `{"error":{"code","message"}}`; every other error `{"detail": …}`, where a 422 lists every problem as `{type, loc, msg}` with `loc` starting at `body`, `query`, `path` or `header`.',
  '',
  '**Input conventions.** Enumerations are accepted in any letter case and returned in one spelling (the `enum` of each field; `stop_type` is returned as Pickup, Delivery, Both). Timestamps are ISO 8601; one without an offset is read as UTC; every timestamp is returned in UTC with milliseconds and `Z`.',
  '',
  '**Unknown fields.** Unknown body fields and query parameters are ignored, as the original service does, and every answer that ignored something names them in `Lanebridge-Ignored-Fields` (`body.nmae, body.contacts[0].phone_number, query.custmer_id`). Send `Prefer: handling=strict` (or use a key made strict) to have them refused: 422 with one `unknown_field` entry each and a "did you mean" when a known name is close. A carrier contact with no name, email or phone is refused in every mode.',
  '',
  '**Lists** answer `{items, pagination}` and take `page` (from 1), `page_size` (1 to 100, default 50), `sort` (a field, `-field` for descending) and `updated_since` / `created_since` for delta sync; walk pages until `pagination.has_next` is false.',
  '',
  '**Rate limits.** Each key has a per-minute (default 100) and a per-day (default 10,000) budget; answers carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`, and a 429 carries `Retry-After`. A 503 (database unreachable) also carries `Retry-After`.',
  '',
  '**Safe retries.** Every POST, PUT and DELETE takes an optional `Idempotency-Key`: the same key with the same request answers the stored answer again (`Idempotent-Replayed: true`) and writes nothing.',
  '',
  "**Webhooks** are signed per Standard Webhooks v1 (`webhook-id`, `webhook-timestamp`, `webhook-signature` = `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with the secret's bytes after `whsec_`).",
].join('\n');

/**
 * A route whose document shows another request body than the one its validator checks: the batch
 * endpoints validate each item's data object on its own (so one bad item fails alone), while the
 * document shows every item's exact schema; single-record writes name their body schema.
 */
export function documentedBody(body: unknown) {
  return ({ schema, url }: { schema: FastifySchema; url: string }) => ({ schema: { ...schema, body } as FastifySchema, url });
}

/** Registers a request body schema as a named component of the document (a copy: validators keep theirs). */
export function addDocumentSchema(app: FastifyInstance, id: string, schema: TSchema): { $ref: string } {
  if (!app.getSchema(id)) app.addSchema({ ...structuredClone(schema), $id: id });
  return { $ref: `${id}#` };
}

// The docs page's branding: served by the page itself (no outside request).
const LANEBRIDGE_MARK =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0b3d5c"/>' +
  '<path d="M4 22 Q16 6 28 22" fill="none" stroke="#f2a900" stroke-width="3"/><path d="M4 24h24" stroke="#fff" stroke-width="2"/>' +
  '<path d="M10 24v-6M16 24v-9M22 24v-6" stroke="#fff" stroke-width="2"/></svg>';
const LANEBRIDGE_LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 220 40" width="220" height="40"><rect x="2" y="4" width="32" height="32" rx="6" fill="#0b3d5c"/>' +
  '<path d="M6 26 Q18 10 30 26" fill="none" stroke="#f2a900" stroke-width="3"/><path d="M6 28h24" stroke="#fff" stroke-width="2"/>' +
  '<text x="44" y="28" font-family="Helvetica, Arial, sans-serif" font-size="22" font-weight="700" fill="#ffffff">Lanebridge API</text></svg>';
const DOCS_CSS = [
  '.swagger-ui .topbar { background-color: #0b3d5c; }',
  '.swagger-ui .topbar .download-url-wrapper { display: none; }',
  '.swagger-ui .info .title small.version-stamp { background-color: #f2a900; }',
  '.swagger-ui .btn.authorize { border-color: #0b3d5c; color: #0b3d5c; }',
].join('\n');

export async function installOpenApi(app: FastifyInstance, sharedSchemas: TSchema[]) {
  for (const s of [...Object.values(ErrorSchemas), ...sharedSchemas]) app.addSchema(s);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX) || !route.config?.scope) return;
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    schema.response = { ...errorResponses(route), ...((schema.response as object | undefined) ?? {}) };
    schema.security = [{ ApiKey: [] }];
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Lanebridge freight integration API',
        version: '2.0.0',
        license: { name: 'Proprietary', identifier: 'LicenseRef-Lanebridge-Proprietary' },
        description: API_DESCRIPTION,
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
      tags: [
        { name: 'Customers', description: 'Customers of the broker.' },
        { name: 'Carriers', description: 'Carriers and their contacts.' },
        { name: 'Locations', description: 'Pickup and delivery places, geocoded offline.' },
        { name: 'Loads', description: 'Shipments with stops, money and people; lane history and carrier recommendations.' },
        { name: 'Market rates', description: 'Market rate snapshots per lane, the source of max_buy_rate.' },
        { name: 'Events', description: 'The change feed: every committed change, in commit order.' },
        { name: 'Webhooks', description: 'Endpoints that receive the change feed, signed (Standard Webhooks), retried and replayable.' },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (documentObject) => {
      const doc = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      // A copy: the document may share schema objects with the live validators.
      const copy = structuredClone(doc);
      publishInputConventions(copy);
      optionalWhenDefaulted(copy);
      documentIdempotency(copy as unknown as Record<string, unknown>);
      declareResponseHeaders(copy as unknown as Record<string, unknown>);
      return copy;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // Stricter than the plugin's default: no outside host at all (it allows validator.swagger.io and any https: font or style).
    transformStaticCSP: (header) => header.replace(/ validator\.swagger\.io/g, '').replace(/ https:/g, ''),
    validatorUrl: false,
    theme: {
      title: 'Lanebridge API reference',
      favicon: [{ filename: 'lanebridge.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: LANEBRIDGE_MARK }],
      css: [{ filename: 'lanebridge.css', content: DOCS_CSS }],
    },
    logo: { type: 'image/svg+xml', content: LANEBRIDGE_LOGO, href: '/docs', target: '_self' },
    uiConfig: { docExpansion: 'list', deepLinking: true, defaultModelsExpandDepth: 0, displayRequestDuration: true, tryItOutEnabled: false },
  });
  app.get('/v2/tms-api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
