import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataStore, type DataStore } from '../../../src/lib/db/index.js';
import { letTimePass, waitFor, isPostgres } from '../../helpers.js';

// SQLite only: the connection's own checkpoints are off and a worker thread checkpoints beside the
// requests (src/lib/db/sqlite-checkpoints.ts), so the write-ahead log stays small without a commit
// ever copying it back on the event loop.
describe.skipIf(isPostgres())('SQLite checkpoints beside the requests', () => {
  let dir: string;
  let store: DataStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lanebridge-checkpoints-'));
    store = openDataStore(join(dir, 'wal.db'));
    await sql`create table filler (id integer primary key, body blob not null)`.execute(store.db);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits do not checkpoint, and the log stays bounded under a steady stream of writes', async () => {
    const auto = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(store.db);
    expect(auto.rows[0]!.wal_autocheckpoint).toBe(0);
    // 30 commits of about 1 MiB, 60 ms apart: 30 MiB of log if nothing checkpointed it.
    let largest = 0;
    for (let i = 0; i < 30; i++) {
      await store.db.transaction().execute(async (tx) => {
        for (let j = 0; j < 16; j++) await sql`insert into filler (body) values (randomblob(65536))`.execute(tx);
      });
      largest = Math.max(largest, statSync(join(dir, 'wal.db-wal')).size);
      await letTimePass(60);
    }
    // Half of what nothing checkpointing would leave: the worker thread runs every 100 ms, and on a
    // machine busy with other work (CI runs two suites side by side) it is scheduled late now and then
    // (up to 14 MB seen at a load average of 11; 1–2 MB idle).
    expect(largest).toBeLessThan(16 * 1024 * 1024);
    const count = await sql<{ n: number }>`select count(*) as n from filler`.execute(store.db);
    expect(Number(count.rows[0]!.n)).toBe(480);
  });

  // The checkpoint worker's RESTART holds the write lock for a moment, as does another process on the
  // file (the CLI beside `serve`). A transaction that reads before it writes (every PUT, every batch)
  // waits for it: with a plain BEGIN SQLite refused the write at once (SQLITE_BUSY, its busy wait is not
  // tried once the transaction holds a read snapshot), which the API answered 503.
  it('a transaction that reads, then writes, waits for another connection’s write lock instead of failing', async () => {
    const holder = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const db = new (require(workerData.driver))(workerData.path);
       db.exec('begin immediate');
       db.prepare('insert into filler (body) values (zeroblob(10))').run();
       parentPort.postMessage('held');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
       db.exec('commit');
       db.close();
       parentPort.postMessage('released');`,
      { eval: true, workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path: join(dir, 'wal.db') } },
    );
    const messages: string[] = [];
    const released = new Promise<void>((done) => holder.on('message', (m: string) => (messages.push(m), m === 'released' && done())));
    await new Promise<void>((held) => holder.once('message', () => held()));
    const started = Date.now();
    const written = await store.db.transaction().execute(async (tx) => {
      const before = await sql<{ n: number }>`select count(*) as n from filler`.execute(tx);
      await sql`insert into filler (body) values (zeroblob(10))`.execute(tx);
      return Number(before.rows[0]!.n);
    });
    await released;
    await holder.terminate();
    // It waited for the holder (its row was committed first and counted), and did not fail.
    expect(messages).toEqual(['held', 'released']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    const count = await sql<{ n: number }>`select count(*) as n from filler`.execute(store.db);
    expect(Number(count.rows[0]!.n)).toBe(written + 1);
  });

  // A writer that never pauses (an import's chunks, one after another) left the worker no moment with
  // the log wholly copied at the start of a transaction, which is when SQLite rewinds it: the log grew
  // until the worker's RESTART stopped every writer to force it (up to a quarter of a second each, the
  // slowest PUTs beside an import). betweenWrites gives it that moment.
  it('a writer that awaits betweenWrites between its transactions has the log rewound at its next one', async () => {
    // The frames in the log (-1 while the worker's own checkpoint runs: asked again).
    const frames = async () => {
      const asked = async () => {
        const log = (await sql<{ log: number }>`pragma wal_checkpoint(PASSIVE)`.execute(store.db)).rows[0]!.log;
        return log >= 0 && { log };
      };
      return (await waitFor(asked, { timeout: 2000, what: 'a checkpoint not running' })).log;
    };
    const burst = async () => {
      // About 40 MiB in transactions back to back (no gap for the worker): past the 8,192 pages (32 MiB) mark.
      for (let i = 0; i < 40; i++) {
        await store.db.transaction().execute(async (tx) => {
          for (let j = 0; j < 16; j++) await sql`insert into filler (body) values (randomblob(65536))`.execute(tx);
        });
      }
    };
    const small = () => store.db.transaction().execute((tx) => sql`insert into filler (body) values (zeroblob(10))`.execute(tx));
    // Without the pause the next transaction goes on appending to the log.
    await burst();
    await letTimePass(250); // the worker's periodic copy has seen the long log
    await burst();
    await small();
    expect(await frames()).toBeGreaterThan(8192);
    // With it, the log starts again from its beginning.
    await burst();
    await letTimePass(250);
    await burst();
    await store.betweenWrites();
    await small();
    expect(await frames()).toBeLessThan(100);
  }, 60_000);
});
