import type { Executor } from '../../lib/db/index.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import type { LoadsService } from '../loads/loads.service.js';
import { laneEndLocations, locationsByIds, overviewCounts, searchLoads, topLanes, type LoadSearch } from './insights.repo.js';

/** The reads the dashboard shows beyond the API's own: counts, a load search, the busiest lanes. */
export function insightsService(reader: Executor, loads: Pick<LoadsService, 'present'>) {
  return {
    overview: (orgId: string) => overviewCounts(reader, orgId),

    /** A page of loads matching the search, as the API presents them. */
    async searchLoads(orgId: string, search: LoadSearch, page: PageRequest) {
      const { rows, total } = await searchLoads(reader, orgId, search, page);
      return { loads: await loads.present(reader, orgId, rows), total };
    },

    locationsByIds: (orgId: string, ids: string[]) => locationsByIds(reader, orgId, ids),

    /** Lanes with the most delivered history first, each end named by a location of the organization. */
    async topLanes(orgId: string, page: number, pageSize: number) {
      const { rows, total } = await topLanes(reader, orgId, page, pageSize);
      return { rows, total, ends: await laneEndLocations(reader, orgId, rows) };
    },
  };
}

export type InsightsService = ReturnType<typeof insightsService>;
