import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Location, LocationCreate, LocationListQuery, LocationPage, LocationUpdate } from './locations.schema.js';
import type { LocationsService } from './locations.service.js';

export function locationRoutes(
  app: FastifyInstance,
  locations: LocationsService,
  opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number },
) {
  const location = resourceRoutes(app, locations, {
    collection: RECORD_KINDS.locations.collection,
    noun: RECORD_KINDS.locations.noun,
    tag: RECORD_KINDS.locations.plural,
    readScope: 'read:locations',
    writeScope: 'write:locations',
    createSchema: LocationCreate,
    updateSchema: LocationUpdate,
    recordSchema: Location,
    pageSchema: LocationPage,
    listQuery: LocationListQuery,
    batchOperations: ['create', 'update', 'upsert'],
    batchBodyLimit: opts.batchBodyLimit,
    ...(opts.batchDeadlineMs ? { batchDeadlineMs: opts.batchDeadlineMs } : {}),
    readCache: opts.readCache,
    dependsOn: ['locations'],
  });
  app.get('/v2/tms-api/locations', location.list);
  app.post('/v2/tms-api/locations', location.create);
  app.get('/v2/tms-api/locations/:external_reference_id', location.get);
  app.put('/v2/tms-api/locations/:external_reference_id', location.update);
  app.delete('/v2/tms-api/locations/:external_reference_id', location.delete);
  app.post('/v2/tms-api/batch/locations', location.batch);
}
