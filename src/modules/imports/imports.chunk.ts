import type { Executor } from '../../lib/db/index.js';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { ImportErrorsTable, ImportsTable } from '../../lib/db/types.js';
import type { BatchItem, BatchResultEntry } from '../shared/batch.js';
import type { UploadRow } from './imports.rows.js';
import { advanceCheckpoint, importRow, insertImportErrors } from './imports.repo.js';
import { MAX_CHUNK_ATTEMPTS } from './imports.pacing.js';
import type { ImportResourceDefinition, ImportWriter } from './imports.resources.js';

export interface ImportLog {
  warn(obj: unknown, msg: string): void;
  info(obj: unknown, msg: string): void;
}

// The errors file's bounds (docs/imports.md, "Bounds"): its first refused rows, each reference cut.
export const MAX_ERROR_ROWS = 10_000;
const MAX_ERROR_REF = 256;

/** The claim was lost (another instance took the import over) or the import was cancelled: the chunk rolls back. */
export class ClaimLost extends Error {
  constructor() {
    super('the import is no longer this process’s to run');
  }
}

const refOf = (record: unknown): string | null => {
  const ref = typeof record === 'object' && record !== null ? (record as { external_reference_id?: unknown }).external_reference_id : undefined;
  return typeof ref === 'string' ? ref : null;
};

/** A chunk as the batch takes it: its items, the row and reference of each, and the rows refused before the batch (parse, schema). */
function chunkItems(run: ChunkRun, rows: UploadRow[]) {
  const { imp } = run;
  const noun = run.resource.noun;
  const items: BatchItem[] = [];
  const itemRows: { row: number; ref: string | null }[] = [];
  const early: ImportErrorsTable[] = [];
  for (const r of rows) {
    if ('refused' in r) early.push({ import_id: imp.id, row: r.row, external_reference_id: r.refused.ref, detail: JSON.stringify(r.refused.detail) });
    else {
      items.push({ operation: imp.operation as BatchItem['operation'], [noun]: r.record } as BatchItem);
      itemRows.push({ row: r.row, ref: refOf(r.record) });
    }
  }
  return { items, itemRows, early };
}

/** One run of an import, as its chunks see it: the import as claimed, the claim, its resource and the writer of its emit_events. */
export interface ChunkRun {
  imp: ImportsTable;
  claim: string;
  resource: ImportResourceDefinition;
  writer: ImportWriter;
}

/** A chunk on its way: its run, its rows (after `fromRow`, through `toRow`) as batch items. */
interface Chunk extends ReturnType<typeof chunkItems> {
  run: ChunkRun;
  fromRow: number;
  toRow: number;
}

/** What writing a chunk uses beside its run. */
export interface ChunkDeps {
  db: Executor;
  log: ImportLog;
  nowIso(): string;
  leaseEnd(): string;
}

/** In the chunk's transaction: its refused rows (the first MAX_ERROR_ROWS of the import's) and its checkpoint. */
async function recordChunk(deps: ChunkDeps, tx: Executor, c: Chunk, results: readonly BatchResultEntry[]): Promise<void> {
  const { imp, claim, resource } = c.run;
  let refused = [...c.early];
  results.forEach((entry, index) => {
    if (entry.success || !entry.error) return;
    const { row, ref } = c.itemRows[index]!;
    refused.push({
      import_id: imp.id,
      row,
      external_reference_id: ref ?? entry.external_reference_id,
      detail: JSON.stringify(resource.refusal(entry.error.detail, index)),
    });
  });
  refused.sort((a, b) => Number(a.row) - Number(b.row));
  const failed = refused.length;
  // The errors file keeps the first MAX_ERROR_ROWS refused rows; rows_failed counts them all.
  const room = Math.max(0, MAX_ERROR_ROWS - Number((await importRow(tx, imp.id))?.rows_failed ?? 0));
  refused = refused
    .slice(0, room)
    .map((e) =>
      e.external_reference_id && e.external_reference_id.length > MAX_ERROR_REF
        ? Object.assign({}, e, { external_reference_id: e.external_reference_id.slice(0, MAX_ERROR_REF) })
        : e,
    );
  await insertImportErrors(tx, refused);
  const succeeded = results.filter((e) => e.success).length;
  const moved = { id: imp.id, claim, fromRow: c.fromRow, toRow: c.toRow, succeeded, failed, now: deps.nowIso(), leasedUntil: deps.leaseEnd() };
  if (!(await advanceCheckpoint(tx, moved))) throw new ClaimLost();
}

/**
 * Writes a chunk of an import's rows (after checkpoint `fromRow`) through its resource's batch, with its
 * refused rows and its checkpoint in the batch's ONE transaction (recordChunk): answers the new
 * checkpoint, or throws ClaimLost, the database's error, or the chunk's after MAX_CHUNK_ATTEMPTS.
 */
export async function commitChunk(deps: ChunkDeps, run: ChunkRun, rows: UploadRow[], fromRow: number): Promise<number> {
  const { imp, claim } = run;
  const toRow = rows[rows.length - 1]!.row;
  const c: Chunk = { run, fromRow, toRow, ...chunkItems(run, rows) };
  for (let attempt = 1; ; attempt++) {
    let failure: unknown = null;
    await run.writer.batch(imp.org_id, c.items, {
      onError: (err) => {
        if (!(err instanceof ClaimLost)) failure = err;
      },
      beforeCommit: (tx, results) => recordChunk(deps, tx, c, results),
    });
    // The batch answers per item even when its transaction failed: the checkpoint says whether it committed.
    const now = await importRow(deps.db, imp.id);
    if (now && Number(now.checkpoint_row) === toRow && now.claim === claim) return toRow;
    if (!now || now.claim !== claim || now.status !== 'running') throw new ClaimLost();
    // The database could not take it (busy, unreachable) as often as a chunk is tried: a pause (the runner).
    if (attempt >= MAX_CHUNK_ATTEMPTS && isDatabaseUnavailable(failure)) throw failure;
    if (attempt >= MAX_CHUNK_ATTEMPTS)
      throw new Error(
        `a chunk (rows ${fromRow + 1}–${toRow}) failed ${attempt} times: ${(failure as Error | null)?.message ?? 'its transaction did not commit'}`,
      );
    deps.log.warn({ err: failure, import: imp.id, fromRow, toRow, attempt }, 'import chunk did not commit; trying it again');
    await new Promise((r) => setTimeout(r, 200 * attempt));
  }
}
