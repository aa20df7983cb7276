import type { LocationsTable } from '../../lib/db/types.js';
import { foldCase, foldOrNull } from '../../lib/fold.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import type { Executor } from '../../lib/db/index.js';
import type { Workspace } from '../shared/write-pipeline.js';
import type { LaneKey } from '../../domain/lane.js';
import { simpleKindData, type NewRecordBase, type RecordDefinition } from '../shared/record-kind.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import { sentFields } from '../shared/records.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { GEO_FIELDS, geocodeLocation, updatedGeoInput, type GeoInput } from './locations.geocoding.js';
import { LocationCreate, LocationUpdate, type Location } from './locations.schema.js';

const repo = tenantRecords('locations');

/** What a location's writes need: the lanes, whose history moves with a re-geocoded location. */
export interface LocationDeps {
  lanes: Pick<LanesService, 'locationMoved'>;
}

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

export function toLocation(row: LocationsTable): Location {
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

/** A new location, geocoded (docs/api.md, "Locations"). */
async function insertLocation(_deps: LocationDeps, tx: Executor, input: LocationCreate, base: NewRecordBase): Promise<LocationsTable> {
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
}

/** The plain fields sent; any geo field sent re-geocodes the location from the new combination. */
async function locationUpdateColumns(_deps: LocationDeps, _tx: Executor, _orgId: string, row: LocationsTable, input: LocationUpdate) {
  const patch: Partial<LocationsTable> = plainColumns(input);
  if (GEO_FIELDS.some((f) => input[f] !== undefined)) Object.assign(patch, geocodeLocation(updatedGeoInput(row, input)));
  return { patch };
}

/** A re-geocoded location moves the lane history that starts or ends there. */
async function lanesOfMovedLocation(deps: LocationDeps, tx: Executor, orgId: string, row: LocationsTable, previous: LocationsTable | null): Promise<LaneKey[]> {
  return previous && (previous.latitude !== row.latitude || previous.longitude !== row.longitude) ? deps.lanes.locationMoved(tx, orgId, row) : [];
}

/** Locations (docs/api.md, "Locations"): geocoded on write; a move re-lanes the history through them. */
export const LOCATION_KIND: RecordDefinition<'locations', LocationCreate, LocationUpdate, Location, Workspace, LocationDeps> = Object.assign(
  simpleKindData('locations'),
  {
    createSchema: LocationCreate,
    updateSchema: LocationUpdate,
    insert: insertLocation,
    updateColumns: locationUpdateColumns,
    present: async (_deps: LocationDeps, _tx: Executor, _orgId: string, rows: LocationsTable[]) => rows.map(toLocation),
    problems: async (_deps: LocationDeps, _tx: Executor, _orgId: string, body: unknown, row: LocationsTable | null) => geocodingProblems(body, row),
    afterSave: lanesOfMovedLocation,
  },
);
