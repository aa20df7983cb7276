import type { Executor } from '../../lib/db/index.js';
import { containsInsensitive } from '../../lib/db/index.js';
import { fetchPage } from '../../lib/db/paging.js';
import type { CustomersTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';

export interface CustomerFilter {
  name_contains?: string;
  is_active?: boolean;
  customer_type?: string;
  updated_since?: string;
  created_since?: string;
}

const SORT_COLUMNS: Record<string, string> = { name: 'name', created_at: 'created_at', updated_at: 'updated_at' };

export const customersRepo = {
  findByRef: (tx: Executor, orgId: string, ref: string) =>
    tx
      .selectFrom('customers')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('external_reference_id', '=', ref)
      .executeTakeFirst(),
  findById: (tx: Executor, orgId: string, id: string) =>
    tx.selectFrom('customers').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  insert: (tx: Executor, row: CustomersTable) => tx.insertInto('customers').values(row).execute(),
  update: (tx: Executor, orgId: string, id: string, patch: Partial<CustomersTable>) =>
    tx.updateTable('customers').set(patch).where('org_id', '=', orgId).where('id', '=', id).execute(),
  delete: (tx: Executor, orgId: string, id: string) =>
    tx.deleteFrom('customers').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  list(tx: Executor, orgId: string, filter: CustomerFilter, page: PageRequest) {
    let q = tx.selectFrom('customers').where('org_id', '=', orgId);
    if (filter.name_contains) q = q.where(containsInsensitive('name', filter.name_contains));
    if (filter.is_active !== undefined) q = q.where('is_active', '=', filter.is_active ? 1 : 0);
    if (filter.customer_type !== undefined) q = q.where('customer_type', '=', filter.customer_type);
    if (filter.updated_since) q = q.where('updated_at', '>=', filter.updated_since);
    if (filter.created_since) q = q.where('created_at', '>=', filter.created_since);
    return fetchPage<'customers', CustomersTable>(q, page, SORT_COLUMNS);
  },
};
