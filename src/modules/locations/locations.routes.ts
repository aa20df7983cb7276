import type { FastifyInstance } from 'fastify';
import type { BatchTransaction } from '../../lib/db/tx.js';
import type { ReadCache } from '../../lib/http/read-cache.js';
import type { LaneAnalytics } from '../lanes/analytics.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Location, LocationCreate, LocationListQuery, LocationPage, LocationUpdate } from './locations.schema.js';
import type { LocationsService } from './locations.service.js';

export function locationRoutes(app: FastifyInstance, locations: LocationsService, opts: { batchBodyLimit: number; readCache?: ReadCache; batchTransaction?: BatchTransaction; analytics: LaneAnalytics }) {
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
      readCache: opts.readCache,
      batchTransaction: opts.batchTransaction,
      // A moved location moves the lanes that start or end there; that is no load write, so not counted.
      aroundWrite: (orgId, work) => opts.analytics.request(orgId, work, { counted: false }),
    },
  );
}
