import { containsFolded, containsInsensitive, type Executor } from '../../lib/db/index.js';
import { laneAreaOf, onLane } from '../lanes/lane-area.repo.js';
import { fetchPage } from '../../lib/db/paging.js';
import type { LaneStatsTable, LoadsTable, LocationsTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { Coordinates } from '../../geo/index.js';

/**
 * Reads only the dashboard needs. Every statement filters by the signed-in user's organization, walks
 * an index and is bounded (LIMIT), so a page costs the same at 100,000 loads as at 100 (issue 19).
 */

/** Rows read at most for a lane's or a carrier's history (the charts cover the newest of them). */
const LANE_HISTORY_LIMIT = 5_000;
const DETAIL_LIST = 25;

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

/** Lanes with the most delivered history first (then the most recent), a page at a time. */
export async function topLanes(db: Executor, orgId: string, page: number, pageSize: number) {
  const counted = await db
    .selectFrom('lane_stats')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  const total = Number(counted?.n ?? 0);
  const rows: LaneStatsTable[] = await db
    .selectFrom('lane_stats')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('load_count', 'desc')
    .orderBy('last_delivered_at', 'desc')
    .orderBy('equipment_type')
    .orderBy('origin_cell')
    .orderBy('destination_cell')
    .limit(pageSize)
    .offset((page - 1) * pageSize)
    .execute();
  return { rows, total };
}

/**
 * One known location at each end of a lane (the latest delivered load's), so a lane's grid cell can
 * be named by a place the organization ships from or to. One index lookup per lane.
 */
export async function laneEndLocations(db: Executor, orgId: string, lanes: Pick<LaneStatsTable, 'equipment_type' | 'origin_cell' | 'destination_cell'>[]) {
  const ends = await Promise.all(
    lanes.map((l) =>
      db
        .selectFrom('lane_history')
        .select(['origin_location_id', 'destination_location_id'])
        .where('org_id', '=', orgId)
        .where('equipment_type', '=', l.equipment_type)
        .where('origin_cell', '=', l.origin_cell)
        .where('destination_cell', '=', l.destination_cell)
        .orderBy('delivered_at', 'desc')
        .limit(1)
        .executeTakeFirst(),
    ),
  );
  const ids = ends.flatMap((e) => (e ? [e.origin_location_id, e.destination_location_id] : []));
  const byId = new Map((await locationsByIds(db, orgId, ids)).map((l) => [l.id, l]));
  return ends.map((e) => ({
    origin: e ? byId.get(e.origin_location_id) : undefined,
    destination: e ? byId.get(e.destination_location_id) : undefined,
  }));
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

/** The carrier's delivered history loads (lane ends, equipment, when), newest first, at most LANE_HISTORY_LIMIT. */
export function carrierDeliveries(db: Executor, orgId: string, carrierId: string) {
  return db
    .selectFrom('lane_history')
    .select([
      'equipment_type',
      'origin_location_id',
      'destination_location_id',
      'delivered_at',
      'stop_outcomes',
      'carrier_rate_total',
      'carrier_rate_currency',
      'total_distance',
    ])
    .where('org_id', '=', orgId)
    .where('carrier_id', '=', carrierId)
    .orderBy('delivered_at', 'desc')
    .limit(LANE_HISTORY_LIMIT)
    .execute();
}

/** The carriers' contacts (in order) and their own phone and email. */
export async function carrierContacts(db: Executor, orgId: string, carrierIds: string[]) {
  const [contacts, carriers] = await Promise.all([
    db
      .selectFrom('carrier_contacts')
      .selectAll()
      .where('org_id', '=', orgId)
      .where('carrier_id', 'in', carrierIds)
      .orderBy('carrier_id')
      .orderBy('position')
      .execute(),
    db.selectFrom('carriers').select(['id', 'phone_number', 'email']).where('org_id', '=', orgId).where('id', 'in', carrierIds).execute(),
  ]);
  return { contacts, carriers };
}

/**
 * Delivered loads of the equipment whose ends fall in the lane's index area (the same index as
 * recommendations), newest first, at most LANE_HISTORY_LIMIT: the exact radius is the caller's filter.
 */
export async function laneHistoryNear(db: Executor, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  const area = laneAreaOf(orgId, equipmentType, origin, destination, radiusMiles);
  return db
    .selectFrom('lane_history')
    .innerJoin('loads', 'loads.id', 'lane_history.load_id')
    .select([
      'lane_history.load_id',
      'loads.external_reference_id',
      'lane_history.carrier_id',
      'lane_history.carrier_external_reference_id',
      'lane_history.delivered_at',
      'lane_history.carrier_rate_total',
      'loads.total_distance',
      'lane_history.origin_latitude',
      'lane_history.origin_longitude',
      'lane_history.destination_latitude',
      'lane_history.destination_longitude',
    ])
    .where((eb) => onLane(eb as never, area, 'lane_history.'))
    .orderBy('lane_history.delivered_at', 'desc')
    .limit(LANE_HISTORY_LIMIT)
    .execute();
}

/** Market rate snapshots in the lane's index area (matched as a market max_buy_rate matches them), newest first, at most 200: the exact radius is the caller's filter. */
export async function laneSnapshotsNear(
  db: Executor,
  orgId: string,
  equipmentType: string,
  origin: Coordinates,
  destination: Coordinates,
  radiusMiles: number,
) {
  const area = laneAreaOf(orgId, equipmentType, origin, destination, radiusMiles);
  return db
    .selectFrom('market_rate_snapshots')
    .select([
      'id',
      'as_of',
      'rate_per_mile',
      'rate_per_mile_low',
      'rate_per_mile_high',
      'currency',
      'source',
      'origin_latitude',
      'origin_longitude',
      'destination_latitude',
      'destination_longitude',
    ])
    .where((eb) => onLane(eb as never, area, ''))
    .orderBy('as_of', 'desc')
    .limit(200)
    .execute();
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

/**
 * Open loads whose latest announced recommendations (load.recommendations_changed, kept per watched
 * open load in `recommendation_watch.ranked`) may name the carrier, latest pickup first; at most `limit`.
 */
export function watchesNaming(db: Executor, orgId: string, carrierId: string, limit = DETAIL_LIST) {
  return db
    .selectFrom('recommendation_watch')
    .innerJoin('loads', 'loads.id', 'recommendation_watch.load_id')
    .select(['loads.external_reference_id', 'loads.status', 'loads.equipment_type', 'loads.pickup_at', 'recommendation_watch.ranked'])
    .where('recommendation_watch.org_id', '=', orgId)
    .where('recommendation_watch.ranked', 'like', `%"${carrierId.replace(/[%"\\]/g, '')}"%`)
    .orderBy('loads.pickup_at', 'desc')
    .limit(limit)
    .execute();
}
