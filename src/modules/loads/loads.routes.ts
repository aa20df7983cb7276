import type { FastifyInstance } from 'fastify';
import type { LaneAnalytics } from '../lanes/analytics.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Load, LoadCreate, LoadListQuery, LoadPage, LoadUpdate } from './loads.schema.js';
import type { LoadsService } from './loads.service.js';

export function loadRoutes(
  app: FastifyInstance,
  loads: LoadsService,
  opts: { batchBodyLimit: number; analytics: LaneAnalytics; batchDeadlineMs: number },
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
    // Batch loads finish or answer within 60 seconds (spec section 8); the default 55 s leaves room to answer.
    batchDeadlineMs: opts.batchDeadlineMs,
    afterWrite: (orgId) => opts.analytics.run(orgId),
  });
}
