import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * SQLite in WAL mode copies the log back into the database file (a checkpoint, with an fsync) when a
 * commit finds the log over 1,000 pages: the commit that crosses it waits for the copy, on the event
 * loop (better-sqlite3 is synchronous). A batch of 100 new loads writes several hundred pages, so
 * every second or third batch paid a checkpoint (about 40% of a batch's median on this machine,
 * BENCHMARKS.md). Here the connection's own checkpoints are off and a worker thread with a connection
 * of its own checkpoints beside the requests: PASSIVE (never waits for readers or writers, never holds
 * one up) every `intervalMs`, and RESTART when the log has grown past `restartPages` anyway (a writer
 * that never pauses), which waits for the current writer a moment in the worker, not on the loop, and
 * at most once a second.
 *
 * SQLite rewinds the log (writes again from its start) only at the first write of a transaction that
 * began on a log wholly copied. A writer that never pauses (an import's chunks, one right after the
 * other) never began on one: the worker's copy always lagged the last commit, so the log grew until
 * RESTART stopped every writer to force it, up to a quarter of a second each time (about 30 times over
 * 100,000 imported loads: the slowest PUTs beside an import). Such a writer awaits `catchUp()` between
 * its transactions: once the worker has seen the log past `catchUpPages` (default 8,192 pages, 32 MiB),
 * the next pause waits for the worker to copy what is left, so the writer's next transaction rewinds it.
 * (A read transaction of another connection that began before that copy keeps the log from being
 * rewound until it ends; RESTART still bounds the log then.)
 *
 * Should the worker fail (it never should), the connection checkpoints itself again: the cost comes
 * back, the log never grows without end.
 */
export interface Checkpointer {
  stop(): Promise<void>;
  /**
   * A writer's pause (between an import's chunks): when the log is past `catchUpPages`, the worker
   * copies it all now (PASSIVE) and this resolves after, so the writer's next transaction starts on a
   * log wholly copied and rewinds it (SQLite restarts the log from its start at the first write of a
   * transaction that began on a wholly copied log). Resolves at once when the log is short.
   */
  catchUp(): Promise<void>;
}

// The worker's code: plain CommonJS (an eval worker), better-sqlite3 resolved by the caller.
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
// RESTART holds the write lock while it waits (for the writer of the moment, then for readers): a short
// wait, at most one try a second, so a writer that never pauses (an import) is never kept from the lock
// past its own busy wait (5 s on the request connection; it was, by RESTART retried every 100 ms
// with a second's wait each: "database is locked").
db.pragma('busy_timeout = ' + workerData.restartWaitMs);
const passive = db.prepare('pragma wal_checkpoint(PASSIVE)');
const restart = db.prepare('pragma wal_checkpoint(RESTART)');
let lastRestart = 0;
// Told once per long log (see catchUp): the main thread's writer pauses for a copy at its next gap.
let told = false;
// The log as the last catch-up left it (wholly copied, rewound at the writer's next transaction): a
// tick that comes before that transaction sees the same log and does not ask for another pause.
let caughtUpAt = -1;
const timer = setInterval(() => {
  try {
    const r = passive.get();
    if (r && r.log > workerData.catchUpPages && !told && r.log !== caughtUpAt) {
      told = true;
      parentPort.postMessage({ longLog: r.log });
    }
    if (r && r.log > workerData.restartPages * 4) {
      // Far past the mark (the short waits kept missing the writer's gaps): wait as long as it takes,
      // up to a second a tick, so the log never grows without end.
      db.pragma('busy_timeout = 1000');
      try { restart.get(); } finally { db.pragma('busy_timeout = ' + workerData.restartWaitMs); }
      lastRestart = Date.now();
    } else if (r && r.log > workerData.restartPages && Date.now() - lastRestart >= workerData.restartEveryMs) {
      lastRestart = Date.now();
      restart.get();
    }
  } catch {
    /* busy: the next tick tries again */
  }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m && m.catchUp !== undefined) {
    told = false;
    try { const r = passive.get(); caughtUpAt = r ? r.log : -1; } catch {}
    parentPort.postMessage({ caughtUp: m.catchUp });
    return;
  }
  clearInterval(timer);
  try { passive.get(); } catch {}
  db.close();
  parentPort.postMessage('stopped');
});
`;

interface CheckpointOptions {
  intervalMs?: number;
  restartPages?: number;
  restartWaitMs?: number;
  restartEveryMs?: number;
  catchUpPages?: number;
}

/** The checkpoint worker thread on the database file (its own connection, through the same driver). */
function startCheckpointWorker(path: string, opts: CheckpointOptions): Worker {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  return new Worker(WORKER, {
    eval: true,
    workerData: {
      driver,
      path,
      intervalMs: opts.intervalMs ?? 100,
      restartPages: opts.restartPages ?? 16_384,
      restartWaitMs: opts.restartWaitMs ?? 100,
      restartEveryMs: opts.restartEveryMs ?? 1000,
      catchUpPages: opts.catchUpPages ?? 8192,
    },
  });
}

export function backgroundCheckpoints(raw: { pragma(source: string): unknown }, path: string, opts: CheckpointOptions = {}): Checkpointer {
  raw.pragma('wal_autocheckpoint = 0');
  const worker = startCheckpointWorker(path, opts);
  let running = true;
  const fallBack = () => {
    if (!running) return;
    running = false;
    try {
      raw.pragma('wal_autocheckpoint = 1000');
    } catch {
      /* the connection is closed: nothing to checkpoint */
    }
  };
  worker.on('error', fallBack);
  worker.on('exit', fallBack);
  let asked = 0;
  // The worker saw the log past catchUpPages since the last catch-up.
  let longLog = false;
  const waiting = new Map<number, () => void>();
  worker.on('message', (m: { caughtUp?: number; longLog?: number }) => {
    if (m && typeof m.longLog === 'number') longLog = true;
    if (m && typeof m.caughtUp === 'number') {
      waiting.get(m.caughtUp)?.();
      waiting.delete(m.caughtUp);
    }
  });
  // After the listener: adding a 'message' listener refs the worker again, and an unref'd worker must
  // never keep a process alive (a CLI command that fails before closing its store exits all the same).
  worker.unref();
  return {
    catchUp() {
      if (!running || !longLog) return Promise.resolve();
      longLog = false;
      const id = ++asked;
      return new Promise<void>((done) => {
        // Never held up by a worker that does not answer: the pause is an optimisation.
        const timer = setTimeout(() => {
          waiting.delete(id);
          done();
        }, 2000);
        waiting.set(id, () => {
          clearTimeout(timer);
          done();
        });
        worker.postMessage({ catchUp: id });
      });
    },
    async stop() {
      if (!running) return;
      running = false;
      await new Promise<void>((done) => {
        const timer = setTimeout(() => void worker.terminate().finally(done), 2000);
        worker.on('message', (m: unknown) => {
          if (m !== 'stopped') return;
          clearTimeout(timer);
          void worker.terminate().finally(done);
        });
        // Pauses still waiting end now.
        for (const release of waiting.values()) release();
        waiting.clear();
        worker.postMessage('stop');
      });
    },
  };
}
