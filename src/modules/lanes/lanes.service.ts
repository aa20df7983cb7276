import { laneAreaOf } from '../../lib/db/lane-area.js';
import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import type { Coordinates } from '../../geo/index.js';
import { cellOf } from '../../domain/grid.js';
import { latestOnLane, maxBuyRate, type LaneKey } from '../../domain/lane.js';
import { rankCarriers, type LaneRules } from '../../domain/scoring.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import {
  carrierCards,
  equipmentWithSnapshots,
  laneCandidates,
  laneEnds,
  relocateLaneHistory,
  snapshotsOnLane,
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
  const areaOf = (orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates): LaneArea =>
    laneAreaOf(orgId, equipmentType, origin, destination, rules.radiusMiles);

  /** Areas around several lanes at once: the union of their cells and boxes (a superset of each). */
  const unionArea = (orgId: string, equipmentType: string, lanes: readonly { origin: Coordinates; destination: Coordinates }[]): LaneArea => {
    const areas = lanes.map((l) => areaOf(orgId, equipmentType, l.origin, l.destination));
    const box = (pick: (a: LaneArea) => LaneArea['originBox']) => ({
      minLat: Math.min(...areas.map((a) => pick(a).minLat)),
      maxLat: Math.max(...areas.map((a) => pick(a).maxLat)),
      minLon: Math.min(...areas.map((a) => pick(a).minLon)),
      maxLon: Math.max(...areas.map((a) => pick(a).maxLon)),
    });
    return {
      orgId,
      equipmentType,
      originCells: [...new Set(areas.flatMap((a) => a.originCells))],
      destinationCells: [...new Set(areas.flatMap((a) => a.destinationCells))],
      originBox: box((a) => a.originBox),
      destinationBox: box((a) => a.destinationBox),
    };
  };

  /** D7 ranking of each lane's carriers from one read of the history around all of them. */
  async function recommendOnLanes(
    tx: Executor,
    orgId: string,
    equipmentType: string,
    lanes: readonly { load: LaneLoad; origin: Coordinates; destination: Coordinates }[],
  ): Promise<CarrierRecommendation[][]> {
    const candidates = await laneCandidates(tx, lanes.length === 1 ? areaOf(orgId, equipmentType, lanes[0]!.origin, lanes[0]!.destination) : unionArea(orgId, equipmentType, lanes));
    const refs = new Map(candidates.map((c) => [c.carrier_id, c.carrier_external_reference_id]));
    const history = candidates.map((c) => ({
      carrierId: c.carrier_id,
      origin: { latitude: c.origin_latitude, longitude: c.origin_longitude },
      destination: { latitude: c.destination_latitude, longitude: c.destination_longitude },
      deliveredAt: c.delivered_at,
      deliveredAtMs: Date.parse(c.delivered_at),
      carrierRateTotal: c.carrier_rate_total === null ? null : Number(c.carrier_rate_total),
      carrierRateCurrency: c.carrier_rate_currency,
    }));
    const now = clock.now();
    // Loads on the same two places with the same carrier rank alike (a busy lane's open loads mostly
    // share their facilities): ranked once each.
    const byLane = new Map<string, ReturnType<typeof rankCarriers>>();
    const rankings = lanes.map((l) => {
      const key = `${l.origin.latitude},${l.origin.longitude}|${l.destination.latitude},${l.destination.longitude}|${l.load.carrier_id ?? ''}`;
      let ranked = byLane.get(key);
      if (!ranked) byLane.set(key, (ranked = rankCarriers({ origin: l.origin, destination: l.destination, assignedCarrierId: l.load.carrier_id }, history, now, rules, (id) => refs.get(id) ?? '')));
      return ranked;
    });
    const wanted = [...new Set(rankings.flatMap((r) => r.map((x) => x.carrierId)))];
    if (wanted.length === 0) return rankings.map(() => []);
    const cards = await carrierCards(tx, orgId, candidates, wanted);
    return rankings.map((ranked) =>
      ranked.flatMap((r) => {
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
            average_carrier_rate_currency: r.averageCarrierRateCurrency,
          },
        ];
      }),
    );
  }

  return {
    rules,

    /** D7 recommendations for a load's lane (origin, destination, equipment), best first, at most 10. */
    async recommend(tx: Executor, orgId: string, load: LaneLoad, stops?: readonly LaneStop[]): Promise<CarrierRecommendation[]> {
      const ends = await laneEnds(tx, orgId, load.id, stops);
      if (!ends.origin || !ends.destination) return [];
      const lane = { origin: { latitude: ends.origin.latitude, longitude: ends.origin.longitude }, destination: { latitude: ends.destination.latitude, longitude: ends.destination.longitude } };
      return (await recommendOnLanes(tx, orgId, load.equipment_type, [{ load, ...lane }]))[0]!;
    },

    /**
     * The same for many loads of one equipment type (the recommendations follow-up): one read of the
     * history over the union of their areas, then each load ranked exactly as `recommend` ranks it
     * (rows outside a load's radius weigh nothing).
     */
    async recommendMany(tx: Executor, orgId: string, loads: readonly { load: LaneLoad; origin: Coordinates; destination: Coordinates }[]): Promise<CarrierRecommendation[][]> {
      const out: CarrierRecommendation[][] = loads.map(() => []);
      const byEquipment = new Map<string, { index: number; load: LaneLoad; origin: Coordinates; destination: Coordinates }[]>();
      loads.forEach(({ load, origin, destination }, index) => {
        const entry = { index, load, origin, destination };
        const list = byEquipment.get(load.equipment_type);
        if (list) list.push(entry);
        else byEquipment.set(load.equipment_type, [entry]);
      });
      for (const [equipment, group] of byEquipment) {
        // Loads whose lanes share their origin and destination cells share one read.
        const byCells = new Map<string, typeof group>();
        for (const g of group) {
          const key = `${cellOf(g.origin.latitude, g.origin.longitude)}|${cellOf(g.destination.latitude, g.destination.longitude)}`;
          const list = byCells.get(key);
          if (list) list.push(g);
          else byCells.set(key, [g]);
        }
        for (const members of byCells.values()) {
          const ranked = await recommendOnLanes(tx, orgId, equipment, members);
          members.forEach((m, i) => (out[m.index] = ranked[i]!));
          // Requests go first between groups: on SQLite the reads are synchronous, and thousands of
          // rankings in one go would hold the event loop for seconds.
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      return out;
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

    /** A re-geocoded location moves the lane history that starts or ends there; the lanes it moved. */
    locationMoved: (tx: Executor, orgId: string, location: { id: string; latitude: number; longitude: number }): Promise<LaneKey[]> =>
      relocateLaneHistory(tx, orgId, location),
  };
}

export type LanesService = ReturnType<typeof lanesService>;
