import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Load, LoadCreate, LoadListQuery, LoadPage, LoadUpdate } from './loads.schema.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { LoadsService } from './loads.service.js';

export function loadRoutes(app: FastifyInstance, loads: LoadsService, opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs: number }) {
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
    // PostgreSQL: a load read and the key check are one statement (src/modules/loads/loads.documents.repo.ts).
    foldsKeyCheck: true,
  });
  app.get('/v2/tms-api/loads', load.list);
  app.post('/v2/tms-api/loads', load.create);
  app.get('/v2/tms-api/loads/:external_reference_id', load.get);
  app.put('/v2/tms-api/loads/:external_reference_id', load.update);
  app.delete('/v2/tms-api/loads/:external_reference_id', load.delete);
  app.post('/v2/tms-api/batch/loads', load.batch);
}
