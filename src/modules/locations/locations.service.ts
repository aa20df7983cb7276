import { ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { normalizeSubdivision, parseCountry } from '../../geo/index.js';
import type { RecordContext } from '../shared/record-kind.js';
import { recordLifecycle } from '../shared/record-store.js';
import { listLocations, type LocationFilter } from './locations.repo.js';
import type { LocationListQuery } from './locations.schema.js';
import { LOCATION_KIND, toLocation, type LocationDeps } from './locations.kind.js';

/** The list filters in stored form; a filter value that cannot match anything is a 422 that says why. */
function listFilter(query: LocationListQuery): LocationFilter {
  const filter: LocationFilter = { ...query };
  if (query.country !== undefined) {
    const country = parseCountry(query.country);
    if (!country.ok) throw ValidationError.single(['query', 'country'], `Value error, ${country.message}`);
    filter.country = country.country;
  }
  if (query.state !== undefined) {
    const sub = normalizeSubdivision(query.state, filter.country ?? null);
    if (!sub.ok) throw ValidationError.single(['query', 'state'], `Value error, ${sub.message}`);
    filter.state = sub.code;
  }
  return filter;
}

/** A page of the organization's locations. */
async function locationPage(ctx: RecordContext, orgId: string, query: LocationListQuery) {
  const { rows, total } = await listLocations(ctx.pipeline.reader, orgId, listFilter(query), query);
  return { items: rows.map(toLocation), pagination: pagination(query.page, query.page_size, total) };
}

/** The locations' service: the record lifecycle of LOCATION_KIND, and the list. */
export function locationsService(ctx: RecordContext, deps: LocationDeps) {
  return Object.assign(recordLifecycle(LOCATION_KIND, deps, ctx), { list: (orgId: string, query: LocationListQuery) => locationPage(ctx, orgId, query) });
}

export type LocationsService = ReturnType<typeof locationsService>;
