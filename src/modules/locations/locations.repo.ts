import type { Executor } from '../../lib/db/index.js';
import { containsFolded, equalsFolded } from '../../lib/db/index.js';
import { fetchPage, sinceFilters } from '../../lib/db/paging.js';
import type { LocationsTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';

export interface LocationFilter {
  /** Normalised ISO 3166-2 code. */
  state?: string;
  city?: string;
  name_contains?: string;
  postal_code?: string;
  country?: string;
  updated_since?: string;
  created_since?: string;
}

const SORT_COLUMNS: Record<string, string> = {
  name: 'name',
  city: 'city',
  state: 'state',
  created_at: 'created_at',
  updated_at: 'updated_at',
};

export function listLocations(tx: Executor, orgId: string, filter: LocationFilter, page: PageRequest) {
  let q = tx.selectFrom('locations').where('org_id', '=', orgId);
  if (filter.state !== undefined) q = q.where('state', '=', filter.state);
  if (filter.city !== undefined) q = q.where(equalsFolded('city_folded', filter.city));
  if (filter.name_contains) q = q.where(containsFolded('name_folded', filter.name_contains));
  if (filter.postal_code !== undefined) q = q.where('postal_code', '=', filter.postal_code);
  if (filter.country !== undefined) q = q.where('country', '=', filter.country);
  return fetchPage<'locations', LocationsTable>(sinceFilters(q, filter), page, SORT_COLUMNS);
}
