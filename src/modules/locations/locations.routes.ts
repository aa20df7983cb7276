import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Location, LocationCreate, LocationListQuery, LocationPage, LocationUpdate } from './locations.schema.js';
import type { LocationsService } from './locations.service.js';

export function locationRoutes(app: FastifyInstance, locations: LocationsService, opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number }) {
  resourceRoutes(
    app,
    locations,
    {
      collection: 'locations',
      noun: 'location',
      tag: 'Locations',
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
