import { graceMinutesFor, parseOutcomes, priceSummary } from '../../domain/evidence.js';
import { graceMinutesOf } from '../lanes/lanes.repo.js';
import type { Executor } from '../../lib/db/index.js';
import { NotFoundError } from '../../lib/http/errors.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { withinRadius } from '../../domain/lane.js';
import { RECORD_KINDS, type ReferencedRecordKind } from '../../domain/records.js';
import type { Coordinates } from '../../geo/index.js';
import type { RankBy, LanesService } from '../lanes/lanes.service.js';
import type { LoadsService } from '../loads/loads.service.js';
import {
  apiKeysOf,
  carrierContacts,
  carrierDeliveries,
  countLoadsOf,
  laneEndLocations,
  laneHistoryNear,
  laneSnapshotsNear,
  loadsOf,
  loadsThroughLocation,
  locationByRef,
  locationPoints,
  locationRefsPresent,
  locationsByIds,
  recordsByIds,
  overviewCounts,
  searchLoads,
  topLanes,
  usersByIds,
  watchesNaming,
  type LoadFilters,
} from './insights.repo.js';

export { LOAD_SORTS, type LoadFilters, type LoadLine } from './insights.repo.js';

/** Lanes of a carrier's page at most. */
const CARRIER_LANES_SHOWN = 25;

export interface CarrierLane {
  equipment_type: string;
  origin_location_id: string;
  destination_location_id: string;
  loads: number;
  last_delivered_at: string;
  /** The price against the market of the carrier's deliveries on the lane (see carrierActivity). */
  price?: PriceAgainstMarket;
}

/** The median of total ÷ (market $/mi at the delivery date × miles) over the priced deliveries (null: none priced). */
export type PriceAgainstMarket = ReturnType<typeof priceSummary>;

// Each delivery counts once on the page (the recommendations weigh them by recency).
const priceOf = (ratios: readonly number[]): PriceAgainstMarket => priceSummary(ratios.map((value) => ({ value, w: 1 })));

export interface LaneHistoryLoad {
  load_id: string;
  external_reference_id: string;
  carrier_id: string;
  carrier_external_reference_id: string;
  delivered_at: string;
  carrier_rate_total: number | null;
  total_distance: number | null;
}

export interface PrimaryContact {
  name: string;
  phone: string | null;
  email: string | null;
}

/** Both ends of a row within the radius of the lane's ends (the lane's exact filter after the index's area). */
function onTheLane(origin: Coordinates, destination: Coordinates, radiusMiles: number) {
  return (r: { origin_latitude: number; origin_longitude: number; destination_latitude: number; destination_longitude: number }) =>
    withinRadius(origin, { latitude: r.origin_latitude, longitude: r.origin_longitude }, radiusMiles) &&
    withinRadius(destination, { latitude: r.destination_latitude, longitude: r.destination_longitude }, radiusMiles);
}

/** The lanes (origin and destination locations, equipment) of delivered history rows, busiest first. */
function groupByLane(
  rows: readonly { equipment_type: string; origin_location_id: string; destination_location_id: string; delivered_at: string }[],
): CarrierLane[] {
  const lanes = new Map<string, CarrierLane>();
  for (const r of rows) {
    const key = `${r.equipment_type}|${r.origin_location_id}|${r.destination_location_id}`;
    const lane = lanes.get(key);
    if (lane) lane.loads++;
    else
      lanes.set(key, {
        equipment_type: r.equipment_type,
        origin_location_id: r.origin_location_id,
        destination_location_id: r.destination_location_id,
        loads: 1,
        last_delivered_at: r.delivered_at,
      });
  }
  return [...lanes.values()].sort((a, b) => b.loads - a.loads || (a.last_delivered_at < b.last_delivered_at ? 1 : -1));
}

/** On-time delivery on the carrier page (docs/dashboard.md, "Recommendation evidence"): scored delivery stops and those on time, per calendar month (UTC) of delivery, oldest first. */
function onTimeByMonth(
  rows: readonly { delivered_at: string; stop_outcomes: string }[],
  graceMinutes: number,
): { month: string; scored: number; onTime: number }[] {
  const months = new Map<string, { scored: number; onTime: number }>();
  for (const r of rows) {
    const month = r.delivered_at.slice(0, 7);
    const m = months.get(month) ?? { scored: 0, onTime: 0 };
    for (const late of parseOutcomes(r.stop_outcomes ?? '').deliveries) {
      if (late === null) continue;
      m.scored++;
      if (late <= graceMinutes * 60) m.onTime++;
    }
    months.set(month, m);
  }
  return [...months.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([month, m]) => ({ month, ...m }));
}

/**
 * The reads the dashboard shows beyond the API's own: counts, the loads search, the busiest lanes, and
 * what the detail pages (a location, a carrier, a customer, a lane) show of a record's activity.
 */
export function insightsService(
  reader: Executor,
  deps: { loads: Pick<LoadsService, 'present'>; lanes: Pick<LanesService, 'recommendMany' | 'recommendLane' | 'rules' | 'priceAgainstMarket'> },
) {
  /** Each carrier's primary contact (else its first), with the carrier's own phone and email as fallback. */
  async function primaryContacts(orgId: string, carrierIds: string[]): Promise<Map<string, PrimaryContact>> {
    const out = new Map<string, PrimaryContact>();
    if (carrierIds.length === 0) return out;
    const { contacts, carriers } = await carrierContacts(reader, orgId, carrierIds);
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

  /** The history of a lane (docs/api.md, "Lane history and carrier recommendations"): delivered loads of the equipment with each end within the radius, newest first. */
  async function laneHistory(
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
  async function laneSnapshots(orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number) {
    return (await laneSnapshotsNear(reader, orgId, equipmentType, origin, destination, radiusMiles)).filter(onTheLane(origin, destination, radiusMiles));
  }

  /** Open loads whose current recommendations include the carrier, with its rank there (0 if unreadable). */
  async function recommendedFor(orgId: string, carrierId: string) {
    return (await watchesNaming(reader, orgId, carrierId)).map((r) => {
      let rank = 0;
      try {
        rank = (JSON.parse(r.ranked) as string[]).indexOf(carrierId) + 1;
      } catch {
        rank = 0;
      }
      return { external_reference_id: r.external_reference_id, status: r.status, equipment_type: r.equipment_type, pickup_at: r.pickup_at, rank };
    });
  }

  return {
    overview: (orgId: string) => overviewCounts(reader, orgId),

    /** A page of loads matching the filters, as the API presents them. */
    async searchLoads(orgId: string, filters: LoadFilters, page: PageRequest) {
      const { rows, total } = await searchLoads(reader, orgId, filters, page);
      return { loads: await deps.loads.present(reader, orgId, rows), total };
    },

    locationsByIds: (orgId: string, ids: string[]) => locationsByIds(reader, orgId, ids),
    /** Up to 500 of the organization's locations (by name) for the Locations map. */
    locationPoints: (orgId: string) => locationPoints(reader, orgId),
    primaryContacts,
    /** The organization's keys (at most 200) for the usage table. */
    usageKeys: (orgId: string) => apiKeysOf(reader, orgId),

    /** Users of the organization by id (the users a load's reps matched), keyed by id. */
    async usersByIds(orgId: string, ids: string[]): Promise<Map<string, { name: string; email: string }>> {
      return new Map((await usersByIds(reader, orgId, ids)).map((u) => [u.id, { name: u.name, email: u.email }]));
    },

    /**
     * What of the records a page of events is about still exists (the rows link only to those): by
     * kind, record id → its external reference; and the location references that exist.
     */
    async recordsStillThere(orgId: string, wanted: { ids: Partial<Record<ReferencedRecordKind, string[]>>; locationRefs: string[] }) {
      const kinds = Object.keys(RECORD_KINDS).filter((k): k is ReferencedRecordKind => k !== 'market_rates');
      const [found, refs] = await Promise.all([
        Promise.all(kinds.map((kind) => recordsByIds(reader, orgId, kind, wanted.ids[kind] ?? []))),
        locationRefsPresent(reader, orgId, wanted.locationRefs),
      ]);
      const ids = new Map<ReferencedRecordKind, Map<string, string>>(
        kinds.map((kind, i) => [kind, new Map(found[i]!.map((r) => [r.id, r.external_reference_id]))]),
      );
      return { ids, locationRefs: new Set(refs.map((r) => r.external_reference_id)) };
    },

    /** Lanes with the most delivered history first, each end named by a location of the organization. */
    async topLanes(orgId: string, page: number, pageSize: number) {
      const { rows, total } = await topLanes(reader, orgId, page, pageSize);
      return { rows, total, ends: await laneEndLocations(reader, orgId, rows) };
    },

    /** A location and the newest loads with a stop there. */
    async locationActivity(orgId: string, ref: string) {
      const location = await locationByRef(reader, orgId, ref);
      if (!location) throw new NotFoundError(RECORD_KINDS.locations.name, ref);
      return { location, loads: await loadsThroughLocation(reader, orgId, location.id) };
    },

    /** A customer's newest loads and how many it has. */
    async customerActivity(orgId: string, customerId: string) {
      const [loads, total] = await Promise.all([loadsOf(reader, orgId, { customerId }), countLoadsOf(reader, orgId, { customerId })]);
      return { loads, total };
    },

    /**
     * A carrier's newest loads and their count, the lanes it has delivered on (busiest first, with their
     * locations; `history`: the history loads read), and the open loads recommending it.
     */
    async carrierActivity(orgId: string, carrierId: string) {
      const [loads, total, deliveries, recommended] = await Promise.all([
        loadsOf(reader, orgId, { carrierId }),
        countLoadsOf(reader, orgId, { carrierId }),
        carrierDeliveries(reader, orgId, carrierId),
        recommendedFor(orgId, carrierId),
      ]);
      const lanes = groupByLane(deliveries).slice(0, CARRIER_LANES_SHOWN);
      const places = new Map(
        (
          await locationsByIds(
            reader,
            orgId,
            lanes.flatMap((l) => [l.origin_location_id, l.destination_location_id]),
          )
        ).map((l) => [l.id, l]),
      );
      const graceMinutes = graceMinutesFor(await graceMinutesOf(reader, orgId), deps.lanes.rules.graceMinutes);
      // The price against the market on each lane shown, and over them all: its deliveries priced as
      // the recommendations price them (the lane's snapshot as of the delivery date), the median of each.
      const priceable = lanes.flatMap((lane) => {
        const origin = places.get(lane.origin_location_id);
        const destination = places.get(lane.destination_location_id);
        if (!origin || !destination) return [];
        const rows = deliveries.filter(
          (r) =>
            r.equipment_type === lane.equipment_type &&
            r.origin_location_id === lane.origin_location_id &&
            r.destination_location_id === lane.destination_location_id,
        );
        return [{ lane, equipmentType: lane.equipment_type, origin, destination, rows }];
      });
      const ratios = await deps.lanes.priceAgainstMarket(reader, orgId, priceable);
      priceable.forEach((p, i) => (p.lane.price = priceOf(ratios[i]!)));
      const price = priceOf(ratios.flat());
      return { loads, total, lanes, history: deliveries.length, places, recommended, onTime: onTimeByMonth(deliveries, graceMinutes), graceMinutes, price };
    },

    /**
     * A lane (docs/dashboard.md, "Lanes and recommendation lanes") between two of the organization's
     * locations: its history loads, the market snapshots on it, and its carriers ranked exactly as a
     * load on this lane would be (no carrier assigned), with their primary contacts.
     */
    async lane(orgId: string, originRef: string, destinationRef: string, equipmentType: string, rankBy: RankBy = 'history') {
      const [origin, destination] = await Promise.all([locationByRef(reader, orgId, originRef), locationByRef(reader, orgId, destinationRef)]);
      if (!origin || !destination) throw new NotFoundError(RECORD_KINDS.locations.name, !origin ? originRef : destinationRef);
      const radiusMiles = deps.lanes.rules.radiusMiles;
      const [history, snapshots, ranked] = await Promise.all([
        laneHistory(orgId, equipmentType, origin, destination, radiusMiles),
        laneSnapshots(orgId, equipmentType, origin, destination, radiusMiles),
        deps.lanes.recommendLane(reader, orgId, equipmentType, origin, destination, { rankBy }),
      ]);
      const carriers = ranked.items;
      const contacts = await primaryContacts(
        orgId,
        carriers.map((r) => r.carrier_id),
      );
      return { origin, destination, radiusMiles, history, snapshots, carriers, contacts };
    },
  };
}

export type InsightsService = ReturnType<typeof insightsService>;
