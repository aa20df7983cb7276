import type { Executor } from '../../lib/db/index.js';
import type { ImportsTable } from '../../lib/db/types.js';
import type { ImportLog } from './imports.chunk.js';
import { analyzeDue } from './imports.pacing.js';
import { analyzeGrownTables, plannedRowsOf } from './imports.repo.js';

/** A run's keeper of the planner's statistics: `grew(rows)` after each chunk, `end()` after the last. */
export interface PlannerStats {
  grew(rows: number): Promise<void>;
  end(): Promise<void>;
}

/**
 * Keeps PostgreSQL's statistics of the tables an import grows in step with them (analyzeGrownTables,
 * when analyzeDue): `grew(rows)` after each chunk (not once the runner is `stopping`), `end()` after
 * the last. A failed ANALYZE is logged and the import goes on (and tries again only after as many rows
 * again). Nothing on SQLite.
 */
export async function plannerStats(deps: { db: Executor; log: ImportLog }, imp: ImportsTable, stopping: () => boolean): Promise<PlannerStats> {
  const { db, log } = deps;
  let planned = await plannedRowsOf(db, imp.resource).catch((err: unknown) => {
    log.warn({ err, import: imp.id }, 'the row estimate of the tables the import grows could not be read; they are not analyzed during this run');
    return null;
  });
  let since = 0;
  const analyze = async () => {
    // Counted as done whether or not it worked: a failure is not tried again at every chunk.
    since = 0;
    try {
      await analyzeGrownTables(db, imp.resource);
      planned = (await plannedRowsOf(db, imp.resource)) ?? 0;
    } catch (err) {
      log.warn({ err, import: imp.id }, 'ANALYZE of the tables the import grows failed; the import goes on');
    }
  };
  return {
    async grew(rows) {
      if (planned === null || stopping()) return;
      since += rows;
      if (analyzeDue(since, planned, false)) await analyze();
    },
    async end() {
      if (planned !== null && analyzeDue(since, planned, true)) await analyze();
    },
  };
}
