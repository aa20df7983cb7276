import type { Executor } from '../../lib/db/index.js';
import { containsFolded } from '../../lib/db/index.js';
import { fetchPage, sinceFilters } from '../../lib/db/paging.js';
import type { CarrierContactsTable, CarriersTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';

export interface CarrierFilter {
  name_contains?: string;
  mc_number?: string;
  dot_number?: string;
  updated_since?: string;
  created_since?: string;
}

const SORT_COLUMNS: Record<string, string> = {
  name: 'name',
  dot_number: 'dot_number',
  created_at: 'created_at',
  updated_at: 'updated_at',
};

export function contactsOf(tx: Executor, orgId: string, carrierIds: string[]): Promise<CarrierContactsTable[]> {
  if (carrierIds.length === 0) return Promise.resolve([]);
  return tx
    .selectFrom('carrier_contacts')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('carrier_id', 'in', carrierIds)
    .orderBy('carrier_id')
    .orderBy('position')
    .execute();
}

export async function replaceContacts(tx: Executor, orgId: string, carrierId: string, rows: CarrierContactsTable[]) {
  await tx.deleteFrom('carrier_contacts').where('org_id', '=', orgId).where('carrier_id', '=', carrierId).execute();
  if (rows.length > 0) await tx.insertInto('carrier_contacts').values(rows).execute();
}

export function listCarriers(tx: Executor, orgId: string, filter: CarrierFilter, page: PageRequest) {
  let q = tx.selectFrom('carriers').where('org_id', '=', orgId);
  if (filter.name_contains) q = q.where(containsFolded('name_folded', filter.name_contains));
  if (filter.mc_number !== undefined) q = q.where('mc_number', '=', filter.mc_number);
  if (filter.dot_number !== undefined) q = q.where('dot_number', '=', filter.dot_number);
  return fetchPage<'carriers', CarriersTable>(sinceFilters(q, filter), page, SORT_COLUMNS);
}
