import { randomUUID } from 'node:crypto';
import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { ImportsTable } from '../../lib/db/types.js';
import { NO_FOREGROUND, type Foreground } from '../../lib/http/foreground.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import { workerLoop } from '../../lib/worker-loop.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import { ClaimLost, chunkWriter, type ImportLog, type ImportWriter } from './imports.chunk.js';
import type { ImportFiles } from './imports.files.js';
import {
  analyzeDue,
  catchUpBetweenChunks,
  chunkPacer,
  giveWayMs,
  pauseAfterUnavailable,
  writesArriving,
  type Paused,
  type PacingTargets,
} from './imports.pacing.js';
import { countRows, uploadRows, type UploadRow } from './imports.rows.js';
import {
  analyzeGrownTables,
  claimableImports,
  claimImport,
  deleteImport,
  expiredImports,
  extendImportLease,
  finishImport,
  importRow,
  expireUpload,
  plannedRowsOf,
  releaseImport,
  setRowsTotal,
  staleUploads,
} from './imports.repo.js';
import type { ImportResource } from './imports.schema.js';
import { optionsOf, presentImport } from './imports.service.js';

export { MAX_ERROR_ROWS, type ImportLog, type ImportWriter } from './imports.chunk.js';
export { nextChunkSize } from './imports.pacing.js';

export interface ImportRunnerDeps {
  db: Executor;
  clock: Clock;
  files: ImportFiles;
  /** emit_events → resource → its writer: `summary` writes through a pipeline without the outbox (no per-row events). */
  writers: Record<'summary' | 'all', Record<ImportResource, ImportWriter>>;
  createSchemas: Record<ImportResource, TSchema>;
  /** The API's pipeline: the import.completed event is written through it with the import's end. */
  pipeline: WritePipeline;
  log: ImportLog;
  /** Rows per chunk at most (one transaction, one checkpoint, one analytics run). */
  chunkRows?: number;
  /**
   * How long a chunk's transaction should take (ms): each chunk is sized from the time per row of the
   * last ones, up to `chunkRows`. On SQLite's one connection the API's writes wait for the chunk in
   * flight; this bounds that wait. 0: every chunk has `chunkRows` rows.
   */
  chunkMs?: number;
  /**
   * With `foreground` (SQLite): how long a chunk should take while the API's writes arrive (one arrived
   * within LIVE_WINDOW_MS), instead of `chunkMs`; sized from the last chunk's time per row without the
   * halfway step, from MIN_LIVE_CHUNK_ROWS rows. A write beside the import then waits about this long for
   * the chunk in flight. 0 (the default): chunks are sized to `chunkMs` whatever arrives.
   */
  liveChunkMs?: number;
  leaseMs?: number;
  pollMs?: number;
  /** A chunk that fails as a whole (not a row's refusal) is tried again this many times before the import fails. */
  maxChunkAttempts?: number;
  /** An import awaiting its upload this long after its last part is cancelled and its parts removed (default 24 h). */
  uploadExpiryMs?: number;
  /** Imports this process runs at once, each of another organization (IMPORT_MAX_RUNNING, default 2). */
  maxRunning?: number;
  /** Awaited between chunks: the store's pause for a writer that never pauses (DataStore.betweenWrites). */
  betweenChunks?: () => Promise<void>;
  /**
   * The requests this process is answering (`serve` on SQLite): before each chunk the runner waits until
   * none is in flight (at most `chunkMs`), so a request that arrived during a chunk runs whole before the
   * next one begins instead of queuing its statements behind it on the one connection. Not given on
   * PostgreSQL, where a request's statements go on a pooled connection of their own beside the chunk's.
   */
  foreground?: Foreground;
}

/** How often (at most) a runner looks for abandoned uploads. */
const EXPIRY_SWEEP_MS = 60_000;
// A finished import, its errors and its parts are deleted this long after it ended.
export const IMPORT_RETENTION_MS = 30 * 86_400_000;

/** The upload cannot be read (a CSV that does not parse, a part gone): the import fails, with this message. */
class UnreadableUpload extends Error {}

/** A claimed import: the row as claimed, and the claim it runs under. */
interface Claimed {
  imp: ImportsTable;
  claim: string;
}

/** One run of an import, as its chunks see it. */
interface Run extends Claimed {
  /** Whether it goes on to its next chunk (throws ClaimLost when the claim was lost; false when stopping: given back). */
  goingOn(): Promise<boolean>;
  stats: { grew(rows: number): Promise<void>; end(): Promise<void> };
}

/**
 * The import job runner (docs/imports.md, "How it runs"), the worker loop (src/lib/worker-loop.ts) of
 * the webhook worker too: an import queued (or running with its lease run out: a killed process) is
 * claimed with one conditional update, its rows are counted, then read after the checkpoint and written
 * a chunk at a time through the resource's batch (the write path of /batch/<resource>), each chunk with
 * its refused rows and its checkpoint in ONE transaction (imports.chunk.ts), paced by imports.pacing.ts.
 * A process killed mid-chunk leaves that chunk uncommitted and its claim to expire; any instance resumes
 * after the checkpoint, so no row is applied twice and the counts end as in an uninterrupted run.
 */
export function importRunner(deps: ImportRunnerDeps) {
  const { db, clock, files } = deps;
  const chunkMs = deps.chunkMs ?? 50;
  const targets: PacingTargets = { chunkRows: deps.chunkRows ?? 1000, chunkMs, liveChunkMs: deps.foreground && chunkMs > 0 ? (deps.liveChunkMs ?? 0) : 0 };
  const leaseMs = deps.leaseMs ?? 30_000;
  const foreground = deps.foreground ?? NO_FOREGROUND;
  /** Whether the API's writes are arriving: chunks are then sized to the live time. */
  const arriving = () => writesArriving(targets, performance.now() - foreground.lastWriteAt);
  /**
   * Right before a chunk's transaction: the requests in flight go first (`foreground`, SQLite). A request
   * read while the chunk filled has its statements queued on the one connection: its first one (a read)
   * ran, and without this its transaction queued behind the chunk's. Waits until none is in flight, at
   * most giveWayMs, without the follow-up's linger (a client's next request waits for one chunk at most
   * either way). A request arriving while the chunk's transaction runs still waits for it (docs/imports.md).
   */
  const giveWay = (live: boolean) => foreground.quiet(giveWayMs(targets, live), 0);
  const nowIso = () => toIso(clock.now());
  const leaseEnd = () => toIso(new Date(clock.now().getTime() + leaseMs));
  const chunks = chunkWriter({ db, writers: deps.writers, log: deps.log, maxAttempts: deps.maxChunkAttempts ?? 5, nowIso, leaseEnd });

  async function fail(imp: ImportsTable, claim: string, message: string): Promise<void> {
    const now = nowIso();
    await db.transaction().execute((tx) => finishImport(tx, imp.id, claim, { status: 'failed', error: message, finished_at: now, updated_at: now }));
    await files.remove(imp.id);
  }

  async function finish(imp: ImportsTable, claim: string): Promise<void> {
    await deps.pipeline.write(imp.org_id, async (tx, changes) => {
      const row = await importRow(tx, imp.id);
      if (!row) throw new ClaimLost();
      const status = Number(row.rows_failed) > 0 ? 'completed_with_errors' : 'completed';
      const now = nowIso();
      if (!(await finishImport(tx, imp.id, claim, { status, finished_at: now, updated_at: now }))) throw new ClaimLost();
      // One import.completed event with the counts (whatever emit_events said), with the import's end.
      const done = presentImport(Object.assign({}, row, { status, finished_at: now, updated_at: now, claim: null, leased_until: null }), clock.now());
      changes.announce({ kind: imp.resource as ImportResource, type: 'import.completed', record_id: imp.id, data: done });
    });
    await files.remove(imp.id);
  }

  /**
   * Keeps PostgreSQL's statistics of the tables an import grows in step with them (analyzeGrownTables,
   * when analyzeDue): `grew(rows)` after each chunk, `end()` after the last. A failed ANALYZE is logged
   * and the import goes on (and tries again only after as many rows again). Nothing on SQLite.
   */
  async function plannerStats(imp: ImportsTable): Promise<Run['stats']> {
    let planned = await plannedRowsOf(db, imp.resource).catch((err: unknown) => {
      deps.log.warn({ err, import: imp.id }, 'the row estimate of the tables the import grows could not be read; they are not analyzed during this run');
      return null;
    });
    let since = 0;
    const analyze = async () => {
      // Counted as done whether or not it worked: a failure is not tried again at every chunk.
      since = 0;
      try {
        await analyzeGrownTables(db, imp.resource);
        planned = (await plannedRowsOf(db, imp.resource)) ?? 0;
      } catch (err) {
        deps.log.warn({ err, import: imp.id }, 'ANALYZE of the tables the import grows failed; the import goes on');
      }
    };
    return {
      async grew(rows) {
        if (planned === null || loop.stopping) return;
        since += rows;
        if (analyzeDue(since, planned, false)) await analyze();
      },
      async end() {
        if (planned !== null && analyzeDue(since, planned, true)) await analyze();
      },
    };
  }

  // Imports this process leaves alone until a time: those whose parts it cannot see (another IMPORTS_DIR),
  // for a minute, to an instance that can; those the database could not take a chunk of, for a moment.
  const resting = new Map<string, number>();
  // Imports paused because the database could not take a chunk (pauseAfterUnavailable).
  const paused = new Map<string, Paused>();

  /** Keeps the claim's lease while the import runs (a third of it at a time); `lost` once another holds it. */
  function holdLease(imp: ImportsTable, claim: string) {
    let lost = false;
    const heartbeat = setInterval(
      () => {
        extendImportLease(db, imp.id, claim, leaseEnd())
          .then((ok) => {
            if (!ok) lost = true;
          })
          .catch(() => undefined);
      },
      Math.max(200, Math.floor(leaseMs / 3)),
    );
    heartbeat.unref();
    return { lost: () => lost, end: () => clearInterval(heartbeat) };
  }

  /** The upload, read again from its first part (NDJSON through one reused buffer, files.chunks; CSV's parser takes a stream). */
  const uploadOf = (imp: ImportsTable) => (imp.format === 'ndjson' ? files.chunks(imp.id, imp.parts) : files.open(imp.id, imp.parts));

  /** Runs a claimed import to its end, or until it is lost, cancelled or this process stops. */
  async function run({ imp, claim }: Claimed): Promise<void> {
    if ((await files.parts(imp.id)).length < imp.parts) {
      deps.log.warn({ import: imp.id }, 'the parts of this import are not in this process’s IMPORTS_DIR; left to an instance that has them');
      resting.set(imp.id, Date.now() + 60_000);
      await releaseImport(db, imp.id, claim);
      return;
    }
    const lease = holdLease(imp, claim);
    /** A stopping process gives the import back at once (another instance, or this one restarted, resumes after the checkpoint). */
    const goingOn = async (): Promise<boolean> => {
      if (lease.lost()) throw new ClaimLost();
      if (!loop.stopping) return true;
      await releaseImport(db, imp.id, claim);
      return false;
    };
    const { csv = {} } = optionsOf(imp);
    try {
      if (imp.rows_total === null) {
        let total: number;
        try {
          total = await countRows(uploadOf(imp), imp.format as 'ndjson' | 'csv', csv);
        } catch (err) {
          throw new UnreadableUpload(`the upload cannot be read: ${(err as Error).message}`);
        }
        await setRowsTotal(db, imp.id, claim, total);
      }
      const stats = await plannerStats(imp);
      if (!(await writeRows({ imp, claim, goingOn, stats }))) return;
      await stats.end();
      await finish(imp, claim);
      paused.delete(imp.id);
    } catch (err) {
      await settle(imp, claim, err);
    } finally {
      lease.end();
    }
  }

  /**
   * Reads the upload after the checkpoint and writes it a chunk at a time, each sized by the pacer and
   * begun after giving way; false when the run stopped before its end (the import given back).
   */
  async function writeRows(r: Run): Promise<boolean> {
    const { imp, claim, goingOn, stats } = r;
    const { csv = {}, strict = false } = optionsOf(imp);
    let checkpoint = Number(imp.checkpoint_row);
    const pacer = chunkPacer(targets, arriving);
    let chunk: UploadRow[] = [];
    const rows = uploadRows(uploadOf(imp), imp.format as 'ndjson' | 'csv', {
      csv,
      createSchema: deps.createSchemas[imp.resource as ImportResource],
      after: checkpoint,
      strict,
    });
    try {
      let turnAt = performance.now();
      for await (const row of rows) {
        chunk.push(row);
        // Reading and parsing rows runs in microtasks only (the file comes in 1 MiB reads): the event
        // loop gets a turn every ~10 ms of it, as within a batch's items, so a request beside a large
        // chunk is read and answered while the chunk fills, not after it.
        if (performance.now() - turnAt > 10) {
          await yieldToEventLoop();
          turnAt = performance.now();
        }
        if (!pacer.full(chunk.length)) continue;
        await giveWay(pacer.live);
        // Stopped, cancelled or taken over during the wait: the chunk is not begun.
        if (!(await goingOn())) return false;
        const began = performance.now();
        checkpoint = await chunks.commit(imp, claim, chunk, checkpoint);
        pacer.took(chunk.length, performance.now() - began);
        await stats.grew(chunk.length);
        chunk = [];
        // A turn of the event loop between chunks: the rows come from a buffer of 1 MiB (some
        // 1,600 rows) and SQLite's driver is synchronous, so without it the requests beside the import
        // (a PUT, a status read) were not even read for many chunks in a row.
        await yieldToEventLoop();
        turnAt = performance.now();
        // SQLite: a moment for the log to be copied and rewound, for the requests beside the import.
        if (catchUpBetweenChunks(targets)) await deps.betweenChunks?.();
        if (!(await goingOn())) return false;
      }
    } catch (err) {
      if (err instanceof ClaimLost) throw err;
      if ((err as { code?: string }).code?.startsWith('CSV_')) throw new UnreadableUpload(`the CSV cannot be read: ${(err as Error).message}`);
      throw err;
    }
    if (chunk.length === 0) return true;
    await giveWay(arriving());
    if (!(await goingOn())) return false;
    await chunks.commit(imp, claim, chunk, checkpoint);
    await stats.grew(chunk.length);
    return true;
  }

  /** A run that threw: lost or cancelled (nothing to do), an unreadable upload (failed), a pause, or a failure. */
  async function settle(imp: ImportsTable, claim: string, err: unknown): Promise<void> {
    if (err instanceof ClaimLost) {
      // Cancelled: its parts go now. Taken over: the new holder runs it.
      const now = await importRow(db, imp.id);
      if (now?.status === 'cancelled') await files.remove(imp.id);
      return;
    }
    if (err instanceof UnreadableUpload) return fail(imp, claim, err.message);
    // The database could not take a chunk now (SQLite busy past its wait, PostgreSQL restarting or
    // unreachable, a statement past its timeout): the chunk rolled back whole, so the import is given
    // back and resumed after its checkpoint (here or by another instance), not failed: a million rows
    // are not thrown away for a moment's lock. A cause that does not pass (a full disk, a chunk whose
    // statement always times out) fails it after as many pauses in a row without a row gained as
    // pauseAfterUnavailable allows.
    const at = Number((await importRow(db, imp.id).catch(() => null))?.checkpoint_row ?? -1);
    const pause = isDatabaseUnavailable(err) ? pauseAfterUnavailable(paused.get(imp.id), at) : null;
    if (pause) {
      paused.set(imp.id, pause.paused);
      deps.log.warn({ err, import: imp.id, pauses: pause.paused.count }, 'import paused: the database could not take a chunk; resumed after its checkpoint');
      resting.set(imp.id, Date.now() + pause.restMs);
      await releaseImport(db, imp.id, claim).catch(() => undefined);
      return;
    }
    paused.delete(imp.id);
    deps.log.warn({ err, import: imp.id }, 'import failed');
    await fail(imp, claim, (err as Error).message).catch(() => undefined);
  }

  const uploadExpiryMs = deps.uploadExpiryMs ?? 24 * 3_600_000;
  let lastSweep = -Infinity;
  /**
   * Uploads never completed (a client that went away) would keep their parts on disk for ever: one still
   * awaiting its upload `uploadExpiryMs` after its last part (or its creation) is cancelled, with the
   * reason in `error`, and its parts removed. Conditional on the status, so one instance does it.
   */
  async function expireUploads(): Promise<void> {
    const before = toIso(new Date(clock.now().getTime() - uploadExpiryMs));
    for (const s of await staleUploads(db, before, 100)) {
      const now = nowIso();
      const hours = Math.round(uploadExpiryMs / 360_000) / 10;
      const expired = await expireUpload(db, s.org_id, s.id, before, {
        status: 'cancelled',
        error: `Expired: no POST /v2/tms-api/imports/${s.id}/complete within ${hours} h of its last part; its parts were removed: send the file again in a new import`,
        finished_at: now,
        updated_at: now,
      });
      if (expired) {
        await files.remove(s.id);
        deps.log.info({ import: s.id, org: s.org_id }, 'import upload expired');
      }
    }
  }

  /** Abandoned uploads expire; finished imports past their retention go, with their errors and parts (a bounded number a pass). */
  async function housekeeping(): Promise<void> {
    await expireUploads();
    const before = toIso(new Date(clock.now().getTime() - IMPORT_RETENTION_MS));
    for (const { id } of await expiredImports(db, before, 100)) {
      await deleteImport(db, id);
      await files.remove(id);
    }
  }

  /** Claims the next import waiting (not resting here), or `only` that one; null when none could be claimed. */
  async function claimNext(only?: string): Promise<Claimed | null> {
    const candidates = only ? [{ id: only }] : await claimableImports(db, nowIso(), 20);
    for (const { id } of candidates) {
      if ((resting.get(id) ?? 0) > Date.now()) continue;
      resting.delete(id);
      const claim = randomUUID();
      const imp = await claimImport(db, id, claim, nowIso(), leaseEnd());
      if (imp) return { imp, claim };
    }
    return null;
  }

  /**
   * Up to `maxRunning` slots, each claiming and running imports one at a time until none is waiting: an
   * import of one organization never holds another's (one import per organization is the database's
   * rule: its unique index). Abandoned uploads and finished imports past their retention are looked at
   * before a round, at most every EXPIRY_SWEEP_MS.
   */
  const loop = workerLoop<Claimed>({
    fetch: () => claimNext(),
    run,
    async beforeRound() {
      if (Date.now() - lastSweep < EXPIRY_SWEEP_MS) return;
      lastSweep = Date.now();
      await housekeeping();
    },
    slots: deps.maxRunning ?? 2,
    pollMs: deps.pollMs ?? 1000,
    onError: (err) => deps.log.warn({ err }, 'import runner pass failed; tried again at the next poll'),
  });

  return {
    /** An import was queued here: taken at once when the runner is started. */
    wake: (): void => loop.notify(),
    /** Polls every `pollMs` (default 1 s) for imports queued elsewhere or left by a process that died. */
    start: (): void => loop.start(),
    /** Runs every import waiting now (or only import `id`: the CLI's own) to its end (tests, the CLI). */
    drain(id?: string): Promise<void> {
      if (id !== undefined) return loop.drain({ fetch: () => claimNext(id), parallel: 1 });
      return loop.drain({ before: housekeeping });
    },
    /** Stops after the chunk in flight; the import is given back for any instance to resume. */
    stop: (): Promise<void> => loop.stop(),
  };
}
