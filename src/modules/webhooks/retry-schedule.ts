/** The waits (docs/webhooks.md, "Retries") after the 1st … 9th failed attempt (±20% jitter); the 10th failure is final. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000] as const;
export const JITTER = 0.2;
/** A Retry-After longer than the schedule's longest wait is capped to it. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/** The schedule's wait before the next attempt after `attempts` failed ones (jittered), or null when none is left. */
export function retryDelay(attempts: number, random: () => number = Math.random): number | null {
  const base = RETRY_SCHEDULE_MS[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** Retry-After (seconds or an HTTP date) in milliseconds from `now`, between 0 and 24 h, or null. */
export function retryAfterMs(header: string | null, now: Date): number | null {
  if (!header) return null;
  const t = header.trim();
  const ms = /^\d+$/.test(t) ? Number(t) * 1000 : Date.parse(t) - now.getTime();
  if (!Number.isFinite(ms)) return null;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/**
 * The wait before the next attempt after `attempts` failed ones, or null when the attempt cap is
 * reached (whatever the receiver asked). A receiver's Retry-After (429 and 503) may lengthen the
 * schedule's wait, up to 24 h, never shorten it: `Retry-After: 0` or a date in the past cannot make us
 * retry at once, and cannot add attempts.
 */
export function nextAttemptWait(attempts: number, retryAfter: number | null, random: () => number = Math.random): number | null {
  const scheduled = retryDelay(attempts, random);
  if (scheduled === null) return null;
  if (retryAfter === null) return scheduled;
  return Math.max(scheduled, Math.min(retryAfter, MAX_RETRY_AFTER_MS));
}
