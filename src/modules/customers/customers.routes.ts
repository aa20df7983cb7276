import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Customer, CustomerCreate, CustomerListQuery, CustomerPage, CustomerUpdate } from './customers.schema.js';
import type { CustomersService } from './customers.service.js';

export function customerRoutes(
  app: FastifyInstance,
  customers: CustomersService,
  opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number },
) {
  const customer = resourceRoutes(app, customers, {
    collection: RECORD_KINDS.customers.collection,
    noun: RECORD_KINDS.customers.noun,
    tag: RECORD_KINDS.customers.plural,
    readScope: 'read:customers',
    writeScope: 'write:customers',
    createSchema: CustomerCreate,
    updateSchema: CustomerUpdate,
    recordSchema: Customer,
    pageSchema: CustomerPage,
    listQuery: CustomerListQuery,
    batchOperations: ['create', 'update', 'upsert'],
    batchBodyLimit: opts.batchBodyLimit,
    ...(opts.batchDeadlineMs ? { batchDeadlineMs: opts.batchDeadlineMs } : {}),
    readCache: opts.readCache,
    dependsOn: ['customers'],
  });
  app.get('/v2/tms-api/customers', customer.list);
  app.post('/v2/tms-api/customers', customer.create);
  app.get('/v2/tms-api/customers/:external_reference_id', customer.get);
  app.put('/v2/tms-api/customers/:external_reference_id', customer.update);
  app.delete('/v2/tms-api/customers/:external_reference_id', customer.delete);
  app.post('/v2/tms-api/batch/customers', customer.batch);
}
