import { pagination } from '../../lib/http/pagination.js';
import type { RecordContext } from '../shared/record-kind.js';
import { recordLifecycle } from '../shared/record-store.js';
import { listCustomers } from './customers.repo.js';
import type { CustomerListQuery } from './customers.schema.js';
import { CUSTOMER_KIND, toCustomer } from './customers.kind.js';

/** A page of the organization's customers. */
async function customerPage(ctx: RecordContext, orgId: string, query: CustomerListQuery) {
  const { rows, total } = await listCustomers(ctx.pipeline.reader, orgId, query, query);
  return { items: rows.map(toCustomer), pagination: pagination(query.page, query.page_size, total) };
}

/** The customers' service: the record lifecycle of CUSTOMER_KIND, and the list. */
export function customersService(ctx: RecordContext) {
  return Object.assign(recordLifecycle(CUSTOMER_KIND, undefined, ctx), { list: (orgId: string, query: CustomerListQuery) => customerPage(ctx, orgId, query) });
}

export type CustomersService = ReturnType<typeof customersService>;
