import { Type, type TSchema } from '@sinclair/typebox';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { Executor } from '../../lib/db/index.js';
import type { BatchTransaction } from '../../lib/db/tx.js';
import { ApiError, ValidationError, type LocPart } from '../../lib/http/errors.js';
import { CiEnum, ExternalReferenceId } from '../../lib/http/schema-helpers.js';
import { compileBodyValidator } from '../../lib/http/validation.js';

export const MAX_BATCH_ITEMS = 100;

export type BatchOperation = 'create' | 'update' | 'upsert' | 'delete';

/** What one resource lends the batch runner: the same service calls its single-record routes use. */
export interface BatchResource<Create, Update> {
  dataKey: string;
  operations: readonly BatchOperation[];
  createSchema: TSchema;
  updateSchema: TSchema;
  /** `tx`: the batch's own transaction when it has one (items then run in savepoints of it). */
  create(orgId: string, data: Create, tx?: Executor): Promise<{ id: string }>;
  update(orgId: string, ref: string, data: Update, tx?: Executor): Promise<{ id: string }>;
  upsert(orgId: string, ref: string, data: Update, tx?: Executor): Promise<{ id: string }>;
  delete?(orgId: string, ref: string, tx?: Executor): Promise<{ id: string }>;
}

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
  error?: { status: number; detail: unknown };
}

export interface BatchResult {
  success_count: number;
  error_count: number;
  results: BatchResultEntry[];
}

export function batchRequestSchema(dataKey: string, operations: readonly BatchOperation[]) {
  return Type.Object(
    {
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
    },
  );
}

export const BatchResultSchema = Type.Object(
  {
    success_count: Type.Integer(),
    error_count: Type.Integer(),
    results: Type.Array(
      Type.Object({
        index: Type.Integer(),
        external_reference_id: Type.Union([Type.String(), Type.Null()]),
        operation: Type.String(),
        success: Type.Boolean(),
        id: Type.Union([Type.String(), Type.Null()], { description: 'The service id of the record; null when the item failed.' }),
        error: Type.Optional(
          Type.Object({
            status: Type.Integer({ description: '404, 409, 422 (as the single-record endpoints), 503 when not processed.' }),
            detail: Type.Unknown({ description: 'A string, or for 422 the list of {type, loc, msg}.' }),
          }),
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
  deadlineMs?: number;
  onError?: (err: unknown) => void;
  /** One transaction around the whole batch, each item in a savepoint (SQLite: src/lib/db/tx.ts). */
  transaction?: BatchTransaction;
}

/**
 * Applies a batch item by item, in order. Each item goes through the same service call as the single
 * record endpoint, in its own transaction (PostgreSQL) or its own savepoint of the batch's transaction
 * (SQLite, `transaction`): an item either happens whole or leaves nothing, and one item's failure never
 * undoes another's success. When the batch's closing commit fails, no item is reported saved.
 */
export function batchRunner<C, U>(resource: BatchResource<C, U>) {
  const validateCreate = compileBodyValidator(resource.createSchema);
  const validateUpdate = compileBodyValidator(resource.updateSchema);
  const { dataKey } = resource;

  async function applyItem(orgId: string, item: BatchItem, index: number, tx: Executor | undefined): Promise<{ id: string; ref: string }> {
    const at: LocPart[] = ['body', 'items', index];
    const op = item.operation;
    const itemRef = item.external_reference_id;
    if (op === 'delete') {
      if (!itemRef) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
      return { ...(await resource.delete!(orgId, itemRef, tx)), ref: itemRef };
    }
    const data = item[dataKey];
    if (data === undefined) throw ValidationError.single([...at, dataKey], 'Field required', 'missing');
    if (!isPlainObject(data)) throw ValidationError.single([...at, dataKey], 'Input should be a valid dictionary or object', 'dict_type');
    const dataRef = data.external_reference_id;
    if (typeof dataRef === 'string' && itemRef !== undefined && dataRef !== itemRef) {
      throw ValidationError.single(
        [...at, dataKey, 'external_reference_id'],
        `external_reference_id of the ${dataKey} ('${dataRef}') differs from the item's ('${itemRef}')`,
      );
    }
    if (dataRef === undefined && itemRef !== undefined) data.external_reference_id = itemRef;
    const issues = (op === 'create' ? validateCreate : validateUpdate)(data, [...at, dataKey]);
    if (issues) throw new ValidationError(issues);
    const ref = data.external_reference_id as string | undefined;
    if (!ref) throw ValidationError.single([...at, 'external_reference_id'], 'Field required', 'missing');
    try {
      if (op === 'create') return { id: (await resource.create(orgId, data as C, tx)).id, ref };
      if (op === 'update') return { id: (await resource.update(orgId, ref, data as U, tx)).id, ref };
      return { id: (await resource.upsert(orgId, ref, data as U, tx)).id, ref };
    } catch (err) {
      if (err instanceof ValidationError) throw err.nestedUnder([...at, dataKey]);
      throw err;
    }
  }

  async function applyAll(orgId: string, items: BatchItem[], opts: RunOptions, tx: Executor | undefined): Promise<BatchResultEntry[]> {
    const results: BatchResultEntry[] = [];
    const deadline = opts.deadlineMs ? Date.now() + opts.deadlineMs : Infinity;
    let turnAt = Date.now();
    for (const [index, item] of items.entries()) {
      // Every ~10 ms the event loop gets a turn: on SQLite (a synchronous driver) a batch runs in
      // microtasks only, and would otherwise hold every other request, and SIGTERM, until it ends.
      if (Date.now() - turnAt > 10) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        turnAt = Date.now();
      }
      const data = item[dataKey];
      const declaredRef =
        (isPlainObject(data) && typeof data.external_reference_id === 'string' ? data.external_reference_id : undefined) ??
        item.external_reference_id ??
        null;
      const entry: BatchResultEntry = { index, external_reference_id: declaredRef, operation: item.operation, success: false, id: null };
      if (Date.now() > deadline) {
        entry.error = { status: 503, detail: 'Not processed: the batch ran past its deadline. Send this item again.' };
        results.push(entry);
        continue;
      }
      try {
        const { id, ref } = await applyItem(orgId, item, index, tx);
        Object.assign(entry, { success: true, id, external_reference_id: ref });
      } catch (err) {
        if (err instanceof ApiError) {
          const body = err.body() as { detail?: unknown; error?: { message?: string } };
          entry.error = { status: err.status, detail: body.detail ?? body.error?.message ?? err.message };
        } else if (isDatabaseUnavailable(err)) {
          entry.error = { status: 503, detail: 'Service temporarily unavailable' };
        } else {
          opts.onError?.(err);
          entry.error = { status: 500, detail: 'Internal server error' };
        }
      }
      results.push(entry);
    }
    return results;
  }

  return async function run(orgId: string, items: BatchItem[], opts: RunOptions = {}): Promise<BatchResult> {
    let results: BatchResultEntry[];
    if (!opts.transaction) results = await applyAll(orgId, items, opts, undefined);
    else {
      let applied: BatchResultEntry[] = [];
      try {
        await opts.transaction(async (tx) => {
          applied = await applyAll(orgId, items, opts, tx);
        });
        results = applied;
      } catch (err) {
        // The closing commit failed (or the transaction could not start): nothing of the batch was
        // saved, so no item may be reported saved.
        if (!isDatabaseUnavailable(err)) opts.onError?.(err);
        const status = isDatabaseUnavailable(err) ? 503 : 500;
        const detail = status === 503 ? 'Service temporarily unavailable' : 'Internal server error';
        results = items.map((item, index) => {
          const done = applied[index];
          return {
            index,
            external_reference_id: done?.external_reference_id ?? item.external_reference_id ?? null,
            operation: item.operation,
            success: false,
            id: null,
            error: done && !done.success && done.error ? done.error : { status, detail },
          };
        });
      }
    }
    const successCount = results.filter((r) => r.success).length;
    return { success_count: successCount, error_count: results.length - successCount, results };
  };
}
