import type { Executor } from '../../lib/db/index.js';
import { laneAreaOf, onLane } from '../lanes/lane-area.repo.js';
import type { LaneStatsTable } from '../../lib/db/types.js';
import type { Coordinates } from '../../geo/index.js';
import { DETAIL_LIST, locationsByIds } from './insights.repo.js';
import { contactsOf } from '../carriers/carriers.repo.js';

/**
 * The dashboard's reads of lanes and carriers (the Lanes list, a lane's page, a carrier's page), bounded
 * as insights.repo.ts's are.
 */

/** Rows read at most for a lane's or a carrier's history (the charts cover the newest of them). */
const LANE_HISTORY_LIMIT = 5_000;

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
    contactsOf(db, orgId, carrierIds),
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
