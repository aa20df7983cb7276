import type { WritePipeline } from '../shared/write-pipeline.js';
import type { LanesService } from './lanes.service.js';
import { NO_FOREGROUND, type Foreground } from '../../lib/http/foreground.js';
import { organizationsBehind } from './watch.repo.js';
import { followUpPass, type FollowUpStats, type PassDeps } from './follow-up-pass.js';

// Announcements written per transaction (about 6 KB each with their evidence).
const SLICE = 50;
// The longest a step of a pass waits for the requests in flight to end (a steady stream of requests
// slows the follow-up down, it never stops it); a pass waits four times this in all at most.
const FOLLOW_UP_WAIT_MS = 250;

export interface FollowUpLog {
  warn(obj: object, msg: string): void;
}

/**
 * load.recommendations_changed (docs/events.md, "The events"): after load writes commit, the open loads
 * near the lanes whose history moved have their ranked carriers computed again, and an event is written
 * for each whose list (the carriers, in order) differs from the last one announced. It reads what the
 * writes left in the outbox (each load event keeps the lanes it moved), from a cursor per organization
 * that moves in the same transaction as the events it writes: a process that dies loses nothing (the
 * next pass, or the sweep of another process, starts from the cursor), and no change is announced twice.
 * A pass's steps are in follow-up-pass.ts; the runs per organization, with their gap, below.
 *
 * It runs beside the requests, never inside one: a write is answered before its follow-up starts.
 */
export function recommendationsFeed(deps: {
  pipeline: WritePipeline;
  lanes: LanesService;
  radiusMiles: number;
  gapMs?: number;
  slice?: number;
  log?: FollowUpLog;
  /** This process's requests: a pass goes on between its steps once none is in flight (or after `quietWaitMs`). */
  foreground?: Foreground;
  quietWaitMs?: number;
}) {
  const giveWay = giveWayTo(deps.foreground ?? NO_FOREGROUND, deps.quietWaitMs ?? FOLLOW_UP_WAIT_MS);
  /** What the follow-up has done in this process (benchmarks, diagnosis). */
  const stats: FollowUpStats = { passes: 0, ranked: 0, announced: 0 };
  const pass: PassDeps = { pipeline: deps.pipeline, lanes: deps.lanes, radiusMiles: deps.radiusMiles, slice: deps.slice ?? SLICE, stats, giveWay };
  const runs = organizationRuns({ pass: (orgId) => followUpPass(pass, orgId), giveWay, gapMs: deps.gapMs ?? 0, log: deps.log });
  return {
    stats,
    schedule: runs.schedule,
    /** Every organization with events not yet followed up (after a restart, or another process's crash). */
    async sweep(): Promise<void> {
      await Promise.all((await organizationsBehind(deps.pipeline.reader)).map((orgId) => runs.schedule(orgId)));
    },
    /** Resolves once no run is under way in this process (tests, shutdown). */
    async idle(): Promise<void> {
      while (runs.running.size > 0) await Promise.all([...runs.running.values()]);
    },
  };
}

export type RecommendationsFeed = ReturnType<typeof recommendationsFeed>;

/**
 * A pass's way of giving way to this process's requests: each pass calls `giveWay()` for its own, and
 * each call of that waits for quiet within what is left of the pass's budget. What a pass may spend
 * waiting for requests in all: past it, its steps only let what arrived be read (a turn of the event
 * loop). A process that always has a request in flight (a long upload, a steady push) slows each pass
 * by this much at most, never by a wait per lane group.
 */
function giveWayTo(fg: Foreground, quietWaitMs: number): () => () => Promise<void> {
  const passBudgetMs = 4 * quietWaitMs;
  return () => {
    let waited = 0;
    return async () => {
      const started = performance.now();
      await fg.quiet(Math.min(quietWaitMs, Math.max(0, passBudgetMs - waited)));
      waited += performance.now() - started;
    };
  };
}

const pause = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/**
 * The runs of the follow-up per organization in this process: one at a time for each (a write meanwhile
 * asks for another once it ends), its passes until the outbox is worked through. `gapMs`: the least time
 * between two runs of an organization: writes arriving meanwhile are followed up together (a busy
 * lane's open loads are ranked once for many batches, not once per batch).
 */
function organizationRuns(opts: { pass: (orgId: string) => Promise<boolean>; giveWay: () => () => Promise<void>; gapMs: number; log?: FollowUpLog }) {
  const { gapMs } = opts;
  const running = new Map<string, Promise<void>>();
  const lastEnded = new Map<string, number>();
  const again = new Set<string>();

  /** Works through an organization's outbox; one run per organization at a time in this process. */
  function schedule(orgId: string): Promise<void> {
    const busy = running.get(orgId);
    if (busy) {
      again.add(orgId);
      return busy;
    }
    const run = (async () => {
      // After the write's answer has gone out (the follow-up is never part of a request), and once the
      // requests in flight have ended: a push's next batch goes before the follow-up of its last one.
      await opts.giveWay()();
      try {
        await pause((lastEnded.get(orgId) ?? -Infinity) + gapMs - Date.now());
        do {
          again.delete(orgId);
          while (await opts.pass(orgId));
          if (again.has(orgId)) await pause(gapMs);
        } while (again.has(orgId));
      } catch (err) {
        // The cursor did not move: the next write or the sweep tries again.
        opts.log?.warn({ err }, 'recommendations follow-up failed');
      } finally {
        running.delete(orgId);
        if (gapMs > 0) ended(orgId);
      }
    })();
    running.set(orgId, run);
    return run;
  }

  /** When the organization's run ended; forgotten once past the gap (the map stays as small as the organizations writing now). */
  function ended(orgId: string): void {
    const now = Date.now();
    lastEnded.set(orgId, now);
    for (const [id, at] of lastEnded) if (at + gapMs < now) lastEnded.delete(id);
  }

  return { running, schedule };
}
