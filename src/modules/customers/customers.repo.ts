import type { Executor } from '../../lib/db/index.js';
import { containsFolded } from '../../lib/db/index.js';
import { fetchPage, sinceFilters } from '../../lib/db/paging.js';
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

export function listCustomers(tx: Executor, orgId: string, filter: CustomerFilter, page: PageRequest) {
  let q = tx.selectFrom('customers').where('org_id', '=', orgId);
  if (filter.name_contains) q = q.where(containsFolded('name_folded', filter.name_contains));
  if (filter.is_active !== undefined) q = q.where('is_active', '=', filter.is_active ? 1 : 0);
  if (filter.customer_type !== undefined) q = q.where('customer_type', '=', filter.customer_type);
  return fetchPage<'customers', CustomersTable>(sinceFilters(q, filter), page, SORT_COLUMNS);
}
