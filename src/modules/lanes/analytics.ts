import type { DataStore } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { Metrics } from '../../lib/http/metrics.js';
import type { AfterCommit } from '../shared/write-pipeline.js';
import { historyLanes, replaceLaneStats } from './lanes.repo.js';

export interface WarnLog {
  warn(obj: object, msg: string): void;
}

/**
 * The lane analytics run (docs/api.md, "Lane history and carrier recommendations"): the stats of the
 * lanes whose history a write moved (the lanes the dashboard lists) are brought up to date by the
 * write's own transaction, as it writes the history (src/modules/lanes/lane-stats.repo.ts: what was added adds up, a
 * lane that lost rows is recounted), so they are never behind the history nor lost with a process. One
 * run is counted in lanebridge_analytics_runs_total per load write and per load batch, however many
 * items it had.
 */
export function laneAnalytics(deps: { store: DataStore; metrics: Metrics; clock: Clock; log?: WarnLog }) {
  const afterCommit: AfterCommit = async (_orgId, _committed, opts) => {
    if (opts.analyticsRun) deps.metrics.analyticsRuns.inc();
  };

  return {
    afterCommit,
    /** Rebuilds every lane's stats of an organization (after a bulk import outside the API). */
    rebuild: (orgId: string) =>
      deps.store.db.transaction().execute(async (tx) => replaceLaneStats(tx, orgId, await historyLanes(tx, orgId), toIso(deps.clock.now()))),
  };
}
