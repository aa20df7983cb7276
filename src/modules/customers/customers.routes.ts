import type { FastifyInstance } from 'fastify';
import type { ReadCache } from '../../lib/http/read-cache.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { resourceRoutes } from '../shared/resource-routes.js';
import { Customer, CustomerCreate, CustomerListQuery, CustomerPage, CustomerUpdate } from './customers.schema.js';
import type { CustomersService } from './customers.service.js';

export function customerRoutes(app: FastifyInstance, customers: CustomersService, opts: { batchBodyLimit: number; readCache?: ReadCache; batchDeadlineMs?: number }) {
  resourceRoutes(
    app,
    customers,
    {
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
    },
  );
}
