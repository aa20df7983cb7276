import type { LocationsTable } from '../../lib/db/types.js';
import type { Clock } from '../../lib/clock.js';
import { foldCase, foldOrNull } from '../../lib/fold.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { normalizeSubdivision, parseCountry } from '../../geo/index.js';
import { recordLifecycle, type ServiceHooks } from '../shared/record-store.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import { sentFields } from '../shared/records.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { GEO_FIELDS, geocodeLocation, updatedGeoInput, type GeoInput } from './locations.geocoding.js';
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
  const { org_id: _org, name_folded: _name, city_folded: _city, ...rest } = row;
  return rest;
}

/** The plain fields sent, with the folded search columns of those that have one. */
function plainColumns(input: LocationUpdate): Partial<LocationsTable> {
  const patch: Partial<LocationsTable> = sentFields(input, PLAIN_FIELDS);
  if (input.name !== undefined) patch.name_folded = foldCase(input.name);
  if (input.city !== undefined) patch.city_folded = foldOrNull(input.city);
  return patch;
}

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

/**
 * The geocoding checks of a body that failed its schema, on the geo fields of the right type. When
 * a geo field itself was refused, its schema entry says so and geocoding is not tried on the rest.
 */
function geocodingProblems(body: unknown, row: LocationsTable | null): ValidationIssue[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const sent = body as Record<string, unknown>;
  const geo: GeoInput = {};
  for (const f of GEO_FIELDS) {
    const v = sent[f];
    if (v === undefined) continue;
    const coordinate = f === 'latitude' || f === 'longitude';
    const limit = f === 'latitude' ? 90 : 180;
    const fits = v === null || (coordinate ? typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= limit : typeof v === 'string');
    if (!fits) return [];
    (geo as Record<string, unknown>)[f] = v;
  }
  if (row && !GEO_FIELDS.some((f) => geo[f] !== undefined)) return [];
  try {
    geocodeLocation(row ? updatedGeoInput(row, geo) : geo);
    return [];
  } catch (err) {
    if (err instanceof ValidationError) return err.issues;
    throw err;
  }
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
        id: base.id,
        org_id: base.org_id,
        external_reference_id: base.external_reference_id,
        created_at: base.created_at,
        updated_at: base.updated_at,
        name: input.name,
        name_folded: foldCase(input.name),
        address_line1: input.address_line1 ?? null,
        address_line2: input.address_line2 ?? null,
        city: input.city ?? null,
        city_folded: foldOrNull(input.city),
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
    problems: async (_tx, _orgId, body, row) => geocodingProblems(body, row),
    // A re-geocoded location moves the lane history that starts or ends there.
    afterSave: async (tx, orgId, row, previous) =>
      previous && (previous.latitude !== row.latitude || previous.longitude !== row.longitude) ? lanes.locationMoved(tx, orgId, row) : [],
  });

  return Object.assign({}, lifecycle, {
    async list(orgId: string, query: LocationListQuery) {
      const { rows, total } = await listLocations(pipeline.reader, orgId, listFilter(query), query);
      return { items: rows.map(toLocation), pagination: pagination(query.page, query.page_size, total) };
    },
  });
}

export type LocationsService = ReturnType<typeof locationsService>;
