import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { guardedRead, principalOf } from '../../lib/http/auth.js';
import { RefOrIdParams } from '../shared/route-schemas.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Load, LoadCreate, LoadListQuery, LoadPage, LoadRecommendations, LoadUpdate, RecommendationsQuery } from './loads.schema.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { LoadsService } from './loads.service.js';

export function loadRoutes(
  app: FastifyInstance,
  loads: LoadsService,
  opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs: number },
) {
  const load = resourceRoutes(app, loads, {
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
  app.get('/v2/tms-api/loads', load.list);
  app.post('/v2/tms-api/loads', load.create);
  app.get('/v2/tms-api/loads/:external_reference_id', load.get);
  app.put('/v2/tms-api/loads/:external_reference_id', load.update);
  app.delete('/v2/tms-api/loads/:external_reference_id', load.delete);
  app.post('/v2/tms-api/batch/loads', load.batch);

  app.withTypeProvider<TypeBoxTypeProvider>().get('/v2/tms-api/loads/:external_reference_id/carrier-recommendations', {
    config: { scope: 'read:loads', foldsKeyCheck: true },
    schema: {
      tags: ['Loads'],
      operationId: 'getLoadCarrierRecommendations',
      summary: 'Carriers that ran this load’s lane, best first',
      description: [
        'For any load, open or not: the carriers with delivered loads on its lane (origins and destinations within 100 miles, same equipment), ranked by recency-weighted lane history. The carrier already assigned to the load is left out.',
        '',
        'Each entry carries its evidence, w being the weight of each history load (proximity × 0.5^(age in days/90)):',
        '- effective_loads = (Σw)² ÷ Σw² (2 decimals).',
        '- on_time.pickup / on_time.delivery: rate = Σw on-time scored ÷ Σw scored; scored = count of stops with an actual_arrival and a window; coverage = Σw scored ÷ Σw over all the carrier\'s lane stops of that kind (3 decimals). On time iff actual_arrival ≤ deadline (late_arrival, else early_arrival, as recorded with the arrival) + grace_minutes.',
        '- price.rate_vs_market = weighted median of total ÷ (market rate_per_mile on the lane as of the delivery date × total_distance) (3 decimals); priced_loads their count.',
        '- backhaul: the carrier\'s latest load on its way delivering within 100 miles of this origin 0–48 h before the first pickup.',
        '- confidence = round(50 + 50 × (1 − e^(−effective_loads/4)) × 1/(1+cv) × (0.5 + 0.5 × mean coverage)), 50–100; below 63, get more bids.',
        '- reasons: at most 3 sentences built from the above.',
        '',
        'rank_by=balanced orders by balanced_score = score × (0.5 + 0.5 × p) × clamp(1/rate_vs_market, 0.8, 1.2) × (1.25 with a backhaul), p = (Σw on time + 3 × 0.85) ÷ (Σw scored + 3) over deliveries. widen=true widens a lane of fewer than 3 carriers to 150 then 250 miles (weights 0.25 and 0.1).',
      ].join('\n'),
      params: RefOrIdParams,
      querystring: RecommendationsQuery,
      response: { 200: Type.Ref(LoadRecommendations, { description: 'The load’s carrier recommendations, best first (at most 10).' }) },
    },
    handler: async (req) => {
      const orgId = principalOf(req).orgId;
      const ref = await loads.refOf(orgId, req.params.external_reference_id);
      return guardedRead(req, (g) => loads.recommendationsFor(orgId, ref, g, { rankBy: req.query.rank_by as 'history' | 'balanced' | undefined, widen: req.query.widen }));
    },
  });
}
