import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { DataStore } from '../../lib/db/index.js';
import { inTransaction } from '../../lib/db/tx.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { Metrics } from '../../lib/http/metrics.js';
import { laneKeyId, refreshLaneStats, type LaneKey } from './lanes.repo.js';

interface RequestScope {
  orgId: string;
  lanes: Map<string, LaneKey>;
}

/**
 * The lane analytics run (D7): writes inside a request report the lanes they touched; when the
 * request's work is done, one run refreshes those lanes' stats (the lanes the dashboard lists). One
 * run per write request that changes loads, exactly one per batch request however many items it had,
 * counted in lanebridge_analytics_runs_total. Recommendations never wait for it: they read the lane
 * history, which every load write keeps current in its own transaction.
 */
export function laneAnalytics(deps: { store: DataStore; metrics: Metrics; clock: Clock; log?: FastifyBaseLogger }) {
  const scopes = new AsyncLocalStorage<RequestScope>();
  let active = 0;

  async function run(scope: RequestScope, counted: boolean) {
    if (counted) deps.metrics.analyticsRuns.inc();
    if (scope.lanes.size === 0) return;
    try {
      await inTransaction(deps.store, (tx) => refreshLaneStats(tx, scope.orgId, [...scope.lanes.values()], toIso(deps.clock.now())));
    } catch (err) {
      // The stats are derived and rebuilt by the next run on the lane; the write itself is answered.
      deps.log?.warn({ err }, 'lane stats refresh failed');
    }
  }

  return {
    /** Called by writes: these lanes changed in the current request. */
    touch(lanes: LaneKey[]) {
      const scope = scopes.getStore();
      if (!scope) return;
      for (const k of lanes) scope.lanes.set(laneKeyId(k), k);
    },

    /**
     * Runs one write request's work, then the analytics run once. A single write that fails changed
     * nothing and runs nothing; a batch (`always`) runs exactly once whatever its items did.
     */
    async request<T>(orgId: string, work: () => Promise<T>, opts: { always?: boolean; counted?: boolean } = {}): Promise<T> {
      const scope: RequestScope = { orgId, lanes: new Map() };
      const counted = opts.counted ?? true;
      let result: T;
      active++;
      try {
        result = await scopes.run(scope, work);
      } catch (err) {
        if (opts.always) await run(scope, counted);
        throw err;
      } finally {
        // Node 20 keeps async hooks on every promise of the process while an AsyncLocalStorage is
        // enabled (about 5% of a cached GET): switched off again whenever no write request is inside one.
        if (--active === 0) scopes.disable();
      }
      await run(scope, counted);
      return result;
    },

    /** Rebuilds every lane's stats of an organization (after a bulk import outside the API). */
    async rebuild(orgId: string) {
      await inTransaction(deps.store, async (tx) => {
        const lanes = await tx
          .selectFrom('lane_history')
          .select(['equipment_type', 'origin_cell', 'destination_cell'])
          .distinct()
          .where('org_id', '=', orgId)
          .execute();
        await tx.deleteFrom('lane_stats').where('org_id', '=', orgId).execute();
        for (let i = 0; i < lanes.length; i += 500) await refreshLaneStats(tx, orgId, lanes.slice(i, i + 500), toIso(deps.clock.now()));
      });
    },
  };
}

export type LaneAnalytics = ReturnType<typeof laneAnalytics>;
