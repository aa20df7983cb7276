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
 * Should the worker fail (it never should), the connection checkpoints itself again: the cost comes
 * back, the log never grows without end.
 */
export interface Checkpointer {
  stop(): Promise<void>;
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
const timer = setInterval(() => {
  try {
    const r = passive.get();
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
parentPort.on('message', () => {
  clearInterval(timer);
  try { passive.get(); } catch {}
  db.close();
  parentPort.postMessage('stopped');
});
`;

export function backgroundCheckpoints(
  raw: { pragma(source: string): unknown },
  path: string,
  opts: { intervalMs?: number; restartPages?: number; restartWaitMs?: number; restartEveryMs?: number } = {},
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  raw.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { driver, path, intervalMs: opts.intervalMs ?? 100, restartPages: opts.restartPages ?? 16_384, restartWaitMs: opts.restartWaitMs ?? 100, restartEveryMs: opts.restartEveryMs ?? 1000 },
  });
  worker.unref();
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
  return {
    async stop() {
      if (!running) return;
      running = false;
      await new Promise<void>((done) => {
        const timer = setTimeout(() => void worker.terminate().finally(done), 2000);
        worker.once('message', () => {
          clearTimeout(timer);
          void worker.terminate().finally(done);
        });
        worker.postMessage('stop');
      });
    },
  };
}
