import { containsFolded, containsInsensitive, type Executor } from '../../lib/db/index.js';
import { fetchPage } from '../../lib/db/paging.js';
import type { LoadsTable, LocationsTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { OPEN_STATUSES } from '../../domain/enums.js';

/**
 * Reads only the dashboard needs. Every statement filters by the signed-in user's organization, walks
 * an index and is bounded (LIMIT), so a page costs the same at 100,000 loads as at 100 (issue 19).
 * Those of lanes and carriers are in lanes-carriers.repo.ts.
 */

/** Loads listed at most on a detail page. */
export const DETAIL_LIST = 25;

async function countOf(db: Executor, table: 'loads' | 'customers' | 'carriers' | 'locations' | 'users', orgId: string) {
  const r = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function overviewCounts(db: Executor, orgId: string) {
  const [loads, customers, carriers, locations, users, openLoads, activeKeys, lanes] = await Promise.all([
    countOf(db, 'loads', orgId),
    countOf(db, 'customers', orgId),
    countOf(db, 'carriers', orgId),
    countOf(db, 'locations', orgId),
    countOf(db, 'users', orgId),
    db
      .selectFrom('loads')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .where('status', 'in', [...OPEN_STATUSES])
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
    db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
    db
      .selectFrom('lane_stats')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
  ]);
  return { loads, openLoads, customers, carriers, locations, users, activeKeys, lanes };
}

export interface LoadFilters {
  statuses?: string[];
  /** Matches the load's reference, its description or its customer's name (any case). */
  text?: string;
  /** Inclusive, on the first pickup's early arrival (`YYYY-MM-DD`, UTC days). */
  pickupFrom?: string;
  pickupTo?: string;
  equipment?: string;
  customerRef?: string;
  carrierRef?: string;
  /** A pickup (origin) or delivery (destination) stop at a location in this subdivision (`US-TX`). */
  originState?: string;
  destinationState?: string;
}

/** Sortable columns of the Loads list, each served by a `(org_id, column, id)` index. */
export const LOAD_SORTS: Readonly<Record<string, string>> = {
  created_at: 'created_at',
  updated_at: 'updated_at',
  status: 'status',
  external_reference_id: 'external_reference_id',
  pickup_at: 'pickup_at',
};

/** A page of the organization's loads matching the filters. */
export function searchLoads(db: Executor, orgId: string, f: LoadFilters, page: PageRequest) {
  let q = db.selectFrom('loads').where('loads.org_id', '=', orgId);
  if (f.statuses?.length) q = q.where('loads.status', 'in', f.statuses);
  if (f.equipment) q = q.where('loads.equipment_type', '=', f.equipment);
  if (f.pickupFrom) q = q.where('loads.pickup_at', '>=', `${f.pickupFrom}T00:00:00.000Z`);
  if (f.pickupTo) q = q.where('loads.pickup_at', '<=', `${f.pickupTo}T23:59:59.999Z`);
  if (f.customerRef)
    q = q.where('loads.customer_id', 'in', (eb) =>
      eb.selectFrom('customers').select('id').where('org_id', '=', orgId).where('external_reference_id', '=', f.customerRef!),
    );
  if (f.carrierRef)
    q = q.where('loads.carrier_id', 'in', (eb) =>
      eb.selectFrom('carriers').select('id').where('org_id', '=', orgId).where('external_reference_id', '=', f.carrierRef!),
    );
  // From the subdivision's locations (locations_org_state_idx) to their stops (load_stops_location_type_idx):
  // the stops of other states are never read.
  const byStopState = (state: string, types: string[]) =>
    q.where('loads.id', 'in', (eb) =>
      eb
        .selectFrom('locations')
        .innerJoin('load_stops', 'load_stops.location_id', 'locations.id')
        .select('load_stops.load_id')
        .where('locations.org_id', '=', orgId)
        .where('locations.state', '=', state)
        .where('load_stops.stop_type', 'in', types),
    );
  if (f.originState) q = byStopState(f.originState, ['PICKUP', 'BOTH', 'Pickup', 'Both']);
  if (f.destinationState) q = byStopState(f.destinationState, ['DELIVERY', 'BOTH', 'Delivery', 'Both']);
  const text = f.text?.trim();
  if (text) {
    q = q.where((eb) =>
      eb.or([
        containsInsensitive('loads.external_reference_id', text),
        containsInsensitive('loads.description', text),
        // The same search as the API's customer name_contains (folded: docs/api.md, "Lists").
        eb(
          'loads.customer_id',
          'in',
          eb.selectFrom('customers').select('customers.id').where('customers.org_id', '=', orgId).where(containsFolded('customers.name_folded', text)),
        ),
      ]),
    );
  }
  return fetchPage<'loads', LoadsTable>(q, page, LOAD_SORTS);
}

export function locationsByIds(db: Executor, orgId: string, ids: string[]): Promise<LocationsTable[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('locations')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
}

export function locationByRef(db: Executor, orgId: string, ref: string): Promise<LocationsTable | undefined> {
  return db.selectFrom('locations').selectAll().where('org_id', '=', orgId).where('external_reference_id', '=', ref).executeTakeFirst();
}

/** Up to 500 of the organization's locations (by name) for the Locations map. */
export function locationPoints(db: Executor, orgId: string) {
  return db
    .selectFrom('locations')
    .select(['external_reference_id', 'name', 'latitude', 'longitude', 'city', 'state', 'country'])
    .where('org_id', '=', orgId)
    .orderBy('name')
    .orderBy('id')
    .limit(500)
    .execute();
}

export interface LoadLine {
  id: string;
  external_reference_id: string;
  status: string;
  equipment_type: string;
  pickup_at: string | null;
  created_at: string;
  customer_name: string | null;
  carrier_name: string | null;
}

function loadLines(db: Executor, orgId: string) {
  return db
    .selectFrom('loads')
    .leftJoin('customers', 'customers.id', 'loads.customer_id')
    .leftJoin('carriers', 'carriers.id', 'loads.carrier_id')
    .select([
      'loads.id',
      'loads.external_reference_id',
      'loads.status',
      'loads.equipment_type',
      'loads.pickup_at',
      'loads.created_at',
      'customers.name as customer_name',
      'carriers.name as carrier_name',
    ])
    .where('loads.org_id', '=', orgId);
}

/** The newest loads with a stop at the location (load_stops_location_type_idx, by its first column), at most `limit`. */
export async function loadsThroughLocation(db: Executor, orgId: string, locationId: string, limit = DETAIL_LIST): Promise<LoadLine[]> {
  return loadLines(db, orgId)
    .where('loads.id', 'in', (eb) =>
      eb.selectFrom('load_stops').select('load_stops.load_id').where('load_stops.location_id', '=', locationId).where('load_stops.org_id', '=', orgId),
    )
    .orderBy('loads.created_at', 'desc')
    .orderBy('loads.id', 'desc')
    .limit(limit)
    .execute();
}

export interface LoadsBy {
  customerId?: string;
  carrierId?: string;
}

/** The newest loads of a customer or a carrier (loads_org_customer_idx / loads_org_carrier_idx). */
export function loadsOf(db: Executor, orgId: string, by: LoadsBy, limit = DETAIL_LIST): Promise<LoadLine[]> {
  let q = loadLines(db, orgId);
  if (by.customerId) q = q.where('loads.customer_id', '=', by.customerId);
  if (by.carrierId) q = q.where('loads.carrier_id', '=', by.carrierId);
  return q.orderBy('loads.created_at', 'desc').orderBy('loads.id', 'desc').limit(limit).execute();
}

export async function countLoadsOf(db: Executor, orgId: string, by: LoadsBy): Promise<number> {
  let q = db
    .selectFrom('loads')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', orgId);
  if (by.customerId) q = q.where('customer_id', '=', by.customerId);
  if (by.carrierId) q = q.where('carrier_id', '=', by.carrierId);
  return Number((await q.executeTakeFirst())?.n ?? 0);
}

/** The organization's users of these ids (a load's reps matched to users), with their name and email. */
export function usersByIds(db: Executor, orgId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('users')
    .select(['id', 'name', 'email'])
    .where('org_id', '=', orgId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
}

/** Of these records of one kind (by id), those that still exist, with their external reference (primary key lookups). */
export function recordsByIds(db: Executor, orgId: string, table: 'customers' | 'carriers' | 'locations' | 'loads', ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom(table)
    .select(['id', 'external_reference_id'])
    .where('org_id', '=', orgId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
}

/** Of these location references, those the organization has. */
export function locationRefsPresent(db: Executor, orgId: string, refs: string[]) {
  if (refs.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('locations')
    .select('external_reference_id')
    .where('org_id', '=', orgId)
    .where('external_reference_id', 'in', [...new Set(refs)])
    .execute();
}

/** Active keys and the revoked ones, for the usage table (at most 200, oldest first). */
export function apiKeysOf(db: Executor, orgId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'external_system', 'key_prefix', 'revoked_at', 'last_used_at'])
    .where('org_id', '=', orgId)
    .orderBy('created_at')
    .limit(200)
    .execute();
}
