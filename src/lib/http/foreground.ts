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
  /** Requests in flight now. */
  readonly inFlight: number;
  /** Resolves after a turn of the event loop once no request is in flight, or after `maxWaitMs`. */
  quiet(maxWaitMs?: number): Promise<void>;
}

export const DEFAULT_QUIET_WAIT_MS = 250;

export function foreground(): Foreground {
  let inFlight = 0;
  const waiting = new Set<() => void>();
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    enter() {
      inFlight++;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        inFlight--;
        if (inFlight === 0) for (const wake of [...waiting]) wake();
      };
    },
    get inFlight() {
      return inFlight;
    },
    async quiet(maxWaitMs = DEFAULT_QUIET_WAIT_MS) {
      // A turn first: a request whose bytes have arrived is read (and counted) before we look.
      await turn();
      if (inFlight === 0 || maxWaitMs <= 0) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, maxWaitMs);
        waiting.add(wake);
      });
    },
  };
}

/** Background work with nothing to give way to (tests, the CLI, a worker process without an API). */
export const NO_FOREGROUND: Foreground = {
  enter: () => () => {},
  inFlight: 0,
  quiet: () => new Promise<void>((resolve) => setImmediate(resolve)),
};
