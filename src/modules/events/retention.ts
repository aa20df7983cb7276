import type { Executor } from '../../lib/db/index.js';
import type { EventsService } from './events.service.js';

// Every ten minutes: retention is a matter of days, and each pass is a few small transactions.
const EVERY_MS = 10 * 60_000;

// Every half minute: what a crashed process left for the recommendations follow-up is picked up.
const SWEEP_EVERY_MS = 30_000;

/**
 * The outbox's housekeeping on timers that never keep the process alive: retention prunes events past
 * EVENT_RETENTION_DAYS (first a minute after start, then every ten minutes), and `sweep` (the
 * recommendations follow-up of organizations left behind) runs shortly after start and every half
 * minute. A failed pass (the database away) is logged and tried again at the next tick.
 */
export function eventRetention(
  deps: { events: EventsService; db: Executor; log: { warn(obj: unknown, msg: string): void }; sweep?: (() => Promise<void>) | undefined },
  everyMs = EVERY_MS,
) {
  const guarded = (name: string, work: () => Promise<unknown>) => {
    let running = false;
    return async () => {
      if (running) return;
      running = true;
      try {
        await work();
      } catch (err) {
        deps.log.warn({ err }, `${name} failed; tried again at the next tick`);
      } finally {
        running = false;
      }
    };
  };
  const prune = guarded('event retention pass', () => deps.events.prune(deps.db));
  const timers = [setTimeout(prune, Math.min(60_000, everyMs)), setInterval(prune, everyMs)];
  if (deps.sweep) {
    const sweep = guarded('recommendations sweep', deps.sweep);
    timers.push(setTimeout(sweep, 2_000), setInterval(sweep, SWEEP_EVERY_MS));
  }
  for (const t of timers) t.unref();
  return {
    stop() {
      for (const t of timers) clearTimeout(t);
    },
  };
}
