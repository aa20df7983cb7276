import type { DataStore } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { Metrics } from '../../lib/http/metrics.js';
import type { AfterCommit } from '../shared/write-pipeline.js';
import { refreshLaneStatsAtomically } from '../../lib/db/lane-stats.js';
import { historyLanes, replaceLaneStats } from './lanes.repo.js';

export interface WarnLog {
  warn(obj: object, msg: string): void;
}

/**
 * The lane analytics run (D7): after a write commits, the stats of the lanes whose history it moved
 * are refreshed (the lanes the dashboard lists). Recommendations never wait for it: they read the lane
 * history, which every load write keeps current in its own transaction. One run is counted in
 * lanebridge_analytics_runs_total per load write and per load batch, however many items it had.
 */
export function laneAnalytics(deps: { store: DataStore; metrics: Metrics; clock: Clock; log?: WarnLog }) {
  const afterCommit: AfterCommit = async (orgId, committed, opts) => {
    if (opts.analyticsRun) deps.metrics.analyticsRuns.inc();
    if (committed.lanes.size === 0) return;
    try {
      const lanes = [...committed.lanes.values()];
      const now = toIso(deps.clock.now());
      await refreshLaneStatsAtomically(deps.store, orgId, lanes, now);
    } catch (err) {
      // The stats are derived and rebuilt by the next run on the lane; the write itself is answered.
      deps.log?.warn({ err }, 'lane stats refresh failed');
    }
  };

  return {
    afterCommit,
    /** Rebuilds every lane's stats of an organization (after a bulk import outside the API). */
    rebuild: (orgId: string) =>
      deps.store.db.transaction().execute(async (tx) => replaceLaneStats(tx, orgId, await historyLanes(tx, orgId), toIso(deps.clock.now()))),
  };
}

export type LaneAnalytics = ReturnType<typeof laneAnalytics>;
