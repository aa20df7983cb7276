import { setTimeout as sleep } from 'node:timers/promises';

export interface ThrottleOptions {
  /** Failures (per email and client address) answered without any delay: typing mistakes. */
  freeFailures: number;
  /** Delay before the first slowed attempt; it doubles with each further failure. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failures older than this are forgotten. */
  forgetAfterMs: number;
  /** Attempts waiting for one email and address; more are refused at once (with the same message). */
  maxQueued: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = {
  freeFailures: 2,
  baseDelayMs: 500,
  maxDelayMs: 16_000,
  forgetAfterMs: 15 * 60_000,
  maxQueued: 3,
};

interface Entry {
  failures: number;
  lastFailureAt: number;
  /** Attempts of one email and address run one after the other, so sending them in parallel gains nothing. */
  chain: Promise<void>;
  queued: number;
}

const SWEEP_AT = 10_000;
/** Past this many tracked pairs the oldest idle ones are dropped, so invented emails cannot fill memory. */
const MAX_ENTRIES = 50_000;

/**
 * Slows repeated failed sign-ins, per email and client address, in this process: after the free
 * failures each further attempt waits twice as long as the one before (0.5 s, 1 s, 2 s, … 16 s). A
 * success forgets the failures. The caller answers every failure with the same message, whether the
 * email is unknown, the password wrong, or the attempt refused because too many were waiting.
 */
export function signInThrottle(options: Partial<ThrottleOptions> = {}, now: () => number = Date.now, wait: (ms: number) => Promise<unknown> = sleep) {
  const o = { ...DEFAULT_THROTTLE, ...options };
  const entries = new Map<string, Entry>();
  let inserted = 0;

  const keyOf = (email: string, address: string) => `${email.trim().toLowerCase()}\n${address}`;

  function delayFor(failures: number): number {
    if (failures <= o.freeFailures) return 0;
    return Math.min(o.baseDelayMs * 2 ** (failures - o.freeFailures - 1), o.maxDelayMs);
  }

  function sweep() {
    const cutoff = now() - o.forgetAfterMs;
    for (const [k, e] of entries) if (e.queued === 0 && e.lastFailureAt < cutoff) entries.delete(k);
    if (entries.size < MAX_ENTRIES) return;
    // Oldest first (a Map iterates in insertion order), down to 90%, so this does not run on every insert.
    for (const [k, e] of entries) {
      if (entries.size < MAX_ENTRIES * 0.9) break;
      if (e.queued === 0) entries.delete(k);
    }
  }

  return {
    options: o,

    /** How many email and address pairs are tracked. */
    tracked: () => entries.size,

    /** The delay the next attempt for this email and address would wait. */
    pendingDelay(email: string, address: string): number {
      const e = entries.get(keyOf(email, address));
      return e && e.lastFailureAt >= now() - o.forgetAfterMs ? delayFor(e.failures) : 0;
    },

    /** Runs `check` (non-null: the credentials are right) after the delay earned so far; null when refused. */
    async attempt<T>(email: string, address: string, check: () => Promise<T | null>): Promise<T | null> {
      const key = keyOf(email, address);
      let e = entries.get(key);
      if (e && e.queued === 0 && e.lastFailureAt < now() - o.forgetAfterMs) {
        entries.delete(key);
        e = undefined;
      }
      if (!e) {
        if (entries.size >= SWEEP_AT && ++inserted % 1000 === 0) sweep();
        e = { failures: 0, lastFailureAt: 0, chain: Promise.resolve(), queued: 0 };
        entries.set(key, e);
      }
      if (e.queued >= o.maxQueued) return null;
      e.queued++;
      const before = e.chain;
      let release!: () => void;
      e.chain = new Promise<void>((resolve) => (release = resolve));
      try {
        await before;
        const delay = delayFor(e.failures);
        if (delay > 0) await wait(delay);
        const result = await check();
        if (result !== null) {
          e.failures = 0;
          if (e.queued === 1) entries.delete(key);
        } else {
          e.failures++;
          e.lastFailureAt = now();
        }
        return result;
      } finally {
        e.queued--;
        release();
      }
    },
  };
}

export type SignInThrottle = ReturnType<typeof signInThrottle>;

/**
 * At most `limit` attempts in any `windowMs` per key (a form and a client address), in this process:
 * the first-run setup-code form and the own-password form (5 a minute, docs/dashboard.md). Refused
 * attempts are not counted, so waiting out the window always lets the next one through.
 */
export function attemptLimit(limit: number, windowMs: number, now: () => number) {
  const recent = new Map<string, number[]>();

  function sweep(cutoff: number) {
    for (const [k, times] of recent) if ((times[times.length - 1] ?? 0) <= cutoff) recent.delete(k);
    // Still full of live keys (many addresses at once): the oldest go first, as the sign-in throttle does.
    for (const k of recent.keys()) {
      if (recent.size < MAX_ENTRIES * 0.9) break;
      recent.delete(k);
    }
  }

  return {
    /** Counts an attempt for `key`: 0 when it may go ahead, else the seconds until one may. */
    take(key: string): number {
      const at = now();
      const cutoff = at - windowMs;
      if (recent.size >= MAX_ENTRIES) sweep(cutoff);
      const times = (recent.get(key) ?? []).filter((t) => t > cutoff);
      if (times.length >= limit) {
        recent.set(key, times);
        return Math.max(1, Math.ceil((times[0]! - cutoff) / 1000));
      }
      times.push(at);
      recent.set(key, times);
      return 0;
    },
  };
}

export type AttemptLimit = ReturnType<typeof attemptLimit>;
