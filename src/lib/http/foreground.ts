import { yieldToEventLoop } from '../event-loop.js';

/**
 * The requests this process is answering, for background work that gives way to them (the
 * recommendations follow-up). One event loop serves both: on SQLite every statement runs
 * on it, so a follow-up pass that keeps going while a batch arrives takes turns with the batch's every
 * statement and can double its time. Background work calls `quiet()` between its steps and goes on once
 * no request is in flight, or after `maxWaitMs` at the latest (a steady stream of requests slows it down,
 * never stops it).
 */
export interface Foreground {
  /** A request arrived; the returned function, called once (more calls are ignored), says it has ended. */
  enter(): () => void;
  /** A request that writes is about to run (authenticated, its body read and valid). */
  wrote(): void;
  /** Requests in flight now. */
  readonly inFlight: number;
  /** When the last request that writes was about to run (performance.now(), `wrote`); -Infinity before the first. */
  readonly lastWriteAt: number;
  /**
   * Resolves after a turn of the event loop once no request has been in flight for `lingerMs` (default
   * DEFAULT_LINGER_MS), or after `maxWaitMs`.
   */
  quiet(maxWaitMs?: number, lingerMs?: number): Promise<void>;
}

export const DEFAULT_QUIET_WAIT_MS = 250;
/**
 * How long no request must have been in flight before background work goes on. A client pushing batches
 * back to back sends its next one a millisecond or two after the last answer: work started in that gap
 * (a ranking step holds SQLite's event loop for milliseconds) delayed the next batch by its length.
 */
export const DEFAULT_LINGER_MS = 5;

export function foreground(opts: { lingerMs?: number } = {}): Foreground {
  const lingerMs = opts.lingerMs ?? DEFAULT_LINGER_MS;
  let inFlight = 0;
  let lastEnded = -Infinity;
  let lastWriteAt = -Infinity;
  const waiting = new Set<() => void>();
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  /** Resolves when no request is in flight, or after `ms`. */
  const noneInFlight = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      waiting.add(wake);
    });
  return {
    enter() {
      inFlight++;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        inFlight--;
        lastEnded = performance.now();
        if (inFlight === 0) for (const wake of [...waiting]) wake();
      };
    },
    get inFlight() {
      return inFlight;
    },
    wrote() {
      lastWriteAt = performance.now();
    },
    get lastWriteAt() {
      return lastWriteAt;
    },
    async quiet(maxWaitMs = DEFAULT_QUIET_WAIT_MS, linger = lingerMs) {
      // A turn first: a request whose bytes have arrived is read (and counted) before we look.
      await yieldToEventLoop();
      const deadline = performance.now() + Math.max(0, maxWaitMs);
      for (;;) {
        const now = performance.now();
        if (now >= deadline) return;
        if (inFlight > 0) await noneInFlight(deadline - now);
        else if (now - lastEnded < linger) await sleep(Math.min(deadline - now, linger - (now - lastEnded)));
        else return;
        // Bytes that arrived while we slept are read (and counted) before we look again.
        await yieldToEventLoop();
      }
    },
  };
}

/** Background work with nothing to give way to (tests, the CLI, a worker process without an API). */
export const NO_FOREGROUND: Foreground = {
  enter: () => () => {},
  wrote: () => {},
  inFlight: 0,
  lastWriteAt: -Infinity,
  quiet: yieldToEventLoop,
};
