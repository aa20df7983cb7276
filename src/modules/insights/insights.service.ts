import type { Executor } from '../../lib/db/index.js';
import { NotFoundError } from '../../lib/http/errors.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { RECORD_KINDS, type ReferencedRecordKind } from '../../domain/records.js';
import type { RankBy } from '../lanes/lanes.service.js';
import {
  apiKeysOf,
  countLoadsOf,
  loadsOf,
  loadsThroughLocation,
  locationByRef,
  locationPoints,
  locationRefsPresent,
  locationsByIds,
  recordsByIds,
  overviewCounts,
  searchLoads,
  usersByIds,
  type LoadFilters,
} from './insights.repo.js';
import { laneEndLocations, topLanes } from './lanes-carriers.repo.js';
import { carrierActivity, primaryContacts } from './insights.carriers.js';
import { lanePage } from './insights.lanes.js';
import type { InsightsDeps } from './insights.carriers.js';

export { LOAD_SORTS, type LoadFilters, type LoadLine } from './insights.repo.js';
export type { CarrierLane, PriceAgainstMarket, PrimaryContact } from './insights.carriers.js';
export type { LaneHistoryLoad } from './insights.lanes.js';
export type { InsightsDeps } from './insights.carriers.js';

/**
 * What of the records a page of events is about still exists (the rows link only to those): by
 * kind, record id → its external reference; and the location references that exist.
 */
async function recordsStillThere(reader: Executor, orgId: string, wanted: { ids: Partial<Record<ReferencedRecordKind, string[]>>; locationRefs: string[] }) {
  const kinds = Object.keys(RECORD_KINDS).filter((k): k is ReferencedRecordKind => k !== 'market_rates');
  const [found, refs] = await Promise.all([
    Promise.all(kinds.map((kind) => recordsByIds(reader, orgId, kind, wanted.ids[kind] ?? []))),
    locationRefsPresent(reader, orgId, wanted.locationRefs),
  ]);
  const ids = new Map<ReferencedRecordKind, Map<string, string>>(
    kinds.map((kind, i) => [kind, new Map(found[i]!.map((r) => [r.id, r.external_reference_id]))]),
  );
  return { ids, locationRefs: new Set(refs.map((r) => r.external_reference_id)) };
}

/**
 * The reads the dashboard shows beyond the API's own: counts, the loads search, the busiest lanes, and
 * what the detail pages (a location, a carrier, a customer, a lane) show of a record's activity.
 */
export function insightsService(reader: Executor, services: Pick<InsightsDeps, 'loads' | 'lanes'>) {
  const deps: InsightsDeps = { reader, loads: services.loads, lanes: services.lanes };
  return {
    overview: (orgId: string) => overviewCounts(reader, orgId),

    /** A page of loads matching the filters, as the API presents them. */
    async searchLoads(orgId: string, filters: LoadFilters, page: PageRequest) {
      const { rows, total } = await searchLoads(reader, orgId, filters, page);
      return { loads: await services.loads.present(reader, orgId, rows), total };
    },

    locationsByIds: (orgId: string, ids: string[]) => locationsByIds(reader, orgId, ids),
    /** Up to 500 of the organization's locations (by name) for the Locations map. */
    locationPoints: (orgId: string) => locationPoints(reader, orgId),
    /** Each carrier's primary contact (else its first), with the carrier's own phone and email as fallback. */
    primaryContacts: (orgId: string, carrierIds: string[]) => primaryContacts(reader, orgId, carrierIds),
    /** The organization's keys (at most 200) for the usage table. */
    usageKeys: (orgId: string) => apiKeysOf(reader, orgId),

    /** Users of the organization by id (the users a load's reps matched), keyed by id. */
    async usersByIds(orgId: string, ids: string[]): Promise<Map<string, { name: string; email: string }>> {
      return new Map((await usersByIds(reader, orgId, ids)).map((u) => [u.id, { name: u.name, email: u.email }]));
    },

    /** What of the records a page of events is about still exists (recordsStillThere). */
    recordsStillThere: (orgId: string, wanted: Parameters<typeof recordsStillThere>[2]) => recordsStillThere(reader, orgId, wanted),

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
     * locations; `history`: the history loads read), and the open loads recommending it (insights.carriers.ts).
     */
    carrierActivity: (orgId: string, carrierId: string) => carrierActivity(deps, orgId, carrierId),

    /** A lane between two of the organization's locations (insights.lanes.ts). */
    lane: (orgId: string, originRef: string, destinationRef: string, equipmentType: string, rankBy: RankBy = 'history') =>
      lanePage(deps, orgId, originRef, destinationRef, equipmentType, rankBy),
  };
}

export type InsightsService = ReturnType<typeof insightsService>;
