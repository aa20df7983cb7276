import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Carrier, CarrierCreate, CarrierListQuery, CarrierPage, CarrierUpdate } from './carriers.schema.js';
import type { CarriersService } from './carriers.service.js';

export function carrierRoutes(
  app: FastifyInstance,
  carriers: CarriersService,
  opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number },
) {
  const carrier = resourceRoutes(app, carriers, {
    collection: RECORD_KINDS.carriers.collection,
    noun: RECORD_KINDS.carriers.noun,
    tag: RECORD_KINDS.carriers.plural,
    readScope: 'read:carriers',
    writeScope: 'write:carriers',
    createSchema: CarrierCreate,
    updateSchema: CarrierUpdate,
    recordSchema: Carrier,
    pageSchema: CarrierPage,
    listQuery: CarrierListQuery,
    batchOperations: ['create', 'update', 'upsert'],
    batchBodyLimit: opts.batchBodyLimit,
    ...(opts.batchDeadlineMs ? { batchDeadlineMs: opts.batchDeadlineMs } : {}),
    readCache: opts.readCache,
    dependsOn: ['carriers'],
  });
  app.get('/v2/tms-api/carriers', carrier.list);
  app.post('/v2/tms-api/carriers', carrier.create);
  app.get('/v2/tms-api/carriers/:external_reference_id', carrier.get);
  app.put('/v2/tms-api/carriers/:external_reference_id', carrier.update);
  app.delete('/v2/tms-api/carriers/:external_reference_id', carrier.delete);
  app.post('/v2/tms-api/batch/carriers', carrier.batch);
}
