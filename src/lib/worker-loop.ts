/**
 * One background worker loop (in the spirit of pg-boss's `src/worker.ts`), used by the import runner
 * and the webhook delivery worker: up to `slots` loops, each a round of fetch (claim a piece of work)
 * then run (work it) until fetch finds nothing, and another round when a wake-up came in meanwhile.
 * Nothing of a policy is in here: what is claimed, how it is paced and what a round begins with are the
 * functions handed to it.
 */

export interface WorkerLoopOptions<T> {
  /** Claims the next piece of work, or null when none is waiting now. */
  fetch(): Promise<T | null>;
  /** Works a claimed piece (awaited before the next fetch of its slot). */
  run(work: T): Promise<void>;
  /** Before each round of fetches (housekeeping due, the outbox to read). */
  beforeRound?(): Promise<void>;
  /** Rounds run at once (default 1). */
  slots?: number;
  /** How often the timer calls `poll` once started (default 1 s); never keeps the process alive. */
  pollMs?: number;
  /** What a poll does (default: a round now, `tick`). */
  poll?(): Promise<void>;
  /** A round that threw: logged, and tried again at the next wake-up or poll. */
  onError(err: unknown): void;
}

export interface WorkerLoop<T> {
  /** Polls every `pollMs`, and runs a round now. */
  start(): void;
  /** A wake-up from outside (work was queued here): a round now, once started and not stopping. */
  notify(): void;
  /**
   * A round now whether started or not (unless stopping): up to `slots` rounds run, and a call while
   * every slot is busy is remembered, the first slot to finish looks once more. Resolves when the rounds end.
   */
  tick(): Promise<void>;
  /**
   * Waits for the rounds in flight, then fetches and runs until nothing is waiting (`parallel` at once,
   * default `slots`), with `fetch` instead of the loop's own if given (one piece of work alone).
   */
  drain(opts?: { before?: () => Promise<void>; fetch?: () => Promise<T | null>; parallel?: number }): Promise<void>;
  /**
   * Stops polling and taking work; resolves once the rounds in flight end. Its synchronous part (the
   * flag, the timer) is done when it returns, so a caller can cut its own work in flight right after.
   */
  stop(): Promise<void>;
  readonly started: boolean;
  readonly stopping: boolean;
  /** Whether a round is in flight. */
  readonly busy: boolean;
}

export function workerLoop<T>(opts: WorkerLoopOptions<T>): WorkerLoop<T> {
  const slotCount = opts.slots ?? 1;
  const rounds = new Set<Promise<void>>();
  let started = false;
  let stopping = false;
  let again = false;
  let timer: NodeJS.Timeout | null = null;

  /** Fetches and runs until nothing is waiting (or the loop stops). */
  async function untilEmpty(fetch: () => Promise<T | null>): Promise<void> {
    while (!stopping) {
      const work = await fetch();
      if (work === null) return;
      await opts.run(work);
    }
  }

  async function round(): Promise<void> {
    try {
      do {
        again = false;
        await opts.beforeRound?.();
        await untilEmpty(opts.fetch);
      } while (again && !stopping);
    } catch (err) {
      opts.onError(err);
    }
  }

  function tick(): Promise<void> {
    if (stopping) return Promise.resolve();
    again = true;
    while (rounds.size < slotCount) {
      const r: Promise<void> = round().finally(() => rounds.delete(r));
      rounds.add(r);
    }
    return Promise.all(rounds).then(() => undefined);
  }

  return {
    start() {
      if (timer || stopping) return;
      started = true;
      const poll = opts.poll ?? tick;
      timer = setInterval(() => void poll(), opts.pollMs ?? 1000);
      timer.unref();
      void poll();
    },
    notify() {
      if (started && !stopping) void tick();
    },
    tick,
    async drain({ before, fetch = opts.fetch, parallel = slotCount } = {}) {
      await Promise.all(rounds);
      await before?.();
      await Promise.all(Array.from({ length: parallel }, () => untilEmpty(fetch)));
    },
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      await Promise.all(rounds);
    },
    get started() {
      return started;
    },
    get stopping() {
      return stopping;
    },
    get busy() {
      return rounds.size > 0;
    },
  };
}
