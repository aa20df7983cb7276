import { pagination } from '../../lib/http/pagination.js';
import type { RecordContext } from '../shared/record-kind.js';
import { recordLifecycle } from '../shared/record-store.js';
import { listCarriers } from './carriers.repo.js';
import type { CarrierListQuery } from './carriers.schema.js';
import { CARRIER_KIND, presentCarriers } from './carriers.kind.js';

/** A page of the organization's carriers, with their contacts. */
async function carrierPage(ctx: RecordContext, orgId: string, query: CarrierListQuery) {
  const reader = ctx.pipeline.reader;
  const { rows, total } = await listCarriers(reader, orgId, query, query);
  return { items: await presentCarriers(undefined, reader, orgId, rows), pagination: pagination(query.page, query.page_size, total) };
}

/** The carriers' service: the record lifecycle of CARRIER_KIND, and the list. */
export function carriersService(ctx: RecordContext) {
  return Object.assign(recordLifecycle(CARRIER_KIND, undefined, ctx), { list: (orgId: string, query: CarrierListQuery) => carrierPage(ctx, orgId, query) });
}

export type CarriersService = ReturnType<typeof carriersService>;
