import { Type, type TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isTransactionConflict } from '../../lib/db/errors.js';
import { yieldToEventLoop } from '../../lib/event-loop.js';
import { BatchRestart, type ChangeSet, type ItemRunner, type Work, type Workspace, type WritePipeline } from './write-pipeline.js';
import { classifyError, InternalError, ValidationError, renderError, type LocPart, type ValidationIssue } from '../../lib/http/errors.js';
import { CiEnum, ExternalReferenceId } from '../../lib/http/schema-helpers.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { ErrorSchemas } from '../../lib/http/openapi.js';

export const MAX_BATCH_ITEMS = 100;

export type BatchOperation = 'create' | 'update' | 'upsert' | 'delete';

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

export function batchRequestSchema(dataKey: string, operations: readonly BatchOperation[]) {
  return Type.Object({
    items: Type.Array(
      Type.Object({
        operation: CiEnum(operations, { description: `One of ${operations.join(', ')} (any letter case).` }),
        external_reference_id: Type.Optional(
          ExternalReferenceId({ description: `Used when the ${dataKey} object omits its own; when both are given they must be equal.` }),
        ),
        [dataKey]: Type.Optional(
          Type.Unknown({ description: `The ${dataKey}, validated per item with the same rules as the single-record endpoints. Omitted for delete.` }),
        ),
      }),
      { maxItems: MAX_BATCH_ITEMS, description: `At most ${MAX_BATCH_ITEMS} items, applied in order.` },
    ),
  });
}

/**
 * The batch request as the document shows it: each item is one of the operations, with the data object
 * of that operation (create: the create schema; update and upsert: the update schema; delete: none).
 * The runtime schema above keeps the data object open so that each item is validated on its own.
 */
export function batchRequestDocument(dataKey: string, operations: readonly BatchOperation[], schemas: { create: unknown; update: unknown }) {
  const operation = (ops: readonly BatchOperation[]) => CiEnum(ops);
  const itemRef = ExternalReferenceId({ description: `Used when the ${dataKey} object omits its own; when both are given they must be equal.` });
  const variants: TSchema[] = [];
  if (operations.includes('create')) {
    variants.push(
      Type.Object(
        {
          operation: operation(['create']),
          external_reference_id: Type.Optional(itemRef),
          [dataKey]: Type.Unsafe(Object.assign({}, schemas.create as object, { description: `The new ${dataKey}, as the single create takes it.` })),
        },
        { title: `Create ${dataKey}`, description: 'Creates the record; 409 in its result when the external_reference_id exists.' },
      ),
    );
  }
  const changing = operations.filter((op): op is 'update' | 'upsert' => op === 'update' || op === 'upsert');
  if (changing.length > 0) {
    variants.push(
      Type.Object(
        {
          operation: operation(changing),
          external_reference_id: Type.Optional(itemRef),
          [dataKey]: Type.Unsafe(
            Object.assign({}, schemas.update as object, {
              description: `The fields to change, as the single update takes them (upsert: the fields of a new ${dataKey} when none exists).`,
            }),
          ),
        },
        {
          title: `Update or upsert ${dataKey}`,
          description: 'update: 404 in its result when the record does not exist; upsert creates it then (with the create rules).',
        },
      ),
    );
  }
  if (operations.includes('delete')) {
    variants.push(
      Type.Object(
        { operation: operation(['delete']), external_reference_id: ExternalReferenceId({ description: `The ${dataKey} to delete.` }) },
        { title: `Delete ${dataKey}`, description: `Deletes the ${dataKey}; no data object.` },
      ),
    );
  }
  return Type.Object({
    // One variant per operation (their operations never overlap). anyOf rather than oneOf: the operation is
    // matched in any letter case, which a discriminator cannot express, and linters cannot see the patterns exclude each other.
    items: Type.Array(Type.Unsafe({ anyOf: variants }), {
      maxItems: MAX_BATCH_ITEMS,
      description: `At most ${MAX_BATCH_ITEMS} items, applied in order, each on its own.`,
    }),
  });
}

export const BatchResultSchema = Type.Object(
  {
    success_count: Type.Integer(),
    error_count: Type.Integer(),
    results: Type.Array(
      Type.Object({
        index: Type.Integer(),
        external_reference_id: Type.Union([Type.String(), Type.Null()]),
        operation: Type.String({ enum: ['create', 'update', 'upsert', 'delete'], description: 'The operation, in lower case.' }),
        success: Type.Boolean(),
        id: Type.Union([Type.String(), Type.Null()], { description: 'The service id of the record; null when the item failed.' }),
        error: Type.Optional(
          Type.Object(
            {
              status: Type.Integer({
                description:
                  '404, 409, 422 as the single-record endpoints answer; 503 when the item was not processed (send it again); 500 on an unexpected failure.',
              }),
              request_id: Type.Optional(Type.String({ description: 'On a 500: the request id to quote when reporting it.' })),
              detail: Type.Union([Type.String(), Type.Array(Type.Ref(ErrorSchemas.ValidationIssue), { maxItems: 100 })], {
                description:
                  'What the single-record endpoint would have answered as detail: a message, or for 422 one {type, loc, msg} per problem (at most the first 100), loc starting at ["body", "items", index].',
              }),
              truncated: Type.Optional(Type.Literal(true, { description: 'On a 422 with more than 100 problems: only the first 100 are listed.' })),
            },
            { description: 'Present on a failed item only.' },
          ),
        ),
      }),
    ),
  },
  { $id: 'BatchResult' },
);

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

/**
 * Applies a batch item by item, in order, each as a unit of work of the write pipeline: an item
 * happens whole or leaves nothing, and one item's failure never undoes another's success. When the
 * batch's closing commit fails (SQLite), no item is reported saved.
 */
export function batchRunner<C, U, W extends Workspace>(resource: BatchResource<C, U, W>) {
  type ItemWork = Work<{ id: string }, W>;
  const validateCreate = compileBodyValidator(resource.createSchema);
  const validateUpdate = compileBodyValidator(resource.updateSchema);
  const { dataKey } = resource;

  /** The item checked and turned into its work (422s here write nothing). */
  function itemWork(orgId: string, item: BatchItem, index: number): { ref: string; work: ItemWork; upsert: boolean } {
    const at: LocPart[] = ['body', 'items', index];
    const op = item.operation;
    const itemRef = item.external_reference_id;
    if (op === 'delete') {
      if (!itemRef) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
      return { ref: itemRef, work: (tx, ch, ws) => resource.delete(tx, ch, ws, orgId, itemRef), upsert: false };
    }
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
    const data = dataRef === undefined && itemRef !== undefined ? { external_reference_id: itemRef, ...sent } : sent;
    const issues = (op === 'create' ? validateCreate : validateUpdate)(data, [...at, dataKey]);
    if (issues) {
      // One entry per problem (docs/api.md, "Errors"), the checks that need the database included (read
      // in the item's turn).
      const problems = resource.problems;
      if (!problems) throw new ValidationError(issues);
      const named = typeof data.external_reference_id === 'string' ? data.external_reference_id : null;
      const refused = new Set(issues.map((i) => JSON.stringify(i.loc)));
      const work: ItemWork = async (tx, _ch, ws) => {
        const others = new ValidationError(await problems(tx, ws, orgId, data, op === 'create' ? null : named)).nestedUnder([...at, dataKey]).issues;
        throw new ValidationError([...issues, ...others.filter((i) => !refused.has(JSON.stringify(i.loc)))]);
      };
      return { ref: named ?? '', work, upsert: false };
    }
    const ref = data.external_reference_id as string | undefined;
    if (!ref) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
    const nested =
      (w: ItemWork): ItemWork =>
      async (tx, ch, ws) => {
        try {
          return await w(tx, ch, ws);
        } catch (err) {
          if (err instanceof ValidationError) throw err.nestedUnder([...at, dataKey]);
          throw err;
        }
      };
    if (op === 'create') return { ref, work: nested((tx, ch, ws) => resource.create(tx, ch, ws, orgId, data as C)), upsert: false };
    if (op === 'update') return { ref, work: nested((tx, ch, ws) => resource.update(tx, ch, ws, orgId, ref, data as U)), upsert: false };
    return { ref, work: nested((tx, ch, ws) => resource.upsert(tx, ch, ws, orgId, ref, data as U)), upsert: true };
  }

  async function applyAll(orgId: string, items: BatchItem[], deadline: number, opts: RunOptions, runItem: ItemRunner<W>): Promise<BatchResultEntry[]> {
    const results: BatchResultEntry[] = [];
    let turnAt = Date.now();
    for (const [index, item] of items.entries()) {
      // Every ~10 ms the event loop gets a turn: on SQLite (a synchronous driver) a batch runs in
      // microtasks only, and would otherwise hold every other request, and SIGTERM, until it ends.
      if (Date.now() - turnAt > 10) {
        await yieldToEventLoop();
        turnAt = Date.now();
      }
      const data = item[dataKey];
      // The item's own external_reference_id when it has one, else its data object's
      // (docs/api.md, "Batches").
      const declaredRef =
        item.external_reference_id ?? (isPlainObject(data) && typeof data.external_reference_id === 'string' ? data.external_reference_id : undefined) ?? null;
      const entry: BatchResultEntry = { index, external_reference_id: declaredRef, operation: item.operation, success: false, id: null };
      if (Date.now() > deadline) {
        entry.error = { status: 503, detail: OUT_OF_TIME };
        results.push(entry);
        continue;
      }
      try {
        const refused = opts.refusedItems?.get(index);
        if (refused) throw new ValidationError(refused);
        const { ref, work, upsert } = itemWork(orgId, item, index);
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

  return async function run(orgId: string, items: BatchItem[], opts: RunOptions = {}): Promise<BatchResult> {
    let applied: BatchResultEntry[] = [];
    let results: BatchResultEntry[];
    // One deadline for the request, however often the pipeline runs the items.
    const deadlineAt = opts.deadlineMs ? (opts.startedAt ?? Date.now()) + opts.deadlineMs : Infinity;
    try {
      const open = resource.workspace;
      results = await resource.pipeline.batch<BatchResultEntry[], W>(
        orgId,
        async (runItem) => {
          applied = await applyAll(orgId, items, deadlineAt, opts, runItem);
          const last = opts.beforeCommit;
          // As the batch's last step, in its transaction: it commits with the items or not at all.
          if (last) await runItem(async (tx) => (await last(tx, applied), { id: '' }));
          return applied;
        },
        {
          analyticsRun: resource.analyticsRun,
          deadlineAt,
          // Items refused for their text are not read ahead: they fail before they run.
          ...(open
            ? {
                workspace: (tx: Executor) =>
                  open(
                    tx,
                    orgId,
                    items.filter((_, i) => !opts.refusedItems?.has(i)).map((item) => ({ ref: item.external_reference_id, data: item[dataKey] })),
                  ),
              }
            : {}),
        },
      );
    } catch (err) {
      // The closing commit failed (or the transaction could not start): nothing of the batch was
      // saved, so no item may be reported saved.
      // Past the deadline (PostgreSQL: a lock wait cut by it) no item was reached in time.
      const failure = Date.now() >= deadlineAt ? { status: 503, detail: OUT_OF_TIME } : batchItemError(err, opts);
      results = items.map((item, index) => {
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
    const successCount = results.filter((r) => r.success).length;
    return { success_count: successCount, error_count: results.length - successCount, results };
  };
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
