import { Type, type Static } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { prepared } from '../../lib/db/prepared.js';
import type { Clock } from '../../lib/clock.js';
import { haversineMiles, type Coordinates } from '../../geo/index.js';
import { Nullable } from '../../lib/http/schema-helpers.js';
import { boxWithin, cellsWithin } from '../../domain/grid.js';
import { laneCandidates, laneEnds, onLane } from './lanes.repo.js';
import { rankCarriers, type LaneRules } from '../../domain/scoring.js';

export const CarrierRecommendation = Type.Object(
  {
    carrier_id: Type.String(),
    carrier_external_reference_id: Type.String(),
    carrier_name: Type.String(),
    dot_number: Nullable(Type.String()),
    lane_load_count: Type.Integer({ description: 'History loads of this carrier on the lane.' }),
    last_delivered_at: Type.String({ format: 'date-time' }),
    score: Type.Number({ description: 'Sum over those loads of proximity weight × 0.5^(age in days / 90), to 6 decimals.' }),
    average_carrier_rate: Nullable(Type.Number({ description: 'Mean total of CARRIER financial rates over those loads that have any; null when none.' })),
  },
  { $id: 'CarrierRecommendation' },
);
export type CarrierRecommendation = Static<typeof CarrierRecommendation>;

const snapshotEquipment = prepared<{ orgId: string }, { equipment_type: string }>((db, p) =>
  db.selectFrom('market_rate_snapshots').select('equipment_type').distinct().where('org_id', '=', p('orgId')),
);

export interface LaneLoad {
  id: string;
  equipment_type: string;
  carrier_id: string | null;
}

export function lanesService(clock: Clock, rules: LaneRules) {
  const near = (a: Coordinates, b: Coordinates) => haversineMiles(a, b) <= rules.radiusMiles;

  return {
    rules,

    /** D7 recommendations for a load's lane (origin, destination, equipment), best first, at most 10. */
    async recommend(tx: Executor, orgId: string, load: LaneLoad): Promise<CarrierRecommendation[]> {
      const ends = await laneEnds(tx, orgId, load.id);
      if (!ends.origin || !ends.destination) return [];
      const origin = { latitude: ends.origin.latitude, longitude: ends.origin.longitude };
      const destination = { latitude: ends.destination.latitude, longitude: ends.destination.longitude };
      const candidates = await laneCandidates(
        tx,
        orgId,
        load.equipment_type,
        cellsWithin(origin.latitude, origin.longitude, rules.radiusMiles),
        cellsWithin(destination.latitude, destination.longitude, rules.radiusMiles),
        boxWithin(origin.latitude, origin.longitude, rules.radiusMiles),
        boxWithin(destination.latitude, destination.longitude, rules.radiusMiles),
      );
      const refs = new Map<string, string>();
      const history = candidates.map((c) => {
        refs.set(c.carrier_id, c.carrier_external_reference_id);
        return {
          carrierId: c.carrier_id,
          origin: { latitude: c.origin_latitude, longitude: c.origin_longitude },
          destination: { latitude: c.destination_latitude, longitude: c.destination_longitude },
          deliveredAt: c.delivered_at,
          carrierRateTotal: c.carrier_rate_total === null ? null : Number(c.carrier_rate_total),
        };
      });
      const ranked = rankCarriers({ origin, destination, assignedCarrierId: load.carrier_id }, history, clock.now(), rules, (id) => refs.get(id) ?? '');
      if (ranked.length === 0) return [];
      const carriers = await tx
        .selectFrom('carriers')
        .select(['id', 'external_reference_id', 'name', 'dot_number'])
        .where('org_id', '=', orgId)
        .where('id', 'in', ranked.map((r) => r.carrierId))
        .execute();
      const byId = new Map(carriers.map((c) => [c.id, c]));
      return ranked.flatMap((r) => {
        const c = byId.get(r.carrierId);
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
    async equipmentWithSnapshots(tx: Executor, orgId: string): Promise<Set<string>> {
      return new Set((await snapshotEquipment(tx, { orgId })).map((r) => r.equipment_type));
    },

    /**
     * D8: the latest market snapshot on the lane (D7 matching) for the equipment, as
     * (rate_per_mile_high, else rate_per_mile) × miles, in cents; null when there is none.
     */
    async marketMaxBuyRate(
      tx: Executor,
      orgId: string,
      load: { equipment_type: string; origin: Coordinates | null; destination: Coordinates | null },
      miles: number | null,
    ): Promise<number | null> {
      const { origin, destination } = load;
      if (miles === null || !origin || !destination) return null;
      const lookup = (limit: number | null) => {
        let q = tx
          .selectFrom('market_rate_snapshots')
          .select(['origin_latitude', 'origin_longitude', 'destination_latitude', 'destination_longitude', 'rate_per_mile', 'rate_per_mile_high'])
          .where((eb) =>
            onLane(eb as never, {
              orgId,
              equipmentType: load.equipment_type,
              originCells: cellsWithin(origin.latitude, origin.longitude, rules.radiusMiles),
              destinationCells: cellsWithin(destination.latitude, destination.longitude, rules.radiusMiles),
              originBox: boxWithin(origin.latitude, origin.longitude, rules.radiusMiles),
              destinationBox: boxWithin(destination.latitude, destination.longitude, rules.radiusMiles),
            }),
          )
          .orderBy('as_of', 'desc')
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc');
        if (limit !== null) q = q.limit(limit);
        return q.execute();
      };
      const matches = (s: { origin_latitude: number; origin_longitude: number; destination_latitude: number; destination_longitude: number }) =>
        near(origin, { latitude: s.origin_latitude, longitude: s.origin_longitude }) &&
        near(destination, { latitude: s.destination_latitude, longitude: s.destination_longitude });
      // The newest few are nearly always the answer (a lane with thousands of snapshots, found by the
      // soak, made every listed load read them all); only when none of them is within the radius are
      // the rest read.
      const FIRST = 20;
      const newest = await lookup(FIRST);
      let latest = newest.find(matches);
      if (!latest && newest.length === FIRST) latest = (await lookup(null)).find(matches);
      if (!latest) return null;
      return Math.round((latest.rate_per_mile_high ?? latest.rate_per_mile) * miles * 100) / 100;
    },
  };
}

export type LanesService = ReturnType<typeof lanesService>;
