import type { Executor } from '../../lib/db/index.js';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { ImportErrorsTable, ImportsTable } from '../../lib/db/types.js';
import type { LocPart, ValidationIssue } from '../../lib/http/errors.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { BatchItem, BatchResult, BatchResultEntry, RunOptions } from '../shared/batch.js';
import type { UploadRow } from './imports.rows.js';
import { advanceCheckpoint, importRow, insertImportErrors } from './imports.repo.js';
import type { ImportResource } from './imports.schema.js';

/** A resource's batch of the write path (the same runner /batch/<resource> uses), without the 100-item cap of the endpoint. */
export interface ImportWriter {
  batch(orgId: string, items: BatchItem[], opts: RunOptions): Promise<BatchResult>;
}

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

/** The detail of a refused row (docs/imports.md, "Rows"): a batch item's locations (`body.items[i].<noun>…`) as the single create would name them (`body…`). */
function rowDetail(detail: string | ValidationIssue[], index: number, noun: string): string | ValidationIssue[] {
  if (typeof detail === 'string') return detail;
  return detail.map((issue) => {
    const loc = issue.loc;
    if (loc[0] === 'body' && loc[1] === 'items' && loc[2] === index) {
      const rest: LocPart[] = loc.slice(loc[3] === noun ? 4 : 3);
      return Object.assign({}, issue, { loc: ['body', ...rest] });
    }
    return issue;
  });
}

const refOf = (record: unknown): string | null => {
  const ref = typeof record === 'object' && record !== null ? (record as { external_reference_id?: unknown }).external_reference_id : undefined;
  return typeof ref === 'string' ? ref : null;
};

/** A chunk as the batch takes it: its items, the row and reference of each, and the rows refused before the batch (parse, schema). */
function chunkItems(imp: ImportsTable, chunk: UploadRow[], noun: string) {
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
  return { items, itemRows, early };
}

/** A chunk on its way: the import, the claim it runs under, its rows (after `fromRow`, through `toRow`) as batch items. */
interface Chunk extends ReturnType<typeof chunkItems> {
  imp: ImportsTable;
  claim: string;
  fromRow: number;
  toRow: number;
  noun: string;
}

export interface ChunkDeps {
  db: Executor;
  writers: Record<'summary' | 'all', Record<ImportResource, ImportWriter>>;
  log: ImportLog;
  /** A chunk that fails as a whole (not a row's refusal) is tried again this many times before the import fails. */
  maxAttempts: number;
  nowIso(): string;
  leaseEnd(): string;
}

/**
 * Writes an import's chunks: each through the resource's batch, with its refused rows and its checkpoint
 * in the batch's ONE transaction (`commit` answers the new checkpoint, or throws ClaimLost, the
 * database's error, or the chunk's after `maxAttempts`).
 */
export function chunkWriter(deps: ChunkDeps) {
  const { db } = deps;

  /** In the chunk's transaction: its refused rows (the first MAX_ERROR_ROWS of the import's) and its checkpoint. */
  async function record(tx: Executor, c: Chunk, results: readonly BatchResultEntry[]): Promise<void> {
    const { imp, noun } = c;
    let refused = [...c.early];
    results.forEach((entry, index) => {
      if (entry.success || !entry.error) return;
      const { row, ref } = c.itemRows[index]!;
      refused.push({
        import_id: imp.id,
        row,
        external_reference_id: ref ?? entry.external_reference_id,
        detail: JSON.stringify(rowDetail(entry.error.detail, index, noun)),
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
    const moved = { id: imp.id, claim: c.claim, fromRow: c.fromRow, toRow: c.toRow, succeeded, failed, now: deps.nowIso(), leasedUntil: deps.leaseEnd() };
    if (!(await advanceCheckpoint(tx, moved))) throw new ClaimLost();
  }

  async function commit(imp: ImportsTable, claim: string, chunk: UploadRow[], fromRow: number): Promise<number> {
    const noun = RECORD_KINDS[imp.resource as ImportResource].noun;
    const writer = deps.writers[imp.emit_events as 'summary' | 'all'][imp.resource as ImportResource];
    const toRow = chunk[chunk.length - 1]!.row;
    const c: Chunk = { imp, claim, fromRow, toRow, noun, ...chunkItems(imp, chunk, noun) };
    for (let attempt = 1; ; attempt++) {
      let failure: unknown = null;
      await writer.batch(imp.org_id, c.items, {
        onError: (err) => {
          if (!(err instanceof ClaimLost)) failure = err;
        },
        beforeCommit: (tx, results) => record(tx, c, results),
      });
      // The batch answers per item even when its transaction failed: the checkpoint says whether it committed.
      const now = await importRow(db, imp.id);
      if (now && Number(now.checkpoint_row) === toRow && now.claim === claim) return toRow;
      if (!now || now.claim !== claim || now.status !== 'running') throw new ClaimLost();
      // The database could not take it (busy, unreachable) as often as a chunk is tried: a pause (the runner).
      if (attempt >= deps.maxAttempts && isDatabaseUnavailable(failure)) throw failure;
      if (attempt >= deps.maxAttempts)
        throw new Error(
          `a chunk (rows ${fromRow + 1}–${toRow}) failed ${attempt} times: ${(failure as Error | null)?.message ?? 'its transaction did not commit'}`,
        );
      deps.log.warn({ err: failure, import: imp.id, fromRow, toRow, attempt }, 'import chunk did not commit; trying it again');
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }

  return { commit };
}
