import type { SelectQueryBuilder } from 'kysely';
import { parseSort, type PageRequest } from '../http/pagination.js';
import type { Database } from './types.js';

/**
 * Runs one page of a filtered query and its total. Order is stable: the sort column, then `id` in the
 * same direction. The page is found as ids first (served from an index `(org_id, <sort column>, id…)`
 * without reading the table), then only those rows are read: OFFSET costs index entries, not rows.
 * `knownTotal`, when the caller has it (kept counters), saves the count.
 */
/** The page's ids in order (sort column, then id, the same direction), with its limit and offset. */
export function pageIds<TB extends keyof Database>(query: SelectQueryBuilder<Database, TB, object>, page: PageRequest, sortColumns: Record<string, string>) {
  const { field, direction } = parseSort(page.sort);
  const column = sortColumns[field];
  if (!column) throw new Error(`sort field ${field} is not whitelisted`);
  const offset = (page.page - 1) * page.page_size;
  const ids = query
    .clearSelect()
    .select(['id', 'org_id'] as never)
    // Column names come from the whitelist above, never from the request.
    .orderBy(column as never, direction)
    .orderBy('id' as never, direction)
    .limit(page.page_size)
    .offset(offset) as unknown as SelectQueryBuilder<Database, TB, { id: string; org_id: string }>;
  return { ids, column, direction, offset };
}

export async function fetchPage<TB extends keyof Database, Row extends { id: string }>(
  query: SelectQueryBuilder<Database, TB, object>,
  page: PageRequest,
  sortColumns: Record<string, string>,
  knownTotal?: () => Promise<number | null>,
): Promise<{ rows: Row[]; total: number }> {
  const { ids: idsQuery, offset } = pageIds(query, page, sortColumns);
  let total = knownTotal ? await knownTotal() : null;
  if (total === null) {
    const countRow = await query
      .clearSelect()
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst();
    total = Number((countRow as { n?: number | string | bigint } | undefined)?.n ?? 0);
  }
  if (offset >= total) return { rows: [], total };
  const ids = await idsQuery.execute();
  if (ids.length === 0) return { rows: [], total };
  // By primary key alone: with org_id in the WHERE, SQLite can pick the org_id index and walk every row
  // of the organization instead of 50 key lookups. The ids come from the organization-scoped query
  // above, and every row is checked to belong to the same organization before it is returned.
  const orgId = ids[0]!.org_id;
  const rows = (
    (await query
      .clearWhere()
      .selectAll()
      .where('id' as never, 'in', ids.map((r) => r.id) as never)
      .execute()) as unknown as (Row & { org_id: string })[]
  ).filter((r) => r.org_id === orgId);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return { rows: ids.flatMap((r) => byId.get(r.id) ?? []), total };
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
