import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptionsWithHandler } from 'fastify';
import { Type, type TObject, type TSchema, type Static } from '@sinclair/typebox';
import { guardedRead, principalOf } from '../../lib/http/auth.js';
import type { KeyGuard } from '../../lib/http/principal.js';
import type { Scope } from '../accounts/scopes.js';
import {
  batchRequestDocument,
  batchRequestSchema,
  BatchResultSchema,
  type BatchItem,
  type BatchOperation,
  type BatchResult,
  type RunOptions,
} from './batch.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RefOrIdParams } from './route-schemas.js';
import { ValidationError } from '../../lib/http/errors.js';
import { addDocumentSchema, documentedBody } from '../../lib/http/openapi.js';
import { refusedBatchItems } from '../../lib/http/plumbing.js';

/** The service calls a resource with the standard endpoint set offers (list, CRUD, batch). */
export interface ResourceService<Create, Update, Rec, ListQuery> {
  /** `guard`: given only to a service that folds the key check into its statement (foldsKeyCheck). */
  list(orgId: string, query: ListQuery, guard?: KeyGuard | null): Promise<{ items: Rec[]; pagination: unknown }>;
  get(orgId: string, ref: string, guard?: KeyGuard | null): Promise<Rec>;
  create(orgId: string, input: Create): Promise<Rec>;
  update(orgId: string, ref: string, input: Update): Promise<Rec>;
  /** A body that failed its schema, answered with every other problem too (checks needing the database; docs/api.md, "Errors"). */
  withBodyProblems?(orgId: string, invalid: ValidationError, body: unknown, ref: string | null): Promise<ValidationError>;
  delete(orgId: string, refOrId: string): Promise<{ id: string }>;
  /** The external_reference_id a path names (it may be the service id, as DELETE takes it). */
  refOf?(orgId: string, refOrId: string): Promise<string>;
  batch(orgId: string, items: BatchItem[], opts: RunOptions): Promise<BatchResult>;
}

export interface ResourceRoutesOptions<C extends TObject, U extends TObject, Q extends TObject> {
  /** Plural path segment, e.g. `customers`: names the operations and the read cache's keys. */
  collection: string;
  /** Singular noun for summaries and the batch data object, e.g. `customer`. */
  noun: string;
  tag: string;
  readScope: Scope;
  writeScope: Scope;
  createSchema: C;
  updateSchema: U;
  recordSchema: TSchema & { $id?: string };
  pageSchema: TSchema & { $id?: string };
  listQuery: Q;
  batchOperations: readonly BatchOperation[];
  batchBodyLimit: number;
  /** Batch deadline: items not started by then are reported failed (503) rather than the request hanging. */
  batchDeadlineMs?: number;
  /** Serialised GET answers kept while what they depend on is unchanged (src/lib/http/read-cache.ts). */
  readCache?: ReadCache;
  /** The kinds of record an answer of this resource is built from (a load shows its customer's name). */
  dependsOn: readonly VersionedKind[];
  /** Whether a record's answer may be kept (loads: not an open load, whose recommendations age with time). */
  cacheable?: (record: unknown) => boolean;
  /** The service's get and list check the key in their one statement (see auth.ts, foldsKeyCheck). */
  foldsKeyCheck?: boolean;
}

/** The route options (config, schema, handler) of one standard endpoint; the routes file gives its URL. */
export type ResourceRoute = RouteShorthandOptionsWithHandler;

/** The six standard endpoints of a resource, each registered by its module's routes file under its literal URL. */
export interface ResourceRouteSet {
  list: ResourceRoute;
  create: ResourceRoute;
  get: ResourceRoute;
  update: ResourceRoute;
  delete: ResourceRoute;
  batch: ResourceRoute;
}

type RefOrId = Static<typeof RefOrIdParams>;
type AnyService = ResourceService<unknown, unknown, unknown, unknown>;

/**
 * A read answered from the read cache when what it depends on is unchanged, else read, serialised by
 * the route's own response serialiser (the same bytes as an answer not kept) and kept.
 */
async function cachedRead<T>(
  o: ResourceRoutesOptions<TObject, TObject, TObject>,
  req: FastifyRequest,
  reply: FastifyReply,
  orgId: string,
  key: string,
  read: () => Promise<T>,
  keep: (value: T) => boolean,
) {
  const cache = o.readCache;
  const snapshot = req.dataSnapshot;
  if (!cache?.enabled || !snapshot) return read();
  let body = await cache.lookup(snapshot, orgId, key);
  if (body === undefined) {
    const value = await read();
    if (!keep(value)) return value;
    body = reply.serialize(value) as string;
    // Kept only when nothing was written since the request arrived: then the counters read now are
    // those the answer was read under (an answer not kept, such as an open load, costs no read of them).
    const versions = await snapshot.versions(orgId);
    if (snapshot.unchanged()) cache.keep(snapshot, versions, orgId, key, o.dependsOn, body);
  }
  return reply.type('application/json; charset=utf-8').send(body);
}

/**
 * A body that failed its schema is answered with the problems of the checks that need the
 * database too, in one 422. A route error handler (the error goes on to the app's one handler): the
 * request never reached its handler or its preHandler hooks (an Idempotency-Key is not claimed).
 */
const withBodyProblems = (service: AnyService, refOf: (req: FastifyRequest) => string | null) => async (error: Error, req: FastifyRequest) => {
  const context = (error as { validationContext?: string }).validationContext;
  if (error instanceof ValidationError && context === 'body' && service.withBodyProblems && req.principal) {
    throw await service.withBodyProblems(req.principal.orgId, error, req.body, refOf(req));
  }
  throw error;
};

/** The external_reference_id a path names (DELETE takes the service id too). */
const refOf = (service: AnyService, orgId: string, refOrId: string) => (service.refOf ? service.refOf(orgId, refOrId) : refOrId);

/** GET one, GET the list: read scope, answers kept by the read cache. */
function readRoutes(
  service: AnyService,
  o: ResourceRoutesOptions<TObject, TObject, TObject>,
  names: { Noun: string; Plural: string },
): Pick<ResourceRouteSet, 'list' | 'get'> {
  const tags = [o.tag];
  const config = { scope: o.readScope, ...(o.foldsKeyCheck ? { foldsKeyCheck: true } : {}) };
  return {
    list: {
      config,
      schema: {
        tags,
        operationId: `list${names.Plural}`,
        summary: `List ${o.collection}`,
        querystring: o.listQuery,
        response: { 200: Type.Ref(o.pageSchema, { description: `A page of ${o.collection}, with pagination.` }) },
      },
      handler: async (req, reply) => {
        const orgId = principalOf(req).orgId;
        return cachedRead(
          o,
          req,
          reply,
          orgId,
          `${o.collection}\u0001${req.url}`,
          () => guardedRead(req, (g) => service.list(orgId, req.query, g)),
          () => true,
        );
      },
    },
    get: {
      config,
      schema: {
        tags,
        operationId: `get${names.Noun}`,
        summary: `Get a ${o.noun}`,
        params: RefOrIdParams,
        response: { 200: Type.Ref(o.recordSchema, { description: `The ${o.noun}.` }) },
      },
      handler: async (req, reply) => {
        const orgId = principalOf(req).orgId;
        const ref = await refOf(service, orgId, (req.params as RefOrId).external_reference_id);
        return cachedRead(
          o,
          req,
          reply,
          orgId,
          `${o.collection}\u0000${ref}`,
          () => guardedRead(req, (g) => service.get(orgId, ref, g)),
          (rec) => !o.cacheable || o.cacheable(rec),
        );
      },
    },
  };
}

/** The batch endpoint: up to 100 items, each applied on its own, under one deadline. */
function batchRoute(
  service: AnyService,
  o: ResourceRoutesOptions<TObject, TObject, TObject>,
  names: { Plural: string },
  bodies: { create: unknown; update: unknown },
): ResourceRoute {
  return {
    config: {
      scope: o.writeScope,
      swaggerTransform: documentedBody(batchRequestDocument(o.noun, o.batchOperations, bodies)),
      // Each item's data object is checked for unknown fields
      // (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`") with
      // its operation's schema.
      batchItemSchemas: { dataKey: o.noun, create: o.createSchema, update: o.updateSchema },
    },
    bodyLimit: o.batchBodyLimit,
    schema: {
      tags: [o.tag],
      operationId: `batch${names.Plural}`,
      summary: `Apply up to 100 ${o.batchOperations.join('/')} operations on ${o.collection}`,
      description: 'Items are applied in order, each on its own and atomically; the response is 200 whatever each item’s outcome.',
      body: batchRequestSchema(o.noun, o.batchOperations),
      response: { 200: Type.Ref(BatchResultSchema, { description: 'One result per item, in order: 200 whatever each item’s outcome.' }) },
    },
    handler: async (req, reply) => {
      const orgId = principalOf(req).orgId;
      return service.batch(orgId, (req.body as { items: BatchItem[] }).items, {
        requestId: String(req.id),
        refusedItems: refusedBatchItems(req),
        onError: (err) => req.log.error({ err }, 'batch item failed'),
        // One deadline for the whole request, counted from when it arrived (docs/api.md, "Batches").
        ...(o.batchDeadlineMs ? { deadlineMs: o.batchDeadlineMs, startedAt: Date.now() - reply.elapsedTime } : {}),
      });
    },
  };
}

/**
 * The standard endpoints of a resource, so every resource answers the same way: list, create (201),
 * get, partial update, delete (204) and its batch endpoint. The module's routes file registers each
 * under its URL, written out (`app.get('/v2/tms-api/customers', customer.list)`), in this order.
 */
export function resourceRoutes<C extends TObject, U extends TObject, Q extends TObject, Rec>(
  app: FastifyInstance,
  typedService: ResourceService<Static<C>, Static<U>, Rec, Static<Q>>,
  typedOptions: ResourceRoutesOptions<C, U, Q>,
): ResourceRouteSet {
  const service = typedService as AnyService;
  const o = typedOptions as ResourceRoutesOptions<TObject, TObject, TObject>;
  const tags = [o.tag];
  const Noun = o.noun.charAt(0).toUpperCase() + o.noun.slice(1);
  const Plural = o.collection.charAt(0).toUpperCase() + o.collection.slice(1);
  const record = (description: string) => Type.Ref(o.recordSchema, { description });
  // The request bodies are named components of the document (CustomerCreate, CustomerUpdate, …).
  const createBody = addDocumentSchema(app, `${Noun}Create`, o.createSchema);
  const updateBody = addDocumentSchema(app, `${Noun}Update`, o.updateSchema);
  const { list, get } = readRoutes(service, o, { Noun, Plural });
  return {
    list,
    create: {
      config: { scope: o.writeScope, swaggerTransform: documentedBody(createBody) },
      schema: { tags, operationId: `create${Noun}`, summary: `Create a ${o.noun}`, body: o.createSchema, response: { 201: record(`The ${o.noun} created.`) } },
      errorHandler: withBodyProblems(service, () => null),
      handler: async (req, reply) => reply.code(201).send(await service.create(principalOf(req).orgId, req.body)),
    },
    get,
    update: {
      config: { scope: o.writeScope, swaggerTransform: documentedBody(updateBody) },
      schema: {
        tags,
        operationId: `update${Noun}`,
        summary: `Update a ${o.noun} (only the fields sent change)`,
        params: RefOrIdParams,
        body: o.updateSchema,
        response: { 200: record(`The ${o.noun} as updated.`) },
      },
      errorHandler: withBodyProblems(service, (req) => (req.params as RefOrId).external_reference_id),
      handler: async (req) => {
        const orgId = principalOf(req).orgId;
        return service.update(orgId, await refOf(service, orgId, (req.params as RefOrId).external_reference_id), req.body);
      },
    },
    delete: {
      config: { scope: o.writeScope },
      schema: {
        tags,
        operationId: `delete${Noun}`,
        summary: `Delete a ${o.noun}`,
        params: RefOrIdParams,
        response: { 204: Type.Null({ description: `Deleted: no body.` }) },
      },
      handler: async (req, reply) => {
        await service.delete(principalOf(req).orgId, (req.params as RefOrId).external_reference_id);
        return reply.code(204).send(null);
      },
    },
    batch: batchRoute(service, o, { Plural }, { create: createBody, update: updateBody }),
  };
}
