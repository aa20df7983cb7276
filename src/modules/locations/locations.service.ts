import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction, retryOnUniqueRace } from '../../lib/db/tx.js';
import type { LocationsTable } from '../../lib/db/types.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { normalizeSubdivision, parseCountry } from '../../geo/index.js';
import { assertSameReference, changedFields } from '../shared/records.js';
import { GEO_FIELDS, geocodeLocation, updatedGeoInput } from './locations.geocoding.js';
import { locationsRepo as repo, type LocationFilter } from './locations.repo.js';
import { LocationCreate, type Location, type LocationListQuery, type LocationUpdate } from './locations.schema.js';

const validateCreate = compileBodyValidator(LocationCreate);

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

function plainColumns(input: LocationUpdate): Partial<LocationsTable> {
  const patch: Partial<LocationsTable> = {};
  for (const field of PLAIN_FIELDS) {
    const value = input[field];
    if (value !== undefined) (patch as Record<string, unknown>)[field] = value;
  }
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

export function locationsService(store: DataStore, clock: Clock) {
  async function insert(tx: Executor, orgId: string, input: LocationCreate): Promise<LocationsTable> {
    const geo = geocodeLocation(input);
    const now = toIso(clock.now());
    const row: LocationsTable = {
      id: newId('loc'),
      org_id: orgId,
      external_reference_id: input.external_reference_id,
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
      created_at: now,
      updated_at: now,
    };
    await repo.insert(tx, row);
    return row;
  }

  async function applyUpdate(tx: Executor, orgId: string, row: LocationsTable, input: LocationUpdate): Promise<LocationsTable> {
    const patch: Partial<LocationsTable> = plainColumns(input);
    if (GEO_FIELDS.some((f) => input[f] !== undefined)) Object.assign(patch, geocodeLocation(updatedGeoInput(row, input)));
    const changed = changedFields(row, patch);
    if (!changed) return row;
    const updated = { ...row, ...changed, updated_at: toIso(clock.now()) };
    await repo.update(tx, orgId, row.id, { ...changed, updated_at: updated.updated_at });
    return updated;
  }

  return {
    async list(orgId: string, query: LocationListQuery) {
      const { rows, total } = await repo.list(store.db, orgId, listFilter(query), query);
      return { items: rows.map(toLocation), pagination: pagination(query.page, query.page_size, total) };
    },

    async get(orgId: string, ref: string): Promise<Location> {
      const row = await repo.findByRef(store.db, orgId, ref);
      if (!row) throw new NotFoundError('Location', ref);
      return toLocation(row);
    },

    async create(orgId: string, input: LocationCreate): Promise<Location> {
      try {
        return toLocation(await inTransaction(store, (tx) => insert(tx, orgId, input)));
      } catch (err) {
        if (isUniqueViolation(err)) throw ConflictError.duplicate('Location', input.external_reference_id);
        throw err;
      }
    },

    async update(orgId: string, ref: string, input: LocationUpdate): Promise<Location> {
      assertSameReference(ref, input.external_reference_id);
      const row = await inTransaction(store, async (tx) => {
        const existing = await repo.findByRef(tx, orgId, ref);
        if (!existing) throw new NotFoundError('Location', ref);
        return applyUpdate(tx, orgId, existing, input);
      });
      return toLocation(row);
    },

    async upsert(orgId: string, ref: string, input: LocationUpdate): Promise<{ location: Location; created: boolean }> {
      assertSameReference(ref, input.external_reference_id);
      return retryOnUniqueRace(() =>
        inTransaction(store, async (tx) => {
          const existing = await repo.findByRef(tx, orgId, ref);
          if (existing) return { location: toLocation(await applyUpdate(tx, orgId, existing, input)), created: false };
          const candidate = { ...input, external_reference_id: ref };
          const issues = validateCreate(candidate, ['body']);
          if (issues) throw new ValidationError(issues);
          return { location: toLocation(await insert(tx, orgId, candidate as LocationCreate)), created: true };
        }),
      );
    },

    async delete(orgId: string, refOrId: string): Promise<void> {
      await inTransaction(store, async (tx) => {
        const row =
          (await repo.findByRef(tx, orgId, refOrId)) ?? (refOrId.startsWith('loc_') ? await repo.findById(tx, orgId, refOrId) : undefined);
        if (!row) throw new NotFoundError('Location', refOrId);
        await repo.delete(tx, orgId, row.id);
      });
    },
  };
}

export type LocationsService = ReturnType<typeof locationsService>;
