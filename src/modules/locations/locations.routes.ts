import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Location, LocationCreate, LocationListQuery, LocationPage, LocationUpdate } from './locations.schema.js';
import type { LocationsService } from './locations.service.js';

export function locationRoutes(app: FastifyInstance, locations: LocationsService, opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number }) {
  resourceRoutes(
    app,
    locations,
    {
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
    },
  );
}
