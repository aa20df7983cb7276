import type { CustomersTable } from '../../lib/db/types.js';
import type { Clock } from '../../lib/clock.js';
import { foldCase } from '../../lib/fold.js';
import { pagination } from '../../lib/http/pagination.js';
import { recordLifecycle, type ServiceHooks } from '../shared/record-store.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import { sentFields } from '../shared/records.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import { listCustomers } from './customers.repo.js';
import { CustomerCreate, CustomerUpdate, type Customer, type CustomerListQuery } from './customers.schema.js';

function toCustomer(row: CustomersTable): Customer {
  return {
    id: row.id,
    external_reference_id: row.external_reference_id,
    name: row.name,
    reference_number: row.reference_number,
    domain: row.domain,
    phone: row.phone,
    is_active: row.is_active === 1,
    customer_type: row.customer_type,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function patchColumns(input: CustomerUpdate): Partial<CustomersTable> {
  const patch: Partial<CustomersTable> = sentFields(input, ['name', 'reference_number', 'domain', 'phone', 'customer_type']);
  if (input.is_active !== undefined) patch.is_active = input.is_active ? 1 : 0;
  if (input.name !== undefined) patch.name_folded = foldCase(input.name);
  return patch;
}

export function customersService(pipeline: WritePipeline, clock: Clock, hooks: ServiceHooks = {}) {
  const repo = tenantRecords('customers');
  const lifecycle = recordLifecycle<'customers', CustomerCreate, CustomerUpdate, Customer>({
    pipeline,
    clock,
    table: 'customers',
    ...hooks,
    createSchema: CustomerCreate,
    updateSchema: CustomerUpdate,
    batchOperations: ['create', 'update', 'upsert'],
    async insert(tx, input, base) {
      const row: CustomersTable = {
        id: base.id,
        org_id: base.org_id,
        external_reference_id: base.external_reference_id,
        created_at: base.created_at,
        updated_at: base.updated_at,
        name: input.name,
        name_folded: foldCase(input.name),
        reference_number: input.reference_number ?? null,
        domain: input.domain ?? null,
        phone: input.phone ?? null,
        is_active: input.is_active === false ? 0 : 1,
        customer_type: input.customer_type ?? null,
      };
      await repo.insert(tx, row);
      return row;
    },
    updateColumns: async (_tx, _orgId, _row, input) => ({ patch: patchColumns(input) }),
    present: async (_tx, _orgId, rows) => rows.map(toCustomer),
  });

  return Object.assign({}, lifecycle, {
    async list(orgId: string, query: CustomerListQuery) {
      const { rows, total } = await listCustomers(pipeline.reader, orgId, query, query);
      return { items: rows.map(toCustomer), pagination: pagination(query.page, query.page_size, total) };
    },
  });
}

export type CustomersService = ReturnType<typeof customersService>;
