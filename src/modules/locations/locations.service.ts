import type { LocationsTable } from '../../lib/db/types.js';
import type { Clock } from '../../lib/clock.js';
import { ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { normalizeSubdivision, parseCountry } from '../../geo/index.js';
import { recordLifecycle, tenantRecords, type ServiceHooks } from '../shared/record-store.js';
import { sentFields } from '../shared/records.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { GEO_FIELDS, geocodeLocation, updatedGeoInput } from './locations.geocoding.js';
import { listLocations, type LocationFilter } from './locations.repo.js';
import { LocationCreate, LocationUpdate, type Location, type LocationListQuery } from './locations.schema.js';

const PLAIN_FIELDS = [
  'name',
  'address_line1',
  'address_line2',
  'city',
  'email',
  'phone_number',
  'weekday_open_hours',
  'weekday_close_hours',
  'weekend_open_hours',
  'weekend_close_hours',
  'internal_notes',
] as const;

function toLocation(row: LocationsTable): Location {
  const { org_id: _org, ...rest } = row;
  return rest;
}

const plainColumns = (input: LocationUpdate): Partial<LocationsTable> => sentFields(input, PLAIN_FIELDS);

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

export function locationsService(pipeline: WritePipeline, clock: Clock, deps: ServiceHooks & { lanes: Pick<LanesService, 'locationMoved'> }) {
  const { lanes, ...hooks } = deps;
  const repo = tenantRecords('locations');
  const lifecycle = recordLifecycle<'locations', LocationCreate, LocationUpdate, Location>({
    pipeline,
    clock,
    table: 'locations',
    ...hooks,
    createSchema: LocationCreate,
    updateSchema: LocationUpdate,
    batchOperations: ['create', 'update', 'upsert'],
    async insert(tx, input, base) {
      const geo = geocodeLocation(input);
      const row: LocationsTable = {
        ...base,
        name: input.name,
        address_line1: input.address_line1 ?? null,
        address_line2: input.address_line2 ?? null,
        city: input.city ?? null,
        email: input.email ?? null,
        phone_number: input.phone_number ?? null,
        weekday_open_hours: input.weekday_open_hours ?? null,
        weekday_close_hours: input.weekday_close_hours ?? null,
        weekend_open_hours: input.weekend_open_hours ?? null,
        weekend_close_hours: input.weekend_close_hours ?? null,
        internal_notes: input.internal_notes ?? null,
        ...geo,
      };
      await repo.insert(tx, row);
      return row;
    },
    async updateColumns(_tx, _orgId, row, input) {
      const patch: Partial<LocationsTable> = plainColumns(input);
      if (GEO_FIELDS.some((f) => input[f] !== undefined)) Object.assign(patch, geocodeLocation(updatedGeoInput(row, input)));
      return { patch };
    },
    present: async (_tx, _orgId, rows) => rows.map(toLocation),
    // A re-geocoded location moves the lane history that starts or ends there.
    afterSave: async (tx, orgId, row, previous) =>
      previous && (previous.latitude !== row.latitude || previous.longitude !== row.longitude) ? lanes.locationMoved(tx, orgId, row) : [],
  });

  return {
    ...lifecycle,
    async list(orgId: string, query: LocationListQuery) {
      const { rows, total } = await listLocations(pipeline.reader, orgId, listFilter(query), query);
      return { items: rows.map(toLocation), pagination: pagination(query.page, query.page_size, total) };
    },
  };
}

export type LocationsService = ReturnType<typeof locationsService>;
