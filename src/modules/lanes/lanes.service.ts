import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import { boxWithin, cellsWithin } from '../../domain/grid.js';
import { latestOnLane, maxBuyRate, type LaneKey } from '../../domain/lane.js';
import { rankCarriers, type LaneRules } from '../../domain/scoring.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import {
  carrierCards,
  equipmentWithSnapshots,
  laneCandidates,
  laneEnds,
  laneOfLoad,
  relocateLaneHistory,
  snapshotsOnLane,
  syncLaneHistory,
  type LaneArea,
  type LaneStop,
} from './lanes.repo.js';

export type { LaneStop };

export interface LaneLoad {
  id: string;
  equipment_type: string;
  carrier_id: string | null;
}

// The newest few snapshots on a lane are nearly always the answer; the rest are read only when none is within the radius.
const NEWEST_SNAPSHOTS = 20;

export function lanesService(clock: Clock, rules: LaneRules) {
  const areaOf = (orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates): LaneArea => ({
    orgId,
    equipmentType,
    originCells: cellsWithin(origin.latitude, origin.longitude, rules.radiusMiles),
    destinationCells: cellsWithin(destination.latitude, destination.longitude, rules.radiusMiles),
    originBox: boxWithin(origin.latitude, origin.longitude, rules.radiusMiles),
    destinationBox: boxWithin(destination.latitude, destination.longitude, rules.radiusMiles),
  });

  return {
    rules,

    /** D7 recommendations for a load's lane (origin, destination, equipment), best first, at most 10. */
    async recommend(tx: Executor, orgId: string, load: LaneLoad, stops?: readonly LaneStop[]): Promise<CarrierRecommendation[]> {
      const ends = await laneEnds(tx, orgId, load.id, stops);
      if (!ends.origin || !ends.destination) return [];
      const origin = { latitude: ends.origin.latitude, longitude: ends.origin.longitude };
      const destination = { latitude: ends.destination.latitude, longitude: ends.destination.longitude };
      const candidates = await laneCandidates(tx, areaOf(orgId, load.equipment_type, origin, destination));
      const refs = new Map(candidates.map((c) => [c.carrier_id, c.carrier_external_reference_id]));
      const history = candidates.map((c) => ({
        carrierId: c.carrier_id,
        origin: { latitude: c.origin_latitude, longitude: c.origin_longitude },
        destination: { latitude: c.destination_latitude, longitude: c.destination_longitude },
        deliveredAt: c.delivered_at,
        carrierRateTotal: c.carrier_rate_total === null ? null : Number(c.carrier_rate_total),
      }));
      const ranked = rankCarriers({ origin, destination, assignedCarrierId: load.carrier_id }, history, clock.now(), rules, (id) => refs.get(id) ?? '');
      if (ranked.length === 0) return [];
      const cards = await carrierCards(tx, orgId, candidates, ranked.map((r) => r.carrierId));
      return ranked.flatMap((r) => {
        const c = cards.get(r.carrierId);
        if (!c) return [];
        return [
          {
            carrier_id: c.id,
            carrier_external_reference_id: c.external_reference_id,
            carrier_name: c.name,
            dot_number: c.dot_number,
            lane_load_count: r.laneLoadCount,
            last_delivered_at: r.lastDeliveredAt,
            score: r.score,
            average_carrier_rate: r.averageCarrierRate,
          },
        ];
      });
    },

    /** Equipment types that have any market snapshot in the organization (most loads can skip the lookup). */
    equipmentWithSnapshots,

    /** D8: the latest market snapshot on the lane for the equipment, priced for `miles`; null when there is none. */
    async marketMaxBuyRate(
      tx: Executor,
      orgId: string,
      load: { equipment_type: string; origin: Coordinates | null; destination: Coordinates | null },
      miles: number | null,
    ): Promise<number | null> {
      const { origin, destination } = load;
      if (miles === null || !origin || !destination) return null;
      const area = areaOf(orgId, load.equipment_type, origin, destination);
      const newest = await snapshotsOnLane(tx, area, NEWEST_SNAPSHOTS);
      let latest = latestOnLane(newest, { origin, destination }, rules.radiusMiles);
      if (!latest && newest.length === NEWEST_SNAPSHOTS) latest = latestOnLane(await snapshotsOnLane(tx, area, null), { origin, destination }, rules.radiusMiles);
      return latest ? maxBuyRate(latest, miles) : null;
    },

    /** Brings a load's lane history in line with the load (in the load's transaction); the lanes it moved. */
    syncLoad: (tx: Executor, orgId: string, loadId: string): Promise<LaneKey[]> => syncLaneHistory(tx, orgId, loadId),

    /** The lane a load is history of (its stats change when the load is deleted). */
    laneOfLoad: async (tx: Executor, loadId: string): Promise<LaneKey[]> => {
      const lane = await laneOfLoad(tx, loadId);
      return lane ? [lane] : [];
    },

    /** A re-geocoded location moves the lane history that starts or ends there; the lanes it moved. */
    locationMoved: (tx: Executor, orgId: string, location: { id: string; latitude: number; longitude: number }): Promise<LaneKey[]> =>
      relocateLaneHistory(tx, orgId, location),
  };
}

export type LanesService = ReturnType<typeof lanesService>;
