import { randomUUID } from 'node:crypto';
import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { ImportErrorsTable, ImportsTable } from '../../lib/db/types.js';
import { NO_FOREGROUND, type Foreground } from '../../lib/http/foreground.js';
import type { LocPart, ValidationIssue } from '../../lib/http/errors.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { BatchItem, BatchResult, RunOptions } from '../shared/batch.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { ImportFiles } from './imports.files.js';
import { countRows, uploadRows, type UploadRow } from './imports.rows.js';
import { advanceCheckpoint, analyzeGrownTables, claimableImports, claimImport, deleteImport, expiredImports, extendImportLease, finishImport, importRow, insertImportErrors, expireUpload, plannedRowsOf, releaseImport, setRowsTotal, staleUploads } from './imports.repo.js';
import type { ImportResource } from './imports.schema.js';
import { optionsOf, presentImport } from './imports.service.js';

/** A resource's batch of the write path (the same runner /batch/<resource> uses), without the 100-item cap of the endpoint. */
export interface ImportWriter {
  batch(orgId: string, items: BatchItem[], opts: RunOptions): Promise<BatchResult>;
}

export interface ImportLog {
  warn(obj: unknown, msg: string): void;
  info(obj: unknown, msg: string): void;
}

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
// How long an import the database could not take a chunk of is left before this process claims it again.
const RESUME_AFTER_MS = 2_000;
// Pauses in a row at one checkpoint before the import fails with the database's error (waits 2, 4 … 20 s: about 2 minutes).
const MAX_PAUSES = 10;

// The errors file's bounds (docs/imports.md, "Bounds"): its first refused rows, each reference cut.
export const MAX_ERROR_ROWS = 10_000;
const MAX_ERROR_REF = 256;
// A finished import, its errors and its parts are deleted this long after it ended.
export const IMPORT_RETENTION_MS = 30 * 86_400_000;

const FIRST_CHUNK_ROWS = 128;
// PostgreSQL: the tables an import grows are analyzed once it has taken as many rows (refused ones too)
// as they had at their last ANALYZE, and at least this many (see plannerStats).
const ANALYZE_AFTER_ROWS = 10_000;
// At the end, once it has taken a tenth of what they had, and at least this many.
const ANALYZE_AT_END_ROWS = 1_000;
// Never fewer: a chunk has costs of its own (its reads of the references, the lane stats of the lanes it
// moved, recounted whole, which grow with each lane's history), and chunks sized below them by the time
// they took shrank further on PostgreSQL as the history grew (1,000 rows/s at 185,000 rows).
const MIN_CHUNK_ROWS = 128;
// Live chunks (liveChunkMs): as few rows as that, and taken while a write arrived within this window.
const MIN_LIVE_CHUNK_ROWS = 8;
const LIVE_WINDOW_MS = 1_000;

/**
 * The rows of an import's next chunk: `chunkRows` when chunks are not timed (`chunkMs` 0); else 128 for
 * a run's first chunk (its time per row is not known yet), then the power of two nearest halfway from
 * the last chunk's size to the one that would have taken `chunkMs` at its time per row, between 128 and
 * `chunkRows`. Halfway: steady as the time per row drifts (it grows with the tables) and through one
 * slow chunk (a collection, a checkpoint). Powers of two: few sizes, so few statement texts (a size's
 * lists of references and multi-row inserts are statements of their own, each compiled and kept).
 */
export function nextChunkSize(last: { rows: number; ms: number } | null, opts: { chunkMs: number; chunkRows: number; live?: boolean }): number {
  if (opts.chunkMs <= 0) return opts.chunkRows;
  if (opts.live) {
    // While writes arrive: straight to the power of two at or below the size that takes chunkMs (a
    // write waits for the chunk in flight, so no step halfway from a larger one), from 8 rows.
    if (!last) return Math.min(opts.chunkRows, MIN_LIVE_CHUNK_ROWS);
    const fitting = (opts.chunkMs * last.rows) / Math.max(0.1, last.ms);
    return Math.min(opts.chunkRows, Math.max(MIN_LIVE_CHUNK_ROWS, 2 ** Math.floor(Math.log2(Math.max(1, fitting)))));
  }
  if (!last) return Math.min(opts.chunkRows, FIRST_CHUNK_ROWS);
  const fitting = (opts.chunkMs * last.rows) / Math.max(1, last.ms);
  return Math.min(opts.chunkRows, Math.max(MIN_CHUNK_ROWS, 2 ** Math.round(Math.log2((last.rows + fitting) / 2))));
}

/** The claim was lost (another instance took the import over) or the import was cancelled: the chunk rolls back. */
class ClaimLost extends Error {
  constructor() {
    super('the import is no longer this process’s to run');
  }
}

/** The upload cannot be read (a CSV that does not parse, a part gone): the import fails, with this message. */
class UnreadableUpload extends Error {}

/** The detail of a refused row (docs/imports.md, "Rows"): a batch item's locations (`body.items[i].<noun>…`) as the single create would name them (`body…`). */
function rowDetail(detail: string | ValidationIssue[], index: number, noun: string): string | ValidationIssue[] {
  if (typeof detail === 'string') return detail;
  return detail.map((issue) => {
    const loc = issue.loc;
    if (loc[0] === 'body' && loc[1] === 'items' && loc[2] === index) {
      const rest: LocPart[] = loc[3] === noun ? loc.slice(4) : loc.slice(3);
      return Object.assign({}, issue, { loc: ['body', ...rest] });
    }
    return issue;
  });
}

const refOf = (record: unknown): string | null => {
  const ref = typeof record === 'object' && record !== null ? (record as { external_reference_id?: unknown }).external_reference_id : undefined;
  return typeof ref === 'string' ? ref : null;
};

/**
 * The import job runner (docs/imports.md, "How it runs"), a loop over claimed rows like the webhook
 * worker: an import queued (or running with its lease run out: a killed process) is claimed with one
 * conditional update, its rows are counted, then read after the checkpoint and written a chunk at a time
 * through the resource's batch (the write path of /batch/<resource>), each chunk with its refused rows
 * and its checkpoint in ONE transaction. A process killed mid-chunk leaves that chunk uncommitted and
 * its claim to expire; any instance resumes after the checkpoint, so no row is applied twice and the
 * counts end as in an uninterrupted run.
 */
export function importRunner(deps: ImportRunnerDeps) {
  const { db, clock, files } = deps;
  const chunkRows = deps.chunkRows ?? 1000;
  const chunkMs = deps.chunkMs ?? 50;
  const leaseMs = deps.leaseMs ?? 30_000;
  const maxAttempts = deps.maxChunkAttempts ?? 5;
  const foreground = deps.foreground ?? NO_FOREGROUND;
  const liveChunkMs = deps.foreground && chunkMs > 0 ? (deps.liveChunkMs ?? 0) : 0;
  /** Whether the API's writes are arriving (one within LIVE_WINDOW_MS): chunks are then sized to liveChunkMs. */
  const writesArriving = () => liveChunkMs > 0 && performance.now() - foreground.lastWriteAt < LIVE_WINDOW_MS;
  const sizing = (live: boolean) => (live ? { chunkMs: liveChunkMs, chunkRows, live: true } : { chunkMs, chunkRows });
  /**
   * Right before a chunk's transaction: the requests in flight go first (`foreground`, SQLite). A request
   * read while the chunk filled has its statements queued on the one connection: its first one (a read)
   * ran, and without this its transaction queued behind the chunk's. Waits until none is in flight, at
   * most the chunk's own target (liveChunkMs or chunkMs: under a steady stream of requests the import
   * still gets about half of the writer's time), without the follow-up's linger (a client's next request waits for one chunk at most either
   * way). A request arriving while the chunk's transaction runs still waits for it (docs/imports.md).
   */
  const giveWay = (live: boolean) => foreground.quiet(live ? liveChunkMs : chunkMs, 0);
  const nowIso = () => toIso(clock.now());
  const leaseEnd = () => toIso(new Date(clock.now().getTime() + leaseMs));
  let stopping = false;
  let started = false;
  let poll: NodeJS.Timeout | null = null;
  let again = false;
  const maxRunning = deps.maxRunning ?? 2;

  async function commitChunk(imp: ImportsTable, claim: string, chunk: UploadRow[], fromRow: number): Promise<number> {
    const noun = RECORD_KINDS[imp.resource as ImportResource].noun;
    const writer = deps.writers[imp.emit_events as 'summary' | 'all'][imp.resource as ImportResource];
    const toRow = chunk[chunk.length - 1]!.row;
    const items: BatchItem[] = [];
    const itemRows: { row: number; ref: string | null }[] = [];
    const early: ImportErrorsTable[] = [];
    for (const r of chunk) {
      if ('refused' in r) early.push({ import_id: imp.id, row: r.row, external_reference_id: r.refused.ref, detail: JSON.stringify(r.refused.detail) });
      else {
        items.push({ operation: imp.operation as BatchItem['operation'], [noun]: r.record } as BatchItem);
        itemRows.push({ row: r.row, ref: refOf(r.record) });
      }
    }
    for (let attempt = 1; ; attempt++) {
      let failure: unknown = null;
      await writer.batch(imp.org_id, items, {
        onError: (err) => {
          if (!(err instanceof ClaimLost)) failure = err;
        },
        beforeCommit: async (tx, results) => {
          let refused = [...early];
          results.forEach((entry, index) => {
            if (entry.success || !entry.error) return;
            const { row, ref } = itemRows[index]!;
            refused.push({ import_id: imp.id, row, external_reference_id: ref ?? entry.external_reference_id, detail: JSON.stringify(rowDetail(entry.error.detail, index, noun)) });
          });
          refused.sort((a, b) => Number(a.row) - Number(b.row));
          const failed = refused.length;
          // The errors file keeps the first MAX_ERROR_ROWS refused rows; rows_failed counts them all.
          const room = Math.max(0, MAX_ERROR_ROWS - Number((await importRow(tx, imp.id))?.rows_failed ?? 0));
          refused = refused.slice(0, room).map((e) => (e.external_reference_id && e.external_reference_id.length > MAX_ERROR_REF ? Object.assign({}, e, { external_reference_id: e.external_reference_id.slice(0, MAX_ERROR_REF) }) : e));
          await insertImportErrors(tx, refused);
          const succeeded = results.filter((e) => e.success).length;
          if (!(await advanceCheckpoint(tx, { id: imp.id, claim, fromRow, toRow, succeeded, failed, now: nowIso(), leasedUntil: leaseEnd() }))) throw new ClaimLost();
        },
      });
      // The batch answers per item even when its transaction failed: the checkpoint says whether it committed.
      const now = await importRow(db, imp.id);
      if (now && Number(now.checkpoint_row) === toRow && now.claim === claim) return toRow;
      if (!now || now.claim !== claim || now.status !== 'running') throw new ClaimLost();
      // The database could not take it (busy, unreachable) as often as a chunk is tried: a pause (below).
      if (attempt >= maxAttempts && isDatabaseUnavailable(failure)) throw failure;
      if (attempt >= maxAttempts) throw new Error(`a chunk (rows ${fromRow + 1}–${toRow}) failed ${attempt} times: ${(failure as Error | null)?.message ?? 'its transaction did not commit'}`);
      deps.log.warn({ err: failure, import: imp.id, fromRow, toRow, attempt }, 'import chunk did not commit; trying it again');
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }

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
   * Keeps PostgreSQL's statistics of the tables an import grows in step with them (analyzeGrownTables):
   * an ANALYZE once the import has taken as many rows (refused ones too) as the table had at its last
   * one (at least ANALYZE_AFTER_ROWS), so ⌊log2(N ÷ 10,000)⌋ + 1 of them over N rows into an empty
   * table, and one at the end unless the import took less than a tenth of the table or fewer than
   * ANALYZE_AT_END_ROWS rows. `grew(rows)` after each chunk, `end()` after the last. A failed ANALYZE
   * is logged and the import goes on (and tries again only after as many rows again). Nothing on SQLite.
   */
  async function plannerStats(imp: ImportsTable): Promise<{ grew(rows: number): Promise<void>; end(): Promise<void> }> {
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
        if (planned === null || stopping) return;
        since += rows;
        if (since >= Math.max(ANALYZE_AFTER_ROWS, planned)) await analyze();
      },
      async end() {
        if (planned !== null && since >= Math.max(ANALYZE_AT_END_ROWS, planned / 10)) await analyze();
      },
    };
  }

  // Imports this process leaves alone until a time: those whose parts it cannot see (another IMPORTS_DIR),
  // for a minute, to an instance that can; those the database could not take a chunk of, for a moment.
  const resting = new Map<string, number>();
  // Imports paused because the database could not take a chunk: the checkpoint they paused at, and how often in a row.
  const paused = new Map<string, { at: number; count: number }>();

  /** Runs a claimed import to its end, or until it is lost, cancelled or this process stops. */
  async function run(imp: ImportsTable, claim: string): Promise<void> {
    if ((await files.parts(imp.id)).length < imp.parts) {
      deps.log.warn({ import: imp.id }, 'the parts of this import are not in this process’s IMPORTS_DIR; left to an instance that has them');
      resting.set(imp.id, Date.now() + 60_000);
      await releaseImport(db, imp.id, claim);
      return;
    }
    let lost = false;
    /**
     * Whether the run goes on to its next chunk: the claim lost (taken over, cancelled) throws ClaimLost;
     * a stopping process gives the import back at once (another instance, or this one restarted,
     * resumes after the checkpoint) and answers false.
     */
    const goingOn = async (): Promise<boolean> => {
      if (lost) throw new ClaimLost();
      if (!stopping) return true;
      await releaseImport(db, imp.id, claim);
      return false;
    };
    const heartbeat = setInterval(() => {
      extendImportLease(db, imp.id, claim, leaseEnd())
        .then((ok) => {
          if (!ok) lost = true;
        })
        .catch(() => undefined);
    }, Math.max(200, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    const { csv = {}, strict = false } = optionsOf(imp);
    const format = imp.format as 'ndjson' | 'csv';
    // NDJSON through one reused buffer (files.chunks); CSV's parser takes a stream.
    const upload = () => (format === 'ndjson' ? files.chunks(imp.id, imp.parts) : files.open(imp.id, imp.parts));
    try {
      if (imp.rows_total === null) {
        let total: number;
        try {
          total = await countRows(upload(), format, csv);
        } catch (err) {
          throw new UnreadableUpload(`the upload cannot be read: ${(err as Error).message}`);
        }
        await setRowsTotal(db, imp.id, claim, total);
      }
      let checkpoint = Number(imp.checkpoint_row);
      const stats = await plannerStats(imp);
      let chunk: UploadRow[] = [];
      let live = writesArriving();
      let last: { rows: number; ms: number } | null = null;
      let size = nextChunkSize(last, sizing(live));
      const rows = uploadRows(upload(), format, { csv, createSchema: deps.createSchemas[imp.resource as ImportResource], after: checkpoint, strict });
      try {
        let turnAt = performance.now();
        for await (const r of rows) {
          chunk.push(r);
          // Reading and parsing rows runs in microtasks only (the file comes in 1 MiB reads): the event
          // loop gets a turn every ~10 ms of it, as within a batch's items, so a request beside a large
          // chunk is read and answered while the chunk fills, not after it.
          if (performance.now() - turnAt > 10) {
            await new Promise<void>((resolve) => setImmediate(resolve));
            turnAt = performance.now();
          }
          if (chunk.length < size) {
            // A write arrived while a chunk sized to chunkMs filled: it is cut to the live size (looked
            // at every 8 rows).
            if (live || (chunk.length & 7) !== 0 || !writesArriving()) continue;
            live = true;
            size = nextChunkSize(last, sizing(true));
            if (chunk.length < size) continue;
          }
          await giveWay(live);
          // Stopped, cancelled or taken over during the wait: the chunk is not begun.
          if (!(await goingOn())) return;
          const began = performance.now();
          checkpoint = await commitChunk(imp, claim, chunk, checkpoint);
          last = { rows: chunk.length, ms: performance.now() - began };
          live = writesArriving();
          size = nextChunkSize(last, sizing(live));
          await stats.grew(chunk.length);
          chunk = [];
          // A turn of the event loop between chunks: the rows come from a buffer of 1 MiB (some
          // 1,600 rows) and SQLite's driver is synchronous, so without it the requests beside the import
          // (a PUT, a status read) were not even read for many chunks in a row.
          await new Promise<void>((resolve) => setImmediate(resolve));
          turnAt = performance.now();
          // SQLite: a moment for the log to be copied and rewound (DataStore.betweenWrites), for the
          // requests beside the import; not when chunks are not timed (IMPORT_CHUNK_MS=0: a backfill
          // with nothing else writing, where only its speed counts).
          if (chunkMs > 0) await deps.betweenChunks?.();
          if (!(await goingOn())) return;
        }
      } catch (err) {
        if (err instanceof ClaimLost) throw err;
        if ((err as { code?: string }).code?.startsWith('CSV_')) throw new UnreadableUpload(`the CSV cannot be read: ${(err as Error).message}`);
        throw err;
      }
      if (chunk.length > 0) {
        await giveWay(writesArriving());
        if (!(await goingOn())) return;
        await commitChunk(imp, claim, chunk, checkpoint);
        await stats.grew(chunk.length);
      }
      await stats.end();
      await finish(imp, claim);
      paused.delete(imp.id);
    } catch (err) {
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
      // statement always times out) fails it after MAX_PAUSES pauses in a row without a row gained.
      const at = Number((await importRow(db, imp.id).catch(() => null))?.checkpoint_row ?? -1);
      const last = paused.get(imp.id);
      const pauses = last && last.at === at ? last.count + 1 : 1;
      if (isDatabaseUnavailable(err) && pauses <= MAX_PAUSES) {
        paused.set(imp.id, { at, count: pauses });
        deps.log.warn({ err, import: imp.id, pauses }, 'import paused: the database could not take a chunk; resumed after its checkpoint');
        resting.set(imp.id, Date.now() + RESUME_AFTER_MS * pauses);
        await releaseImport(db, imp.id, claim).catch(() => undefined);
        return;
      }
      paused.delete(imp.id);
      deps.log.warn({ err, import: imp.id }, 'import failed');
      await fail(imp, claim, (err as Error).message).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
    }
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

  /** Claims and runs imports until none is waiting (one at a time in this slot); `only`: that import alone. */
  async function pass(only?: string): Promise<void> {
    while (!stopping) {
      const candidates = only ? [{ id: only }] : await claimableImports(db, nowIso(), 20);
      let ran = false;
      for (const { id } of candidates) {
        if ((resting.get(id) ?? 0) > Date.now()) continue;
        resting.delete(id);
        const claim = randomUUID();
        const imp = await claimImport(db, id, claim, nowIso(), leaseEnd());
        if (!imp) continue;
        ran = true;
        await run(imp, claim);
        break;
      }
      if (!ran) return;
    }
  }

  /**
   * Up to `maxRunning` slots, each a loop of passes: an import of one organization never holds
   * another's (one import per organization is the database's rule: its unique index). A wake while every
   * slot runs an import is remembered (`again`): the first slot to finish looks once more.
   */
  const slots = new Set<Promise<void>>();
  function tick(): Promise<void> {
    if (stopping) return Promise.resolve();
    again = true;
    while (slots.size < maxRunning) {
      const slot: Promise<void> = runSlot().finally(() => slots.delete(slot));
      slots.add(slot);
    }
    return Promise.all(slots).then(() => undefined);
  }

  async function runSlot(): Promise<void> {
    try {
      if (Date.now() - lastSweep >= EXPIRY_SWEEP_MS) {
        lastSweep = Date.now();
        await housekeeping();
      }
      do {
        again = false;
        await pass();
      } while (again && !stopping);
    } catch (err) {
      deps.log.warn({ err }, 'import runner pass failed; tried again at the next poll');
    }
  }

  return {
    /** An import was queued here: taken at once when the runner is started. */
    wake(): void {
      if (started && !stopping) void tick();
    },
    /** Polls every `pollMs` (default 1 s) for imports queued elsewhere or left by a process that died. */
    start(): void {
      if (poll || stopping) return;
      started = true;
      poll = setInterval(() => void tick(), deps.pollMs ?? 1000);
      poll.unref();
      void tick();
    },
    /** Runs every import waiting now (or only import `id`: the CLI's own) to its end (tests, the CLI). */
    async drain(id?: string): Promise<void> {
      await Promise.all(slots);
      if (id !== undefined) return pass(id);
      await housekeeping();
      await Promise.all(Array.from({ length: maxRunning }, () => pass()));
    },
    /** Stops after the chunk in flight; the import is given back for any instance to resume. */
    async stop(): Promise<void> {
      stopping = true;
      if (poll) clearInterval(poll);
      await Promise.all(slots);
    },
  };
}
