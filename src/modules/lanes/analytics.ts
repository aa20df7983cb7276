import type { Metrics } from '../../lib/http/metrics.js';

/**
 * The lane analytics entry point (D7): called once per write request that changes loads, and exactly
 * once per batch request however many items it has. Counted in lanebridge_analytics_runs_total.
 * The lane work it does arrives with the lanes capability; until then a run only counts.
 */
export interface LaneAnalytics {
  run(orgId: string): Promise<void>;
}

export function laneAnalytics(metrics: Metrics): LaneAnalytics {
  return {
    async run() {
      metrics.analyticsRuns.inc();
    },
  };
}
