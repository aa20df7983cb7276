import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isTransactionConflict } from '../../lib/db/errors.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import { BatchRestart, type ChangeSet, type ItemRunner, type Work, type Workspace, type WritePipeline } from './write-pipeline.js';
import { classifyError, InternalError, ValidationError, renderError, type LocPart, type ValidationIssue } from '../../lib/http/errors.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { allProblems } from './records.js';

import type { BatchOperation } from './batch.schema.js';

export { MAX_BATCH_ITEMS, BatchResultSchema, batchRequestDocument, batchRequestSchema, type BatchOperation } from './batch.schema.js';

export interface BatchItem {
  operation: BatchOperation;
  external_reference_id?: string;
  [dataKey: string]: unknown;
}

export interface BatchResultEntry {
  index: number;
  external_reference_id: string | null;
  operation: BatchOperation;
  success: boolean;
  id: string | null;
  error?: BatchItemError;
}

/** A failed item's `error`: what the single-record endpoint would have answered. */
export interface BatchItemError {
  status: number;
  detail: string | ValidationIssue[];
  /** A 422 with more than 100 problems lists the first 100 (as a single-record 422 does). */
  truncated?: true;
}

export interface BatchResult {
  success_count: number;
  error_count: number;
  results: BatchResultEntry[];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export interface RunOptions {
  /** The request's one deadline (docs/api.md, "Batches"), from when it began (items reached after it fail 503). */
  deadlineMs?: number;
  /** When the request began (ms since the epoch); now when omitted. */
  startedAt?: number;
  /** The request's id: a failed item's 500 carries it, as every 500 does. */
  requestId?: string;
  onError?: (err: unknown) => void;
  /** Items refused before the batch ran (text that is not Unicode, or NUL): each fails 422 with these entries. */
  refusedItems?: ReadonlyMap<number, ValidationIssue[]> | null;
  /**
   * Runs in the batch's transaction after its items, before it commits (an import chunk's checkpoint and
   * refused rows, src/modules/imports): it commits with them or not at all. Its failure fails the batch.
   */
  beforeCommit?: (tx: Executor, results: readonly BatchResultEntry[]) => Promise<void>;
}

/** What an item the batch did not reach before its deadline answers. */
export const OUT_OF_TIME = 'The batch ran out of time before this item';

/** What a batch's workspace sees of an item before it runs: its reference (as the item names it) and its data, unvalidated. */
export interface BatchPrefetchItem {
  ref: unknown;
  data: unknown;
}

/** What one resource lends the batch runner: the same steps its single-record writes run. */
export interface BatchResource<Create, Update, W extends Workspace> {
  dataKey: string;
  operations: readonly BatchOperation[];
  createSchema: TSchema;
  updateSchema: TSchema;
  pipeline: WritePipeline;
  /** Counts as a lane analytics run (docs/api.md, "Lane history and carrier recommendations"), once per batch (load batches). */
  analyticsRun: boolean;
  create(tx: Executor, changes: ChangeSet, ws: W, orgId: string, data: Create): Promise<{ id: string }>;
  update(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string, data: Update): Promise<{ id: string }>;
  upsert(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string, data: Update): Promise<{ id: string }>;
  delete(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string): Promise<{ id: string }>;
  /** Opens what the items share, first in the batch's transaction (a load batch reads its records at once). */
  workspace?(tx: Executor, orgId: string, items: BatchPrefetchItem[]): Promise<W>;
  /** A data object's problems beyond its schema (loc from `body`); `ref`: the record an update names. */
  problems?(tx: Executor, ws: W, orgId: string, data: unknown, ref: string | null): Promise<ValidationIssue[]>;
}

/** A batch resource with its data schemas compiled (once per resource, not per batch). */
export interface BatchTarget<C, U, W extends Workspace> extends BatchResource<C, U, W> {
  validateCreate: ReturnType<typeof compileBodyValidator>;
  validateUpdate: ReturnType<typeof compileBodyValidator>;
}

export function batchTarget<C, U, W extends Workspace>(resource: BatchResource<C, U, W>): BatchTarget<C, U, W> {
  return Object.assign({}, resource, {
    validateCreate: compileBodyValidator(resource.createSchema),
    validateUpdate: compileBodyValidator(resource.updateSchema),
  });
}

/** An item's work, its reference, and whether it is an upsert (run again once after a lost insert race). */
interface ItemPlan<W extends Workspace> {
  ref: string;
  work: Work<{ id: string }, W>;
  upsert: boolean;
}

/** A step's 422 located under the item's data object (`body.items[i].<noun>…`). */
function nestedUnder<W extends Workspace>(at: LocPart[], w: Work<{ id: string }, W>): Work<{ id: string }, W> {
  return async (tx, ch, ws) => {
    try {
      return await w(tx, ch, ws);
    } catch (err) {
      if (err instanceof ValidationError) throw err.nestedUnder(at);
      throw err;
    }
  };
}

/**
 * The work of an item whose data failed its schema: one entry per problem (docs/api.md, "Errors"), the
 * checks that need the database included (read in the item's turn).
 */
function refusedItem<C, U, W extends Workspace>(
  target: BatchTarget<C, U, W>,
  orgId: string,
  op: BatchOperation,
  data: Record<string, unknown>,
  issues: ValidationIssue[],
  at: LocPart[],
): ItemPlan<W> {
  const problems = target.problems;
  if (!problems) throw new ValidationError(issues);
  const named = typeof data.external_reference_id === 'string' ? data.external_reference_id : null;
  const work: Work<{ id: string }, W> = async (tx, _ch, ws) => {
    const others = new ValidationError(await problems(tx, ws, orgId, data, op === 'create' ? null : named)).nestedUnder(at).issues;
    throw new ValidationError(allProblems(issues, others));
  };
  return { ref: named ?? '', work, upsert: false };
}

/** The item's data object with the item's reference standing in for its own; 422 when it is missing, not an object, or names another. */
function itemData(dataKey: string, item: BatchItem, at: LocPart[]): Record<string, unknown> {
  const itemRef = item.external_reference_id;
  const sent = item[dataKey];
  if (sent === undefined) throw ValidationError.single([...at, dataKey], 'Field required', 'missing');
  if (!isPlainObject(sent)) throw ValidationError.single([...at, dataKey], 'Input should be a valid dictionary or object', 'dict_type');
  const dataRef = sent.external_reference_id;
  if (typeof dataRef === 'string' && itemRef !== undefined && dataRef !== itemRef) {
    throw ValidationError.single(
      [...at, dataKey, 'external_reference_id'],
      `external_reference_id of the ${dataKey} ('${dataRef}') differs from the item's ('${itemRef}')`,
    );
  }
  // The item's reference stands in for the data's own (a copy: the parsed request is never changed). The
  // data is spread, not Object.assign'ed: an own `__proto__` key stays a plain key (define, not set).
  return dataRef === undefined && itemRef !== undefined ? { external_reference_id: itemRef, ...sent } : sent;
}

/** The item checked and turned into its work (422s here write nothing). */
function itemWork<C, U, W extends Workspace>(target: BatchTarget<C, U, W>, orgId: string, item: BatchItem, index: number): ItemPlan<W> {
  const at: LocPart[] = ['body', 'items', index];
  const op = item.operation;
  if (op === 'delete') {
    const itemRef = item.external_reference_id;
    if (!itemRef) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
    return { ref: itemRef, work: (tx, ch, ws) => target.delete(tx, ch, ws, orgId, itemRef), upsert: false };
  }
  const { dataKey } = target;
  const data = itemData(dataKey, item, at);
  const issues = (op === 'create' ? target.validateCreate : target.validateUpdate)(data, [...at, dataKey]);
  if (issues) return refusedItem(target, orgId, op, data, issues, [...at, dataKey]);
  const ref = data.external_reference_id as string | undefined;
  if (!ref) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
  const under = [...at, dataKey];
  if (op === 'create') return { ref, work: nestedUnder(under, (tx, ch, ws) => target.create(tx, ch, ws, orgId, data as C)), upsert: false };
  if (op === 'update') return { ref, work: nestedUnder(under, (tx, ch, ws) => target.update(tx, ch, ws, orgId, ref, data as U)), upsert: false };
  return { ref, work: nestedUnder(under, (tx, ch, ws) => target.upsert(tx, ch, ws, orgId, ref, data as U)), upsert: true };
}

/** The reference an item's result names before it runs: the item's own when it has one, else its data object's (docs/api.md, "Batches"). */
function declaredRef(item: BatchItem, dataKey: string): string | null {
  const data = item[dataKey];
  return item.external_reference_id ?? (isPlainObject(data) && typeof data.external_reference_id === 'string' ? data.external_reference_id : undefined) ?? null;
}

/** Runs the items in order, each through `runItem` (a unit of work of the pipeline), and reports each. */
async function applyItems<C, U, W extends Workspace>(
  target: BatchTarget<C, U, W>,
  orgId: string,
  items: BatchItem[],
  deadline: number,
  opts: RunOptions,
  runItem: ItemRunner<W>,
): Promise<BatchResultEntry[]> {
  const results: BatchResultEntry[] = [];
  let turnAt = Date.now();
  for (const [index, item] of items.entries()) {
    // Every ~10 ms the event loop gets a turn: on SQLite (a synchronous driver) a batch runs in
    // microtasks only, and would otherwise hold every other request, and SIGTERM, until it ends.
    if (Date.now() - turnAt > 10) {
      await yieldToEventLoop();
      turnAt = Date.now();
    }
    const entry: BatchResultEntry = { index, external_reference_id: declaredRef(item, target.dataKey), operation: item.operation, success: false, id: null };
    if (Date.now() > deadline) {
      entry.error = { status: 503, detail: OUT_OF_TIME };
      results.push(entry);
      continue;
    }
    try {
      const refused = opts.refusedItems?.get(index);
      if (refused) throw new ValidationError(refused);
      const { ref, work, upsert } = itemWork(target, orgId, item, index);
      const { id } = await runItem(work, { retryUniqueRace: upsert });
      Object.assign(entry, { success: true, id, external_reference_id: ref });
    } catch (err) {
      // The engine gave the whole transaction up (a deadlock): the pipeline runs the batch again.
      if (err instanceof BatchRestart || isTransactionConflict(err)) throw err;
      entry.error = batchItemError(err, opts);
    }
    results.push(entry);
  }
  return results;
}

/** The batch's answer when its transaction failed (its closing commit, or its start): no item is reported saved. */
function failedBatch(items: BatchItem[], applied: BatchResultEntry[], err: unknown, deadlineAt: number, opts: RunOptions): BatchResultEntry[] {
  // Past the deadline (PostgreSQL: a lock wait cut by it) no item was reached in time.
  const failure = Date.now() >= deadlineAt ? { status: 503, detail: OUT_OF_TIME } : batchItemError(err, opts);
  return items.map((item, index) => {
    const done = applied[index];
    return {
      index,
      external_reference_id: done?.external_reference_id ?? item.external_reference_id ?? null,
      operation: item.operation,
      success: false,
      id: null,
      error: done && !done.success && done.error ? done.error : failure,
    };
  });
}

/**
 * Applies a batch item by item, in order, each as a unit of work of the write pipeline: an item
 * happens whole or leaves nothing, and one item's failure never undoes another's success. When the
 * batch's closing commit fails (SQLite), no item is reported saved.
 */
export async function runBatch<C, U, W extends Workspace>(
  target: BatchTarget<C, U, W>,
  orgId: string,
  items: BatchItem[],
  opts: RunOptions = {},
): Promise<BatchResult> {
  let applied: BatchResultEntry[] = [];
  let results: BatchResultEntry[];
  // One deadline for the request, however often the pipeline runs the items.
  const deadlineAt = opts.deadlineMs ? (opts.startedAt ?? Date.now()) + opts.deadlineMs : Infinity;
  const batchOpts: { analyticsRun: boolean; deadlineAt: number; workspace?: (tx: Executor) => Promise<W> } = { analyticsRun: target.analyticsRun, deadlineAt };
  const open = target.workspace;
  if (open) {
    // Items refused for their text are not read ahead: they fail before they run.
    const ahead = items.filter((_, i) => !opts.refusedItems?.has(i)).map((item) => ({ ref: item.external_reference_id, data: item[target.dataKey] }));
    batchOpts.workspace = (tx) => open(tx, orgId, ahead);
  }
  try {
    results = await target.pipeline.batch<BatchResultEntry[], W>(
      orgId,
      async (runItem) => {
        applied = await applyItems(target, orgId, items, deadlineAt, opts, runItem);
        const last = opts.beforeCommit;
        // As the batch's last step, in its transaction: it commits with the items or not at all.
        if (last) await runItem(async (tx) => (await last(tx, applied), { id: '' }));
        return applied;
      },
      batchOpts,
    );
  } catch (err) {
    results = failedBatch(items, applied, err, deadlineAt, opts);
  }
  const successCount = results.filter((r) => r.success).length;
  return { success_count: successCount, error_count: results.length - successCount, results };
}

/** A batch runner over one resource (tests, and callers without a record kind): runBatch with the schemas compiled once. */
export function batchRunner<C, U, W extends Workspace>(resource: BatchResource<C, U, W>) {
  const target = batchTarget(resource);
  return (orgId: string, items: BatchItem[], opts: RunOptions = {}): Promise<BatchResult> => runBatch(target, orgId, items, opts);
}

/** A failed item's `error` (docs/api.md, "Batches"): the status and detail a single-record request would have answered. */
function batchItemError(err: unknown, opts: RunOptions): BatchItemError & { request_id?: string } {
  const known = classifyError(err, opts.requestId ?? '', { unavailable: () => {}, internal: (e) => opts.onError?.(e) });
  const { status, body } = renderError(known);
  const detail = (body.detail ?? (body.error as { message?: string } | undefined)?.message ?? known.message) as BatchItemError['detail'];
  // A 500 carries the request's id, like every other 500.
  if (known instanceof InternalError) return { status, detail, request_id: known.requestId };
  return body.truncated === true ? { status, detail, truncated: true } : { status, detail };
}
