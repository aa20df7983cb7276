import { describe, expect, it, vi } from 'vitest';
import { yieldToEventLoop } from '../../src/lib/event-loop.js';
import { workerLoop } from '../../src/lib/worker-loop.js';

/** A queue of work the loop claims from, with a gate each run waits on (opened by the test). */
function queue(items: number[]) {
  const waiting = [...items];
  const ran: number[] = [];
  let running = 0;
  let most = 0;
  const gates: (() => void)[] = [];
  return {
    waiting,
    ran,
    most: () => most,
    fetch: async () => waiting.shift() ?? null,
    async run(n: number) {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      ran.push(n);
      running--;
    },
    /** Lets the runs waiting go on. */
    open: async () => {
      while (gates.length) gates.shift()!();
      await yieldToEventLoop();
    },
  };
}

const noError = (err: unknown) => {
  throw err;
};

describe('the worker loop', () => {
  it('fetches and runs until nothing is waiting, up to `slots` at once', async () => {
    const q = queue([1, 2, 3, 4, 5]);
    const loop = workerLoop({ fetch: q.fetch, run: (n) => q.run(n), slots: 2, onError: noError });
    const done = loop.tick();
    expect(loop.busy).toBe(true);
    while (q.ran.length < 5) await q.open();
    await done;
    expect(q.ran.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(q.most()).toBe(2);
    expect(loop.busy).toBe(false);
  });

  it('a wake-up while every slot is busy is remembered: the round looks once more', async () => {
    const q = queue([1]);
    let rounds = 0;
    const loop = workerLoop({ fetch: q.fetch, run: (n) => q.run(n), beforeRound: async () => void rounds++, onError: noError });
    const done = loop.tick();
    await yieldToEventLoop();
    // Work queued while the only slot runs: a second tick does not start another round…
    q.waiting.push(2);
    void loop.tick();
    await q.open();
    await q.open();
    await done;
    // …but the slot's round runs again (and would have found 2 even without it, fetching until empty).
    expect(q.ran).toEqual([1, 2]);
    expect(rounds).toBe(2);
  });

  it('notify acts only once started; start polls with `poll` on a timer', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const fetch = vi.fn(async () => null);
      const poll = vi.fn(async () => undefined);
      const loop = workerLoop<number>({ fetch, run: async () => undefined, poll, pollMs: 100, onError: noError });
      loop.notify();
      await yieldToEventLoop();
      expect(fetch).not.toHaveBeenCalled();
      loop.start();
      expect(loop.started).toBe(true);
      expect(poll).toHaveBeenCalledTimes(1);
      vi.advanceTimersByTime(250);
      expect(poll).toHaveBeenCalledTimes(3);
      loop.notify();
      await yieldToEventLoop();
      expect(fetch).toHaveBeenCalledTimes(1);
      await loop.stop();
      vi.advanceTimersByTime(500);
      expect(poll).toHaveBeenCalledTimes(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop takes no more work and waits for the work in flight; its flag is set when it returns', async () => {
    const q = queue([1, 2, 3]);
    const loop = workerLoop({ fetch: q.fetch, run: (n) => q.run(n), onError: noError });
    void loop.tick();
    await yieldToEventLoop();
    const stopped = loop.stop();
    expect(loop.stopping).toBe(true);
    await q.open();
    await stopped;
    expect(q.ran).toEqual([1]);
    expect(q.waiting).toEqual([2, 3]);
    await loop.tick();
    loop.notify();
    expect(loop.busy).toBe(false);
  });

  it('drain waits for the rounds in flight, then runs everything waiting (or one piece through its own fetch)', async () => {
    const q = queue([1, 2]);
    const order: string[] = [];
    const loop = workerLoop({ fetch: q.fetch, run: async (n) => void order.push(`run ${n}`), slots: 3, onError: noError });
    await loop.drain({ before: async () => void order.push('before') });
    expect(order).toEqual(['before', 'run 1', 'run 2']);
    let once = true;
    await loop.drain({ fetch: async () => (once ? ((once = false), 9) : null), parallel: 1 });
    expect(order).toEqual(['before', 'run 1', 'run 2', 'run 9']);
  });

  it('a round that throws is handed to onError, and the next tick runs again', async () => {
    const errors: unknown[] = [];
    let fail = true;
    const ran: number[] = [];
    const waiting = [1];
    const loop = workerLoop({
      fetch: async () => {
        if (fail) throw new Error('the database is away');
        return waiting.shift() ?? null;
      },
      run: async (n: number) => void ran.push(n),
      onError: (err) => errors.push(err),
    });
    await loop.tick();
    expect(errors).toHaveLength(1);
    fail = false;
    await loop.tick();
    expect(ran).toEqual([1]);
  });
});

describe('yieldToEventLoop', () => {
  it('lets what is waiting on the event loop run first', async () => {
    let ran = false;
    setImmediate(() => (ran = true));
    await yieldToEventLoop();
    expect(ran).toBe(true);
  });
});
