import type { Executor } from '../../lib/db/index.js';
import type { ImportsTable } from '../../lib/db/types.js';
import type { Foreground } from '../../lib/http/foreground.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import type { PlannerStats } from './imports.analyze.js';
import { ClaimLost, commitChunk, type ChunkDeps, type ChunkRun } from './imports.chunk.js';
import type { ImportFiles } from './imports.files.js';
import type { CsvOptions } from './imports.header.js';
import { catchUpBetweenChunks, chunkPacer, giveWayMs, writesArriving, type PacingTargets } from './imports.pacing.js';
import { releaseImport, setRowsTotal } from './imports.repo.js';
import { countRows, uploadRows, type UploadRow } from './imports.rows.js';

/** The upload cannot be read (a CSV that does not parse, a part gone): the import fails, with this message. */
export class UnreadableUpload extends Error {}

/** What a run's steps use of the runner (its RunnerState, imports.runner.ts). */
export interface RunContext {
  readonly deps: { db: Executor; files: ImportFiles; betweenChunks(): Promise<void> };
  readonly targets: PacingTargets;
  readonly foreground: Foreground;
  readonly chunk: ChunkDeps;
  /** The runner is stopping: the run gives its import back before its next chunk. */
  readonly stopping: boolean;
}

/** One run of an import: its chunks' run (the import, its claim, resource and writer), the claim's lease and the planner's statistics. */
export interface Run extends ChunkRun {
  lease: { lost(): boolean; end(): void };
  stats: PlannerStats;
}

type ImportOptions = { csv?: CsvOptions; strict?: boolean };

/** The upload, read again from its first part (NDJSON through one reused buffer, files.chunks; CSV's parser takes a stream). */
const uploadOf = (x: RunContext, imp: ImportsTable) =>
  imp.format === 'ndjson' ? x.deps.files.chunks(imp.id, imp.parts) : x.deps.files.open(imp.id, imp.parts);

/** Whether the API's writes are arriving: chunks are then sized to the live time. */
const arriving = (x: RunContext): boolean => writesArriving(x.targets, performance.now() - x.foreground.lastWriteAt);

/**
 * Right before a chunk's transaction: the requests in flight go first (`foreground`, SQLite). A request
 * read while the chunk filled has its statements queued on the one connection: its first one (a read)
 * ran, and without this its transaction queued behind the chunk's. Waits until none is in flight, at
 * most giveWayMs, without the follow-up's linger (a client's next request waits for one chunk at most
 * either way). A request arriving while the chunk's transaction runs still waits for it (docs/imports.md).
 */
const giveWay = (x: RunContext, live: boolean): Promise<unknown> => x.foreground.quiet(giveWayMs(x.targets, live), 0);

/**
 * Whether the run goes on to its next chunk: throws ClaimLost when the claim was lost; a stopping
 * process gives the import back at once (another instance, or this one restarted, resumes after the
 * checkpoint): false.
 */
async function goingOn(x: RunContext, run: Run): Promise<boolean> {
  if (run.lease.lost()) throw new ClaimLost();
  if (!x.stopping) return true;
  await releaseImport(x.deps.db, run.imp.id, run.claim);
  return false;
}

/** The rows of the upload, counted once before its first chunk (`rows_total`). */
export async function countUpload(x: RunContext, { imp, claim }: Pick<ChunkRun, 'imp' | 'claim'>, options: ImportOptions): Promise<void> {
  let total: number;
  try {
    total = await countRows(uploadOf(x, imp), imp.format as 'ndjson' | 'csv', options.csv ?? {});
  } catch (err) {
    throw new UnreadableUpload(`the upload cannot be read: ${(err as Error).message}`);
  }
  await setRowsTotal(x.deps.db, imp.id, claim, total);
}

/**
 * One chunk of `rows` after checkpoint `fromRow`: begun after giving way (to the live time or not),
 * written by commitChunk, timed for the pacer (when given), counted for the planner's statistics.
 * The new checkpoint, or null when the run stopped before it began (the import given back).
 */
async function runChunk(x: RunContext, run: Run, rows: UploadRow[], fromRow: number, live: boolean, pacer: ReturnType<typeof chunkPacer> | null) {
  await giveWay(x, live);
  // Stopped, cancelled or taken over during the wait: the chunk is not begun.
  if (!(await goingOn(x, run))) return null;
  const began = performance.now();
  const checkpoint = await commitChunk(x.chunk, run, rows, fromRow);
  pacer?.took(rows.length, performance.now() - began);
  await run.stats.grew(rows.length);
  return checkpoint;
}

/** After a chunk of the reading loop (and its turn of the event loop): the log's catch-up; false when the run stops. */
async function betweenChunks(x: RunContext, run: Run): Promise<boolean> {
  // SQLite: a moment for the log to be copied and rewound, for the requests beside the import.
  if (catchUpBetweenChunks(x.targets)) await x.deps.betweenChunks();
  return goingOn(x, run);
}

/**
 * Reads the upload after the checkpoint (uploadRows) and writes it a chunk at a time (runChunk), each
 * sized by the pacer; false when the run stopped before its end (the import given back).
 */
export async function writeRows(x: RunContext, run: Run, options: ImportOptions): Promise<boolean> {
  const { imp } = run;
  let checkpoint = Number(imp.checkpoint_row);
  const pacer = chunkPacer(x.targets, () => arriving(x));
  let chunk: UploadRow[] = [];
  const rows = uploadRows(uploadOf(x, imp), imp.format as 'ndjson' | 'csv', {
    csv: options.csv ?? {},
    createSchema: run.resource.createSchema,
    after: checkpoint,
    strict: options.strict ?? false,
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
      const next = await runChunk(x, run, chunk, checkpoint, pacer.live, pacer);
      if (next === null) return false;
      checkpoint = next;
      chunk = [];
      // A turn of the event loop between chunks: the rows come from a buffer of 1 MiB (some
      // 1,600 rows) and SQLite's driver is synchronous, so without it the requests beside the import
      // (a PUT, a status read) were not even read for many chunks in a row.
      await yieldToEventLoop();
      turnAt = performance.now();
      if (!(await betweenChunks(x, run))) return false;
    }
  } catch (err) {
    if (err instanceof ClaimLost) throw err;
    if ((err as { code?: string }).code?.startsWith('CSV_')) throw new UnreadableUpload(`the CSV cannot be read: ${(err as Error).message}`);
    throw err;
  }
  if (chunk.length === 0) return true;
  return (await runChunk(x, run, chunk, checkpoint, arriving(x), null)) !== null;
}
