import type { Executor } from '../../lib/db/index.js';
import { containsInsensitive } from '../../lib/db/index.js';
import { fetchPage } from '../../lib/db/paging.js';
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

export const carriersRepo = {
  findByRef: (tx: Executor, orgId: string, ref: string) =>
    tx
      .selectFrom('carriers')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('external_reference_id', '=', ref)
      .executeTakeFirst(),
  findById: (tx: Executor, orgId: string, id: string) =>
    tx.selectFrom('carriers').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  insert: (tx: Executor, row: CarriersTable) => tx.insertInto('carriers').values(row).execute(),
  update: (tx: Executor, orgId: string, id: string, patch: Partial<CarriersTable>) =>
    tx.updateTable('carriers').set(patch).where('org_id', '=', orgId).where('id', '=', id).execute(),
  delete: (tx: Executor, orgId: string, id: string) =>
    tx.deleteFrom('carriers').where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  contactsOf: (tx: Executor, orgId: string, carrierIds: string[]) =>
    carrierIds.length === 0
      ? Promise.resolve([] as CarrierContactsTable[])
      : tx
          .selectFrom('carrier_contacts')
          .selectAll()
          .where('org_id', '=', orgId)
          .where('carrier_id', 'in', carrierIds)
          .orderBy('carrier_id')
          .orderBy('position')
          .execute(),
  replaceContacts: async (tx: Executor, orgId: string, carrierId: string, rows: CarrierContactsTable[]) => {
    await tx.deleteFrom('carrier_contacts').where('org_id', '=', orgId).where('carrier_id', '=', carrierId).execute();
    if (rows.length > 0) await tx.insertInto('carrier_contacts').values(rows).execute();
  },
  list(tx: Executor, orgId: string, filter: CarrierFilter, page: PageRequest) {
    let q = tx.selectFrom('carriers').where('org_id', '=', orgId);
    if (filter.name_contains) q = q.where(containsInsensitive('name', filter.name_contains));
    if (filter.mc_number !== undefined) q = q.where('mc_number', '=', filter.mc_number);
    if (filter.dot_number !== undefined) q = q.where('dot_number', '=', filter.dot_number);
    if (filter.updated_since) q = q.where('updated_at', '>=', filter.updated_since);
    if (filter.created_since) q = q.where('created_at', '>=', filter.created_since);
    return fetchPage<'carriers', CarriersTable>(q, page, SORT_COLUMNS);
  },
};
