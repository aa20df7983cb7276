import type { Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/http/errors.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { RecordTable, RowOf } from './tenant-records.repo.js';
import { runBatch, batchTarget, type BatchItem, type BatchPrefetchItem, type BatchResource, type BatchTarget, type RunOptions } from './batch.js';
import type { RecordContext, RecordDefinition } from './record-kind.js';
import {
  bodyProblems,
  createRecord,
  deleteRecord,
  openWorkspace,
  recordStore,
  updateRecord,
  upsertRecord,
  type AnyRecordStore,
  type RecordStore,
} from './record-steps.js';
import type { ChangeSet, Workspace } from './write-pipeline.js';

/** A single write's answer, which is also its event's data (seal does not build it again); read after its writes reached the transaction. */
async function answerOf<T extends RecordTable, Out, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  row: RowOf<T>,
): Promise<Out> {
  await ws.flush(tx);
  const [out] = await store.def.present(store.deps, tx, orgId, [row]);
  changes.presented(row.id, out);
  return out as Out;
}

/** A single write of the kind in its own unit of work (its workspace when the kind has one), answered as GET would. */
function writeOne<T extends RecordTable, Out, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  orgId: string,
  step: (tx: Executor, changes: ChangeSet, ws: W) => Promise<RowOf<T>>,
  retryUniqueRace = false,
): Promise<Out> {
  const work = async (tx: Executor, changes: ChangeSet, ws: W) => answerOf<T, Out, W>(store, tx, changes, ws, orgId, await step(tx, changes, ws));
  return store.pipeline.write<Out, W>(orgId, work, Object.assign(writeOptions(store, orgId), { retryUniqueRace }));
}

/** GET of one record by reference. */
async function getRecord<T extends RecordTable, Out, W extends Workspace>(store: AnyRecordStore<T, W>, orgId: string, ref: string): Promise<Out> {
  const reader = store.pipeline.reader;
  const row = await store.repo.findByRef(reader, orgId, ref);
  if (!row) throw new NotFoundError(store.name, ref);
  return (await store.def.present(store.deps, reader, orgId, [row]))[0] as Out;
}

/**
 * The external_reference_id a path names: itself, or for a service id of this kind that no record uses
 * as its reference, that record's (GET and PUT take the id as DELETE does). No read unless the path has
 * this kind's id prefix.
 */
async function refOfPath<T extends RecordTable, W extends Workspace>(store: AnyRecordStore<T, W>, orgId: string, refOrId: string): Promise<string> {
  if (!refOrId.startsWith(store.idPrefix)) return refOrId;
  const reader = store.pipeline.reader;
  if (await store.repo.findByRef(reader, orgId, refOrId)) return refOrId;
  return (await store.repo.findById(reader, orgId, refOrId))?.external_reference_id ?? refOrId;
}

/** A batch's workspace: opened, then the kind's reads of everything its items name. */
async function openBatchWorkspace<T extends RecordTable, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  orgId: string,
  items: BatchPrefetchItem[],
): Promise<W> {
  const ws = openWorkspace(store, orgId);
  await store.def.workspace?.prefetch?.(tx, ws, items);
  return ws;
}

/** The kind's steps as the batch runner takes them (docs/api.md, "Batches"): items answer the service id only. */
function recordBatchResource<T extends RecordTable, Create, Update, W extends Workspace>(store: AnyRecordStore<T, W>): BatchResource<Create, Update, W> {
  const { def } = store;
  const resource: BatchResource<Create, Update, W> = {
    dataKey: RECORD_KINDS[def.table].noun,
    operations: def.batchOperations,
    createSchema: def.createSchema,
    updateSchema: def.updateSchema,
    pipeline: store.pipeline,
    analyticsRun: def.analyticsRun,
    create: async (tx, changes, ws, orgId, data) => ({ id: (await createRecord(store, tx, changes, ws, orgId, data as { external_reference_id: string })).id }),
    update: async (tx, changes, ws, orgId, ref, data) => ({ id: (await updateRecord(store, tx, changes, ws, orgId, ref, data as object)).id }),
    upsert: async (tx, changes, ws, orgId, ref, data) => ({ id: (await upsertRecord(store, tx, changes, ws, orgId, ref, data as object)).id }),
    delete: (tx, changes, ws, orgId, ref) => deleteRecord(store, tx, changes, ws, orgId, ref),
    problems: (tx, ws, orgId, data, ref) => bodyProblems(store, tx, ws, orgId, [], data, ref),
  };
  if (def.workspace) resource.workspace = (tx, orgId, items) => openBatchWorkspace(store, tx, orgId, items);
  return resource;
}

/** A single create; a deferred workspace's insert at its flush may meet a concurrent create of the same reference (the same 409). */
async function createOne<T extends RecordTable, Create extends { external_reference_id: string }, Out, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  orgId: string,
  input: Create,
): Promise<Out> {
  try {
    return await writeOne<T, Out, W>(store, orgId, (tx, changes, ws) => createRecord(store, tx, changes, ws, orgId, input));
  } catch (err) {
    if (isUniqueViolation(err)) throw ConflictError.duplicate(store.name, input.external_reference_id);
    throw err;
  }
}

/** A record kind's service calls, each a named function over the kind's store (record-steps.ts). */
export interface RecordLifecycle<T extends RecordTable, Create, Update, Out, W extends Workspace, D> {
  store: RecordStore<T, Create, Update, Out, W, D>;
  /** The write steps, each run inside a unit of work of the pipeline (its transaction, change set and workspace). */
  steps: {
    update(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string, input: Update): Promise<RowOf<T>>;
  };
  /** A single write's body that failed its schema, answered with every other problem too (docs/api.md, "Errors"). */
  withBodyProblems(orgId: string, invalid: ValidationError, body: unknown, ref: string | null): Promise<ValidationError>;
  refOf(orgId: string, refOrId: string): Promise<string>;
  get(orgId: string, ref: string): Promise<Out>;
  create(orgId: string, input: Create): Promise<Out>;
  update(orgId: string, ref: string, input: Update): Promise<Out>;
  upsert(orgId: string, ref: string, input: Update): Promise<Out>;
  delete(orgId: string, refOrId: string): Promise<{ id: string }>;
  /** The batch endpoint (and an import's chunks): the same steps, items answering the service id only (docs/api.md, "Batches"). */
  batch(orgId: string, items: BatchItem[], opts?: RunOptions): ReturnType<typeof runBatch>;
}

/**
 * get, create, update, upsert, delete and batch of one record kind, from its definition, with the API's
 * errors (404 by reference, 409 on duplicates, 422 for a changed external_reference_id; docs/api.md,
 * "Errors"). Each write is a step run inside the write pipeline's unit of work: a single write's own
 * transaction, or a batch item's. Single-record routes, batch items, imports, the dashboard and the CLI
 * all call these, so they cannot drift apart.
 */
export function recordLifecycle<
  T extends RecordTable,
  Create extends { external_reference_id: string },
  Update extends { external_reference_id?: string },
  Out,
  W extends Workspace,
  D,
>(def: RecordDefinition<T, Create, Update, Out, W, D>, deps: D, ctx: RecordContext): RecordLifecycle<T, Create, Update, Out, W, D> {
  const typed = recordStore(def, deps, ctx);
  const store = typed as unknown as AnyRecordStore<T, W>;
  const target: BatchTarget<Create, Update, W> = batchTarget(recordBatchResource<T, Create, Update, W>(store));
  return {
    store: typed,
    steps: { update: (tx, changes, ws, orgId, ref, input) => updateRecord(store, tx, changes, ws, orgId, ref, input) },
    withBodyProblems: async (orgId, invalid, body, ref) =>
      new ValidationError(await bodyProblems(store, ctx.pipeline.reader, openWorkspace(store, orgId), orgId, invalid.issues, body, ref)),
    refOf: (orgId, refOrId) => refOfPath(store, orgId, refOrId),
    get: (orgId, ref) => getRecord<T, Out, W>(store, orgId, ref),
    create: (orgId, input) => createOne<T, Create, Out, W>(store, orgId, input),
    update: (orgId, ref, input) => writeOne<T, Out, W>(store, orgId, (tx, changes, ws) => updateRecord(store, tx, changes, ws, orgId, ref, input)),
    upsert: (orgId, ref, input) => writeOne<T, Out, W>(store, orgId, (tx, changes, ws) => upsertRecord(store, tx, changes, ws, orgId, ref, input), true),
    delete: (orgId, refOrId) =>
      store.pipeline.write(orgId, (tx, changes, ws: W) => deleteRecord(store, tx, changes, ws, orgId, refOrId), writeOptions(store, orgId)),
    batch: (orgId, items, opts = {}) => runBatch(target, orgId, items, opts),
  };
}

/** The options of a single write of the kind: its analytics run, its workspace. */
function writeOptions<T extends RecordTable, W extends Workspace>(store: AnyRecordStore<T, W>, orgId: string) {
  const opts = { analyticsRun: store.def.analyticsRun };
  return store.def.workspace ? Object.assign(opts, { workspace: () => openWorkspace(store, orgId) }) : opts;
}
