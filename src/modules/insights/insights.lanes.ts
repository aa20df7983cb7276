import type { Executor } from '../../lib/db/index.js';
import { NotFoundError } from '../../lib/http/errors.js';
import { withinRadius } from '../../domain/lane.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { Coordinates } from '../../geo/index.js';
import type { RankBy } from '../lanes/lanes.service.js';
import { locationByRef } from './insights.repo.js';
import { laneHistoryNear, laneSnapshotsNear } from './lanes-carriers.repo.js';
import { primaryContacts, type InsightsDeps } from './insights.carriers.js';

/**
 * A lane's page on the dashboard (docs/dashboard.md, "Lanes and recommendation lanes"): its history
 * loads, the market snapshots on it and its carriers ranked.
 */

export interface LaneHistoryLoad {
  load_id: string;
  external_reference_id: string;
  carrier_id: string;
  carrier_external_reference_id: string;
  delivered_at: string;
  carrier_rate_total: number | null;
  total_distance: number | null;
}

/** Both ends of a row within the radius of the lane's ends (the lane's exact filter after the index's area). */
function onTheLane(origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  return (r: { origin_latitude: number; origin_longitude: number; destination_latitude: number; destination_longitude: number }) =>
    withinRadius(origin, { latitude: r.origin_latitude, longitude: r.origin_longitude }, radiusMiles) &&
    withinRadius(destination, { latitude: r.destination_latitude, longitude: r.destination_longitude }, radiusMiles);
}

/** The history of a lane (docs/api.md, "Lane history and carrier recommendations"): delivered loads of the equipment with each end within the radius, newest first. */
async function laneHistory(
  reader: Executor,
  orgId: string,
  equipmentType: string,
  origin: Coordinates,
  destination: Coordinates,
  radiusMiles: number,
): Promise<LaneHistoryLoad[]> {
  const rows = await laneHistoryNear(reader, orgId, equipmentType, origin, destination, radiusMiles);
  return rows.filter(onTheLane(origin, destination, radiusMiles)).map((r) => ({
    load_id: r.load_id,
    external_reference_id: r.external_reference_id,
    carrier_id: r.carrier_id,
    carrier_external_reference_id: r.carrier_external_reference_id,
    delivered_at: r.delivered_at,
    carrier_rate_total: r.carrier_rate_total === null ? null : Number(r.carrier_rate_total),
    total_distance: r.total_distance === null ? null : Number(r.total_distance),
  }));
}

/** Market rate snapshots on the lane (matched as a market max_buy_rate matches them), newest first, at most 200. */
async function laneSnapshots(reader: Executor, orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  return (await laneSnapshotsNear(reader, orgId, equipmentType, origin, destination, radiusMiles)).filter(onTheLane(origin, destination, radiusMiles));
}

/**
 * A lane (docs/dashboard.md, "Lanes and recommendation lanes") between two of the organization's
 * locations: its history loads, the market snapshots on it, and its carriers ranked exactly as a
 * load on this lane would be (no carrier assigned), with their primary contacts.
 */
export async function lanePage(
  deps: InsightsDeps,
  orgId: string,
  originRef: string,
  destinationRef: string,
  equipmentType: string,
  rankBy: RankBy = 'history',
) {
  const { reader } = deps;
  const [origin, destination] = await Promise.all([locationByRef(reader, orgId, originRef), locationByRef(reader, orgId, destinationRef)]);
  if (!origin || !destination) throw new NotFoundError(RECORD_KINDS.locations.name, !origin ? originRef : destinationRef);
  const radiusMiles = deps.lanes.rules.radiusMiles;
  const [history, snapshots, ranked] = await Promise.all([
    laneHistory(reader, orgId, equipmentType, origin, destination, radiusMiles),
    laneSnapshots(reader, orgId, equipmentType, origin, destination, radiusMiles),
    deps.lanes.recommendLane(reader, orgId, equipmentType, origin, destination, { rankBy }),
  ]);
  const carriers = ranked.items;
  const contacts = await primaryContacts(
    reader,
    orgId,
    carriers.map((r) => r.carrier_id),
  );
  return { origin, destination, radiusMiles, history, snapshots, carriers, contacts };
}
