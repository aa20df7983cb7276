import type { SelectQueryBuilder } from 'kysely';
import { parseSort, type PageRequest } from '../http/pagination.js';
import type { Database } from './types.js';

/**
 * Runs one page of a filtered query and its total. Order is stable: the sort column, then `id` in the
 * same direction. Indexes `(org_id, <sort column>, id)` serve both the order and the count.
 */
export async function fetchPage<TB extends keyof Database, Row>(
  query: SelectQueryBuilder<Database, TB, object>,
  page: PageRequest,
  sortColumns: Record<string, string>,
): Promise<{ rows: Row[]; total: number }> {
  const { field, direction } = parseSort(page.sort);
  const column = sortColumns[field];
  if (!column) throw new Error(`sort field ${field} is not whitelisted`);
  const countRow = await query
    .clearSelect()
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  const total = Number((countRow as { n?: number | string | bigint } | undefined)?.n ?? 0);
  const offset = (page.page - 1) * page.page_size;
  if (offset >= total) return { rows: [], total };
  const rows = await query
    .selectAll()
    // Column names come from the whitelist above, never from the request.
    .orderBy(column as never, direction)
    .orderBy('id' as never, direction)
    .limit(page.page_size)
    .offset(offset)
    .execute();
  return { rows: rows as Row[], total };
}

/** The delta-sync filters every list takes (inclusive, on the stored ISO timestamps). */
export function sinceFilters<TB extends keyof Database>(
  query: SelectQueryBuilder<Database, TB, object>,
  filter: { updated_since?: string; created_since?: string },
): SelectQueryBuilder<Database, TB, object> {
  let q = query;
  if (filter.updated_since) q = q.where('updated_at' as never, '>=', filter.updated_since as never);
  if (filter.created_since) q = q.where('created_at' as never, '>=', filter.created_since as never);
  return q;
}
