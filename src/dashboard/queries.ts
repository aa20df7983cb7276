import { containsFolded, containsInsensitive, type Executor } from '../lib/db/index.js';
import { laneAreaOf, onLane } from '../lib/db/lane-area.js';
import { fetchPage } from '../lib/db/paging.js';
import type { LoadsTable, LocationsTable } from '../lib/db/types.js';
import type { PageRequest } from '../lib/http/pagination.js';
import { withinRadius } from '../domain/lane.js';
import type { Coordinates } from '../geo/index.js';

/**
 * Reads of the detail pages (issue 19). Every statement filters by the signed-in organization, walks
 * an index and is bounded (LIMIT), so a page costs the same at 100,000 loads as at 100.
 */

/** Rows read at most for a lane's history (its charts cover the newest of them). */
export const LANE_HISTORY_LIMIT = 5_000;
export const DETAIL_LIST = 25;

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
    .select(['loads.id', 'loads.external_reference_id', 'loads.status', 'loads.equipment_type', 'loads.pickup_at', 'loads.created_at', 'customers.name as customer_name', 'carriers.name as carrier_name'])
    .where('loads.org_id', '=', orgId);
}

export function locationByRef(db: Executor, orgId: string, ref: string): Promise<LocationsTable | undefined> {
  return db.selectFrom('locations').selectAll().where('org_id', '=', orgId).where('external_reference_id', '=', ref).executeTakeFirst();
}

/** The newest loads with a stop at the location (load_stops_location_idx), at most `limit`. */
export async function loadsThroughLocation(db: Executor, orgId: string, locationId: string, limit = DETAIL_LIST): Promise<LoadLine[]> {
  return loadLines(db, orgId)
    .where('loads.id', 'in', (eb) => eb.selectFrom('load_stops').select('load_stops.load_id').where('load_stops.location_id', '=', locationId).where('load_stops.org_id', '=', orgId))
    .orderBy('loads.created_at', 'desc')
    .orderBy('loads.id', 'desc')
    .limit(limit)
    .execute();
}

/** The newest loads of a customer or a carrier (loads_org_customer_idx / loads_org_carrier_idx). */
export function loadsOf(db: Executor, orgId: string, by: { customerId?: string; carrierId?: string }, limit = DETAIL_LIST): Promise<LoadLine[]> {
  let q = loadLines(db, orgId);
  if (by.customerId) q = q.where('loads.customer_id', '=', by.customerId);
  if (by.carrierId) q = q.where('loads.carrier_id', '=', by.carrierId);
  return q.orderBy('loads.created_at', 'desc').orderBy('loads.id', 'desc').limit(limit).execute();
}

export async function countLoadsOf(db: Executor, orgId: string, by: { customerId?: string; carrierId?: string }): Promise<number> {
  let q = db.selectFrom('loads').select((eb) => eb.fn.countAll().as('n')).where('org_id', '=', orgId);
  if (by.customerId) q = q.where('customer_id', '=', by.customerId);
  if (by.carrierId) q = q.where('carrier_id', '=', by.carrierId);
  return Number((await q.executeTakeFirst())?.n ?? 0);
}

export interface CarrierLane {
  equipment_type: string;
  origin_location_id: string;
  destination_location_id: string;
  loads: number;
  last_delivered_at: string;
}

/** The lanes (origin and destination locations, equipment) a carrier has delivered on, busiest first. */
export async function carrierLanes(db: Executor, orgId: string, carrierId: string): Promise<{ lanes: CarrierLane[]; history: number }> {
  const rows = await db
    .selectFrom('lane_history')
    .select(['equipment_type', 'origin_location_id', 'destination_location_id', 'delivered_at'])
    .where('org_id', '=', orgId)
    .where('carrier_id', '=', carrierId)
    .orderBy('delivered_at', 'desc')
    .limit(LANE_HISTORY_LIMIT)
    .execute();
  const lanes = new Map<string, CarrierLane>();
  for (const r of rows) {
    const key = `${r.equipment_type}|${r.origin_location_id}|${r.destination_location_id}`;
    const lane = lanes.get(key);
    if (lane) lane.loads++;
    else lanes.set(key, { equipment_type: r.equipment_type, origin_location_id: r.origin_location_id, destination_location_id: r.destination_location_id, loads: 1, last_delivered_at: r.delivered_at });
  }
  return { lanes: [...lanes.values()].sort((a, b) => b.loads - a.loads || (a.last_delivered_at < b.last_delivered_at ? 1 : -1)), history: rows.length };
}

/** Each carrier's primary contact (else its first), for the recommendation rows. */
export async function primaryContacts(db: Executor, orgId: string, carrierIds: string[]) {
  if (carrierIds.length === 0) return new Map<string, { name: string; phone: string | null; email: string | null }>();
  const [contacts, carriers] = await Promise.all([
    db.selectFrom('carrier_contacts').selectAll().where('org_id', '=', orgId).where('carrier_id', 'in', carrierIds).orderBy('carrier_id').orderBy('position').execute(),
    db.selectFrom('carriers').select(['id', 'phone_number', 'email']).where('org_id', '=', orgId).where('id', 'in', carrierIds).execute(),
  ]);
  const out = new Map<string, { name: string; phone: string | null; email: string | null }>();
  for (const c of carriers) out.set(c.id, { name: '', phone: c.phone_number, email: c.email });
  const chosen = new Map<string, (typeof contacts)[number]>();
  for (const c of contacts) {
    const had = chosen.get(c.carrier_id);
    if (!had || (!had.is_primary_contact && c.is_primary_contact)) chosen.set(c.carrier_id, c);
  }
  for (const [carrierId, c] of chosen) {
    const fallback = out.get(carrierId);
    out.set(carrierId, {
      name: [c.first_name, c.last_name].filter(Boolean).join(' '),
      phone: c.primary_phone ?? fallback?.phone ?? null,
      email: c.primary_email ?? fallback?.email ?? null,
    });
  }
  return out;
}

export interface LaneHistoryLoad {
  load_id: string;
  external_reference_id: string;
  carrier_id: string;
  carrier_external_reference_id: string;
  delivered_at: string;
  carrier_rate_total: number | null;
  total_distance: number | null;
}

/**
 * D7 history of a lane: delivered loads of the equipment whose origin and destination are each within
 * the radius of the lane's ends (the same index and exact filter as recommendations), newest first.
 */
export async function laneHistory(db: Executor, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  const area = laneAreaOf(orgId, equipmentType, origin, destination, radiusMiles);
  const rows = await db
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
  return rows
    .filter(
      (r) =>
        withinRadius(origin, { latitude: r.origin_latitude, longitude: r.origin_longitude }, radiusMiles) &&
        withinRadius(destination, { latitude: r.destination_latitude, longitude: r.destination_longitude }, radiusMiles),
    )
    .map(
      (r): LaneHistoryLoad => ({
        load_id: r.load_id,
        external_reference_id: r.external_reference_id,
        carrier_id: r.carrier_id,
        carrier_external_reference_id: r.carrier_external_reference_id,
        delivered_at: r.delivered_at,
        carrier_rate_total: r.carrier_rate_total === null ? null : Number(r.carrier_rate_total),
        total_distance: r.total_distance === null ? null : Number(r.total_distance),
      }),
    );
}

/** Market rate snapshots on the lane (D8 matching), newest first, at most 200. */
export async function laneSnapshots(db: Executor, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  const area = laneAreaOf(orgId, equipmentType, origin, destination, radiusMiles);
  const rows = await db
    .selectFrom('market_rate_snapshots')
    .select(['id', 'as_of', 'rate_per_mile', 'rate_per_mile_low', 'rate_per_mile_high', 'currency', 'source', 'origin_latitude', 'origin_longitude', 'destination_latitude', 'destination_longitude'])
    .where((eb) => onLane(eb as never, area, ''))
    .orderBy('as_of', 'desc')
    .limit(200)
    .execute();
  return rows.filter(
    (r) =>
      withinRadius(origin, { latitude: r.origin_latitude, longitude: r.origin_longitude }, radiusMiles) &&
      withinRadius(destination, { latitude: r.destination_latitude, longitude: r.destination_longitude }, radiusMiles),
  );
}

/** Active keys and the revoked ones that were used in the window, for the usage table. */
export function apiKeysOf(db: Executor, orgId: string) {
  return db.selectFrom('api_keys').select(['id', 'name', 'external_system', 'key_prefix', 'revoked_at', 'last_used_at']).where('org_id', '=', orgId).orderBy('created_at').limit(200).execute();
}

export interface LoadFilters {
  statuses?: string[];
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
export const LOAD_SORTS: Record<string, string> = {
  created_at: 'created_at',
  updated_at: 'updated_at',
  status: 'status',
  external_reference_id: 'external_reference_id',
  pickup_at: 'pickup_at',
};

export function searchLoadsFiltered(db: Executor, orgId: string, f: LoadFilters, page: PageRequest) {
  let q = db.selectFrom('loads').where('loads.org_id', '=', orgId);
  if (f.statuses?.length) q = q.where('loads.status', 'in', f.statuses);
  if (f.equipment) q = q.where('loads.equipment_type', '=', f.equipment);
  if (f.pickupFrom) q = q.where('loads.pickup_at', '>=', `${f.pickupFrom}T00:00:00.000Z`);
  if (f.pickupTo) q = q.where('loads.pickup_at', '<=', `${f.pickupTo}T23:59:59.999Z`);
  if (f.customerRef) q = q.where('loads.customer_id', 'in', (eb) => eb.selectFrom('customers').select('id').where('org_id', '=', orgId).where('external_reference_id', '=', f.customerRef!));
  if (f.carrierRef) q = q.where('loads.carrier_id', 'in', (eb) => eb.selectFrom('carriers').select('id').where('org_id', '=', orgId).where('external_reference_id', '=', f.carrierRef!));
  // From the subdivision's locations (locations_org_state_idx) to their stops (load_stops_location_idx):
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
        // The same search as the API's customer name_contains (folded, D1a).
        eb('loads.customer_id', 'in', eb.selectFrom('customers').select('customers.id').where('customers.org_id', '=', orgId).where(containsFolded('customers.name_folded', text))),
      ]),
    );
  }
  return fetchPage<'loads', LoadsTable>(q, page, LOAD_SORTS);
}

/** Up to 500 of the organization's locations (by name) for the Locations map. */
export function locationPoints(db: Executor, orgId: string) {
  return db.selectFrom('locations').select(['external_reference_id', 'name', 'latitude', 'longitude', 'city', 'state']).where('org_id', '=', orgId).orderBy('name').orderBy('id').limit(500).execute();
}

/**
 * Open loads whose latest announced recommendations (load.recommendations_changed, kept per watched
 * open load in `recommendation_watch.ranked`) name the carrier, with its rank there; at most `limit`.
 */
export async function recommendedFor(db: Executor, orgId: string, carrierId: string, limit = DETAIL_LIST) {
  const rows = await db
    .selectFrom('recommendation_watch')
    .innerJoin('loads', 'loads.id', 'recommendation_watch.load_id')
    .select(['loads.external_reference_id', 'loads.status', 'loads.equipment_type', 'loads.pickup_at', 'recommendation_watch.ranked'])
    .where('recommendation_watch.org_id', '=', orgId)
    .where('recommendation_watch.ranked', 'like', `%"${carrierId.replace(/[%"\\]/g, '')}"%`)
    .orderBy('loads.pickup_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => {
    let rank = 0;
    try {
      rank = (JSON.parse(r.ranked) as string[]).indexOf(carrierId) + 1;
    } catch {
      rank = 0;
    }
    return { external_reference_id: r.external_reference_id, status: r.status, equipment_type: r.equipment_type, pickup_at: r.pickup_at, rank };
  });
}
