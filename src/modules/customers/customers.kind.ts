import type { Executor } from '../../lib/db/index.js';
import type { CustomersTable } from '../../lib/db/types.js';
import { foldCase } from '../../lib/fold.js';
import { simpleKindData, type NewRecordBase, type RecordDefinition } from '../shared/record-kind.js';
import { sentFields } from '../shared/records.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import { CustomerCreate, CustomerUpdate, type Customer } from './customers.schema.js';

const repo = tenantRecords('customers');

export function toCustomer(row: CustomersTable): Customer {
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

async function insertCustomer(_deps: void, tx: Executor, input: CustomerCreate, base: NewRecordBase): Promise<CustomersTable> {
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
}

function patchColumns(input: CustomerUpdate): Partial<CustomersTable> {
  const patch: Partial<CustomersTable> = sentFields(input, ['name', 'reference_number', 'domain', 'phone', 'customer_type']);
  if (input.is_active !== undefined) patch.is_active = input.is_active ? 1 : 0;
  if (input.name !== undefined) patch.name_folded = foldCase(input.name);
  return patch;
}

/** Customers (docs/api.md, "Customers"): plain columns, nothing carried in other tables. */
export const CUSTOMER_KIND: RecordDefinition<'customers', CustomerCreate, CustomerUpdate, Customer> = Object.assign(simpleKindData('customers'), {
  createSchema: CustomerCreate,
  updateSchema: CustomerUpdate,
  insert: insertCustomer,
  updateColumns: async (_deps: void, _tx: Executor, _orgId: string, _row: CustomersTable, input: CustomerUpdate) => ({ patch: patchColumns(input) }),
  present: async (_deps: void, _tx: Executor, _orgId: string, rows: CustomersTable[]) => rows.map(toCustomer),
});
