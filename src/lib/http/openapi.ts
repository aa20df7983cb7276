import type { FastifyInstance, RouteOptions } from 'fastify';
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
        message: Type.String({ examples: ['Invalid or missing API key', 'API key does not have the required scope: write:loads'] }),
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
    { detail: Type.Array(Type.Ref(ValidationIssueSchema), { description: 'One entry per problem.' }) },
    { $id: 'ValidationErrorBody' },
  ),
  InternalError: Type.Object(
    { detail: Type.Literal('Internal server error'), request_id: Type.String() },
    { $id: 'InternalError' },
  ),
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

function replaceCiEnums(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(replaceCiEnums);
  if (!node || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  if (Array.isArray(obj[CI_ENUM])) {
    const values = obj[CI_ENUM] as string[];
    obj.enum = Array.isArray(obj.type) && obj.type.includes('null') ? [...values, null] : values;
    delete obj[CI_ENUM];
    const note = 'Accepted in any letter case; returned in this spelling.';
    obj.description = obj.description ? `${String(obj.description)} ${note}` : note;
  }
  delete obj[CANONICAL_TIMESTAMP];
  for (const v of Object.values(obj)) replaceCiEnums(v);
}

/**
 * Query parameters with a default (page, page_size, sort) are optional to callers: the schema lists them
 * as required only because the validator fills in the default. The document says what a client may omit.
 */
function optionalWhenDefaulted(doc: unknown): void {
  const paths = (doc as { paths?: Record<string, Record<string, { parameters?: { in?: string; required?: boolean; schema?: { default?: unknown } }[] }>> }).paths ?? {};
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      for (const p of op?.parameters ?? []) {
        if (p.in === 'query' && p.schema && 'default' in p.schema) p.required = false;
      }
    }
  }
}

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
        description:
          'Push customers, carriers, locations and loads from your TMS; read lane history and carrier recommendations. ' +
          'Every /v2/tms-api route needs the X-API-Key header. Decisions where the contract is silent are in docs/api.md.',
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
      replaceCiEnums(copy);
      optionalWhenDefaulted(copy);
      documentIdempotency(copy as unknown as Record<string, unknown>);
      return copy;
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/v2/tms-api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
