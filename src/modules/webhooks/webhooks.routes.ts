import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { keyActor } from '../audit/audit.js';
import { ERRORS } from '../../lib/http/errors.js';
import {
  WebhookAttempt,
  WebhookAttemptListQuery,
  WebhookAttemptPage,
  WebhookDelivery,
  WebhookDeliveryListQuery,
  WebhookDeliveryPage,
  WebhookEndpoint,
  WebhookEndpointCreate,
  WebhookEndpointIdParams,
  WebhookEndpointListQuery,
  WebhookEndpointPage,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
  WebhookReplay,
  WebhookReplayResult,
  WebhookSecret,
} from './webhooks.schema.js';
import type { WebhooksService } from './webhooks.service.js';

const tags = ['Webhooks'];
const config = { scope: 'write:webhooks' } as const;
// Routes addressed by an endpoint id answer 404 for an id not of the caller's organization.
const notFound = {
  404: { description: 'No webhook endpoint with this id in your organization: {"detail":"Webhook endpoint with id \'whe_…\' not found"}.', $ref: 'Detail#' },
};

// A write's 409 also covers an Idempotency-Key still being processed
// (docs/api.md, "Safe retries: `Idempotency-Key`"), as every write's does.
const conflict = (what: string) => ({ 409: { description: `${what} Also: ${ERRORS.idempotency_in_progress.description}`, $ref: 'Detail#' } });
const tooMany = conflict(
  'The organization already has as many webhook endpoints as it may (WEBHOOK_MAX_ENDPOINTS, default 20): {"detail":"This organization already has 20 webhook endpoints, …"}.',
);
const replayRunning = conflict(
  'A replay of this endpoint still has deliveries pending (one replay runs per endpoint at a time): {"detail":"A replay of this endpoint is still running (…)"}.',
);

/** The webhook endpoints API (docs/webhooks.md, "Endpoints: `/v2/tms-api/webhook-endpoints` (scope `write:webhooks`)"). */
export function webhookRoutes(app: FastifyInstance, webhooks: WebhooksService) {
  endpointRoutes(app, webhooks);
  endpointActionRoutes(app, webhooks);
}

/** Create, list, get, update and delete endpoints. */
function endpointRoutes(app: FastifyInstance, webhooks: WebhooksService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/v2/tms-api/webhook-endpoints', {
    config,
    schema: {
      tags,
      operationId: 'createWebhookEndpoint',
      summary: 'Add a webhook endpoint',
      description:
        'Events committed from now on are POSTed to `url`, signed per Standard Webhooks v1 (headers webhook-id, webhook-timestamp, webhook-signature). The `secret` is shown only in this answer and on rotation. 422 on `["body","url"]` for a URL that is not https, whose host does not resolve, or that points to a loopback, private, link-local or other non-public address (one message for the last two, naming no address). 409 past the organization\'s endpoint limit (WEBHOOK_MAX_ENDPOINTS, default 20, enabled and disabled endpoints alike).',
      body: WebhookEndpointCreate,
      response: {
        201: Type.Ref(WebhookEndpointWithSecret, { description: 'The endpoint, with its signing secret (shown only here and on rotation).' }),
        ...tooMany,
      },
    },
    handler: async (req, reply) => reply.code(201).send(await webhooks.create(principalOf(req).orgId, req.body, keyActor(principalOf(req), req.ip))),
  });
  r.get('/v2/tms-api/webhook-endpoints', {
    config,
    schema: {
      tags,
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints',
      querystring: WebhookEndpointListQuery,
      response: { 200: Type.Ref(WebhookEndpointPage, { description: 'A page of webhook endpoints (without secrets).' }) },
    },
    handler: (req) => webhooks.list(principalOf(req).orgId, req.query),
  });
  r.get('/v2/tms-api/webhook-endpoints/:id', {
    config,
    schema: {
      tags,
      operationId: 'getWebhookEndpoint',
      summary: 'Get a webhook endpoint (without its secret)',
      params: WebhookEndpointIdParams,
      response: { 200: Type.Ref(WebhookEndpoint, { description: 'The webhook endpoint.' }), ...notFound },
    },
    handler: (req) => webhooks.get(principalOf(req).orgId, req.params.id),
  });
  r.put('/v2/tms-api/webhook-endpoints/:id', {
    config,
    schema: {
      tags,
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint, or disable or enable it',
      description:
        'Only the fields sent change. `status: disabled` fails its pending deliveries; `status: enabled` resumes with the events committed from then on (replay the rest).',
      params: WebhookEndpointIdParams,
      body: WebhookEndpointUpdate,
      response: { 200: Type.Ref(WebhookEndpoint, { description: 'The endpoint as updated.' }), ...notFound },
    },
    handler: (req) => webhooks.update(principalOf(req).orgId, req.params.id, req.body, keyActor(principalOf(req), req.ip)),
  });
  r.delete('/v2/tms-api/webhook-endpoints/:id', {
    config,
    schema: {
      tags,
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint and its delivery log',
      params: WebhookEndpointIdParams,
      response: { 204: Type.Null({ description: 'Deleted: no body.' }), ...notFound },
    },
    handler: async (req, reply) => {
      await webhooks.remove(principalOf(req).orgId, req.params.id, keyActor(principalOf(req), req.ip));
      return reply.code(204).send(null);
    },
  });
}

/** An endpoint's secret rotation, its delivery and attempt logs, and replay (registered after the endpoints, as before). */
function endpointActionRoutes(app: FastifyInstance, webhooks: WebhooksService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/v2/tms-api/webhook-endpoints/:id/rotate-secret', {
    config,
    schema: {
      tags,
      operationId: 'rotateWebhookSecret',
      summary: 'Replace the signing secret',
      description:
        'The previous secret keeps signing beside the new one for 24 hours (two signatures in webhook-signature); a second rotation within them drops the oldest.',
      params: WebhookEndpointIdParams,
      response: { 200: Type.Ref(WebhookSecret, { description: 'The new signing secret.' }), ...notFound },
    },
    handler: (req) => webhooks.rotateSecret(principalOf(req).orgId, req.params.id, keyActor(principalOf(req), req.ip)),
  });
  r.get('/v2/tms-api/webhook-endpoints/:id/deliveries', {
    config,
    schema: {
      tags,
      operationId: 'listWebhookDeliveries',
      summary: 'The delivery log of an endpoint, newest first',
      params: WebhookEndpointIdParams,
      querystring: WebhookDeliveryListQuery,
      response: { 200: Type.Ref(WebhookDeliveryPage, { description: 'A page of deliveries, newest first.' }), ...notFound },
    },
    handler: (req) => webhooks.deliveries(principalOf(req).orgId, req.params.id, req.query),
  });
  r.get('/v2/tms-api/webhook-endpoints/:id/attempts', {
    config,
    schema: {
      tags,
      operationId: 'listWebhookAttempts',
      summary: 'Every attempt made to an endpoint, newest first',
      description:
        "The delivery log keeps each delivery's last outcome; this keeps every attempt (a 500 before a delivered retry stays visible): status, response status, duration, error and the start of the answer (2 KiB). Kept as long as their delivery (EVENT_RETENTION_DAYS).",
      params: WebhookEndpointIdParams,
      querystring: WebhookAttemptListQuery,
      response: { 200: Type.Ref(WebhookAttemptPage, { description: 'A page of attempts, newest first.' }), ...notFound },
    },
    handler: (req) => webhooks.attempts(principalOf(req).orgId, req.params.id, req.query),
  });
  r.post('/v2/tms-api/webhook-endpoints/:id/replay', {
    config,
    schema: {
      tags,
      operationId: 'replayWebhookEvents',
      summary: 'Send events to the endpoint again',
      description:
        '`{"after_sequence":N}`: the events after N that the endpoint was already given (at most 10,000, oldest first); or `{"event_ids":[…]}`: those events (422 names any unknown one). Only the endpoint’s event types; each keeps its webhook-id. One replay runs per endpoint at a time: while deliveries an earlier replay queued are pending, 409.',
      params: WebhookEndpointIdParams,
      body: WebhookReplay,
      response: { 202: Type.Ref(WebhookReplayResult, { description: 'How many deliveries were queued.' }), ...notFound, ...replayRunning },
    },
    handler: async (req, reply) =>
      reply.code(202).send(await webhooks.replay(principalOf(req).orgId, req.params.id, req.body, keyActor(principalOf(req), req.ip))),
  });
}

/** The shared schemas of these routes, for the OpenAPI document. */
export const WEBHOOK_SCHEMAS = [
  WebhookEndpoint,
  WebhookDelivery,
  WebhookAttempt,
  WebhookEndpointWithSecret,
  WebhookEndpointPage,
  WebhookSecret,
  WebhookDeliveryPage,
  WebhookAttemptPage,
  WebhookReplayResult,
];
