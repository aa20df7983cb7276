import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { guardedRead, principalOf } from '../../lib/http/auth.js';
import { RefOrIdParams } from '../shared/route-schemas.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Load, LoadCreate, LoadListQuery, LoadPage, LoadRecommendations, LoadUpdate } from './loads.schema.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { LoadsService } from './loads.service.js';

export function loadRoutes(
  app: FastifyInstance,
  loads: LoadsService,
  opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs: number },
) {
  resourceRoutes(app, loads, {
    collection: 'loads',
    noun: 'load',
    tag: 'Loads',
    readScope: 'read:loads',
    writeScope: 'write:loads',
    createSchema: LoadCreate,
    updateSchema: LoadUpdate,
    recordSchema: Load,
    pageSchema: LoadPage,
    listQuery: LoadListQuery,
    batchOperations: ['create', 'update', 'upsert', 'delete'],
    batchBodyLimit: opts.batchBodyLimit,
    readCache: opts.readCache,
      dependsOn: ['loads', 'customers', 'carriers', 'locations', 'users', 'market_rates'],
    // An open load's recommendations weigh recency by today's date: computed afresh every time.
    cacheable: (load) => !OPEN_STATUSES.has((load as { status: string }).status),
    // Batch loads finish or answer within 60 seconds (spec section 8); the default 55 s leaves room to answer.
    batchDeadlineMs: opts.batchDeadlineMs,
    // PostgreSQL: a load read and the key check are one statement (src/lib/db/load-documents.ts).
    foldsKeyCheck: true,
  });

  app.withTypeProvider<TypeBoxTypeProvider>().get('/v2/tms-api/loads/:external_reference_id/carrier-recommendations', {
    config: { scope: 'read:loads', foldsKeyCheck: true },
    schema: {
      tags: ['Loads'],
      operationId: 'getLoadCarrierRecommendations',
      summary: 'Carriers that ran this load’s lane, best first',
      description: 'For any load, open or not: the carriers with delivered loads on its lane (origins and destinations within 100 miles, same equipment), ranked by recency-weighted lane history. The carrier already assigned to the load is left out.',
      params: RefOrIdParams,
      response: { 200: Type.Ref(LoadRecommendations, { description: 'The load’s carrier recommendations, best first (at most 10).' }) },
    },
    handler: async (req) => {
      const orgId = principalOf(req).orgId;
      const ref = await loads.refOf(orgId, req.params.external_reference_id);
      return guardedRead(req, (g) => loads.recommendationsFor(orgId, ref, g));
    },
  });
}
