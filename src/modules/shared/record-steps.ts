import type { Executor } from '../../lib/db/index.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../lib/db/errors.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { ConflictError, NotFoundError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { RECORD_KINDS, type RecordIdPrefix, type RecordName } from '../../domain/records.js';
import { tenantRecords, type RecordTable, type RowOf } from './tenant-records.repo.js';
import { assertSameReference, changedFields } from './records.js';
import { allProblems, blankReferenceIssues } from './records.js';
import { type DeleteGuard, type RecordContext, type RecordDefinition, type RecordRows } from './record-kind.js';
import { IMMEDIATE, type ChangeSet, type Presenter, type RecordChange, type Workspace, type WritePipeline } from './write-pipeline.js';

/**
 * A record kind's definition bound to what it runs over: the first argument of every write step below.
 * Built once per service (recordStore), never per write.
 */
export interface RecordStore<T extends RecordTable, Create, Update, Out, W extends Workspace, D> {
  def: RecordDefinition<T, Create, Update, Out, W, D>;
  deps: D;
  pipeline: WritePipeline;
  clock: Clock;
  deleteGuard: DeleteGuard | undefined;
  repo: ReturnType<typeof tenantRecords<T>>;
  rows: RecordRows<T, W>;
  /** The kind's names (src/domain/records.ts): in messages, and before the `_` of its ids. */
  name: RecordName;
  idKind: RecordIdPrefix;
  idPrefix: string;
  validateCreate: ReturnType<typeof compileBodyValidator>;
  /** The kind's present with its deps: how a change's event data is built at seal. */
  presenter: Presenter;
  /** The time as stored, for the workspace (lane stats stamps). */
  now: () => string;
}

/** A store as its steps see it: Create, Update, Out and D stay typed at the service (recordLifecycle). */
export type AnyRecordStore<T extends RecordTable, W extends Workspace> = RecordStore<T, unknown, unknown, unknown, W, unknown>;

/** The rows of a kind written at once, in the unit's transaction. */
function immediateRows<T extends RecordTable>(repo: ReturnType<typeof tenantRecords<T>>): RecordRows<T, Workspace> {
  return {
    findByRef: (tx, _ws, orgId, ref) => repo.findByRef(tx, orgId, ref),
    findById: (tx, _ws, orgId, id) => repo.findById(tx, orgId, id),
    update: async (tx, _ws, orgId, id, patch) => void (await repo.update(tx, orgId, id, patch)),
    delete: async (tx, _ws, orgId, id) => void (await repo.delete(tx, orgId, id)),
  };
}

export function recordStore<T extends RecordTable, Create, Update, Out, W extends Workspace, D>(
  def: RecordDefinition<T, Create, Update, Out, W, D>,
  deps: D,
  ctx: RecordContext,
): RecordStore<T, Create, Update, Out, W, D> {
  const repo = tenantRecords(def.table);
  const { name, idPrefix: idKind } = RECORD_KINDS[def.table];
  const present = def.present;
  return {
    def,
    deps,
    pipeline: ctx.pipeline,
    clock: ctx.clock,
    deleteGuard: ctx.deleteGuard,
    repo,
    rows: def.workspace?.rows ?? (immediateRows(repo) as RecordRows<T, W>),
    name,
    idKind,
    idPrefix: `${idKind}_`,
    validateCreate: compileBodyValidator(def.createSchema),
    presenter: ((tx, orgId, rows, known) => present(deps, tx, orgId, rows as RowOf<T>[], known)) as Presenter,
    now: () => toIso(ctx.clock.now()),
  };
}

/** The workspace of one unit of work of the kind (IMMEDIATE for kinds that write at once). */
export function openWorkspace<T extends RecordTable, W extends Workspace>(store: AnyRecordStore<T, W>, orgId: string): W {
  return store.def.workspace ? store.def.workspace.open(orgId, store.now) : (IMMEDIATE as W);
}

/** A change of the unit of work; its event's data is the record's answer, built at seal (docs/events.md, "The events"). */
function changeOf<T extends RecordTable>(
  store: AnyRecordStore<T, Workspace>,
  op: 'created' | 'updated' | 'deleted',
  row: RowOf<T>,
  previous?: RowOf<T>,
  followUp = op !== 'updated' && store.def.followUpWrites,
): RecordChange {
  const change: RecordChange = { kind: store.def.table as VersionedKind, op, id: row.id, external_reference_id: row.external_reference_id };
  if (op !== 'deleted') {
    change.row = row;
    change.present = store.presenter;
  }
  if (previous) change.previous = previous;
  if (followUp) change.followUp = followUp;
  return change;
}

/** Every problem of a body beside its schema's (a body that failed its schema; `ref`: the record it updates). */
export async function bodyProblems<T extends RecordTable, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  ws: W,
  orgId: string,
  schemaIssues: readonly ValidationIssue[],
  body: unknown,
  ref: string | null,
): Promise<ValidationIssue[]> {
  const row = ref === null ? null : ((await store.rows.findByRef(tx, ws, orgId, ref)) ?? null);
  const sentRef = typeof body === 'object' && body !== null ? (body as { external_reference_id?: unknown }).external_reference_id : undefined;
  const kindProblems = (await store.def.problems?.(store.deps, tx, orgId, body, row)) ?? [];
  return allProblems(schemaIssues, [...(row === null ? blankReferenceIssues(sentRef ?? ref) : []), ...kindProblems]);
}

/** The create rules: a new row with a new id, built and stored by the kind's insert. */
async function insertRecord<T extends RecordTable, Create extends { external_reference_id: string }, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  input: Create,
): Promise<RowOf<T>> {
  const { def, deps } = store;
  const blank = blankReferenceIssues(input.external_reference_id);
  if (blank.length > 0) throw new ValidationError([...blank, ...((await def.problems?.(deps, tx, orgId, input, null)) ?? [])]);
  const now = store.now();
  const base = { id: newId(store.idKind), org_id: orgId, external_reference_id: input.external_reference_id, created_at: now, updated_at: now };
  const row = await def.insert(deps, tx, input, base, changes, ws);
  changes.record(changeOf(store, 'created', row), (await def.afterSave?.(deps, tx, orgId, row, null, ws)) ?? []);
  return row;
}

/** Writes what changed; updated_at moves only when something did, so updated_since stays honest. */
async function applyUpdate<T extends RecordTable, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  row: RowOf<T>,
  input: unknown,
): Promise<RowOf<T>> {
  const { def, deps } = store;
  const { patch, touched, followUp } = await def.updateColumns(deps, tx, orgId, row, input, changes, ws);
  const changed = changedFields(row, patch);
  if (!changed && !touched) return row;
  const updatedAt = store.now();
  await store.rows.update(tx, ws, orgId, row.id, Object.assign({}, changed, { updated_at: updatedAt }) as Partial<RowOf<T>>);
  const updated: RowOf<T> = Object.assign({}, row, changed, { updated_at: updatedAt });
  changes.record(changeOf(store, 'updated', updated, row, followUp === true), (await def.afterSave?.(deps, tx, orgId, updated, row, ws)) ?? []);
  return updated;
}

/** The create step: 409 when the reference exists. */
export async function createRecord<T extends RecordTable, Create extends { external_reference_id: string }, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  input: Create,
): Promise<RowOf<T>> {
  // Known absent in this unit (a deferred workspace writes later: its insert would not fail here).
  if (store.def.workspace && (await store.rows.findByRef(tx, ws, orgId, input.external_reference_id))) {
    throw ConflictError.duplicate(store.name, input.external_reference_id);
  }
  try {
    return await insertRecord(store, tx, changes, ws, orgId, input);
  } catch (err) {
    if (isUniqueViolation(err)) throw ConflictError.duplicate(store.name, input.external_reference_id);
    throw err;
  }
}

/** The update step: 404 when the reference is unknown, 422 when the body names another reference. */
export async function updateRecord<T extends RecordTable, Update extends { external_reference_id?: string }, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  ref: string,
  input: Update,
): Promise<RowOf<T>> {
  assertSameReference(ref, input.external_reference_id);
  const row = await store.rows.findByRef(tx, ws, orgId, ref);
  if (!row) throw new NotFoundError(store.name, ref);
  return applyUpdate(store, tx, changes, ws, orgId, row, input);
}

/**
 * The upsert step: creates the record when absent (the create rules apply), otherwise updates the fields
 * sent. A unique violation here is a concurrent upsert's insert: it reaches the pipeline, which runs this again.
 */
export async function upsertRecord<T extends RecordTable, Update extends { external_reference_id?: string }, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  ref: string,
  input: Update,
): Promise<RowOf<T>> {
  assertSameReference(ref, input.external_reference_id);
  const found = await store.rows.findByRef(tx, ws, orgId, ref);
  if (found) return applyUpdate(store, tx, changes, ws, orgId, found, input);
  // The body spread last (its own reference, if any, is `ref`: checked above): an own `__proto__` key
  // stays a plain key, where Object.assign would make it the copy's prototype.
  const candidate = { external_reference_id: ref, ...input };
  const issues = store.validateCreate(candidate, ['body']);
  if (issues) throw new ValidationError(await bodyProblems(store, tx, ws, orgId, issues, candidate, null));
  return insertRecord(store, tx, changes, ws, orgId, candidate as { external_reference_id: string });
}

/** The delete step; `refOrId` is the external reference id or the service id (published clients delete by id). */
export async function deleteRecord<T extends RecordTable, W extends Workspace>(
  store: AnyRecordStore<T, W>,
  tx: Executor,
  changes: ChangeSet,
  ws: W,
  orgId: string,
  refOrId: string,
): Promise<{ id: string }> {
  const { def, deps, rows } = store;
  const row = (await rows.findByRef(tx, ws, orgId, refOrId)) ?? (refOrId.startsWith(store.idPrefix) ? await rows.findById(tx, ws, orgId, refOrId) : undefined);
  if (!row) throw new NotFoundError(store.name, refOrId);
  await store.deleteGuard?.(tx, orgId, row);
  await def.beforeDelete?.(deps, tx, orgId, row, changes);
  const lanes = (await def.lanesOfDeleted?.(deps, tx, orgId, row, ws)) ?? [];
  try {
    await rows.delete(tx, ws, orgId, row.id);
  } catch (err) {
    // A reference created concurrently, after the guard looked: the database still refuses.
    if (isForeignKeyViolation(err)) throw new ConflictError(`${store.name} '${refOrId}' is still referenced by other records`);
    throw err;
  }
  changes.record(changeOf(store, 'deleted', row), lanes);
  return { id: row.id };
}
