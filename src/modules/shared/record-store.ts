import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../lib/db/errors.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { ConflictError, NotFoundError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { LaneKey } from '../../domain/lane.js';
import { tenantRecords, type RecordTable, type RowOf } from './tenant-records.repo.js';
import { batchRunner, type BatchOperation, type BatchPrefetchItem } from './batch.js';
import { assertSameReference, changedFields } from './records.js';
import { IMMEDIATE, type ChangeSet, type Presenter, type RecordChange, type Workspace, type WritePipeline } from './write-pipeline.js';

/** The columns every new record row starts with. */
export interface NewRecordBase {
  id: string;
  org_id: string;
  external_reference_id: string;
  created_at: string;
  updated_at: string;
}

/** What the app wires into a record service from other domains (e.g. loads refusing deletes). */
export interface ServiceHooks {
  beforeDelete?: (tx: Executor, orgId: string, row: { id: string; external_reference_id: string }) => Promise<void>;
}

/**
 * How a record kind's write steps find, change and delete its rows within a unit of work: at once in the
 * transaction (the default), or through the unit's workspace (loads: held there, written set-based).
 */
export interface RecordRows<T extends RecordTable, W extends Workspace> {
  findByRef(tx: Executor, ws: W, orgId: string, ref: string): Promise<RowOf<T> | undefined>;
  findById(tx: Executor, ws: W, orgId: string, id: string): Promise<RowOf<T> | undefined>;
  update(tx: Executor, ws: W, orgId: string, id: string, patch: Partial<RowOf<T>>): Promise<void>;
  delete(tx: Executor, ws: W, orgId: string, id: string): Promise<void>;
}

/** The rows of a kind written at once, in the unit's transaction. */
function immediateRows<T extends RecordTable>(repo: ReturnType<typeof tenantRecords<T>>): RecordRows<T, Workspace> {
  return {
    findByRef: (tx, _ws, orgId, ref) => repo.findByRef(tx, orgId, ref),
    findById: (tx, _ws, orgId, id) => repo.findById(tx, orgId, id),
    update: async (tx, _ws, orgId, id, patch) => void (await repo.update(tx, orgId, id, patch)),
    delete: async (tx, _ws, orgId, id) => void (await repo.delete(tx, orgId, id)),
  };
}

export interface RecordLifecycleOptions<T extends RecordTable, Create, Update, Out, W extends Workspace = Workspace> {
  pipeline: WritePipeline;
  /** The table; its records' counter (src/lib/db/versions.ts) has the same name. */
  table: T;
  createSchema: TSchema;
  updateSchema: TSchema;
  /** The operations the batch endpoint takes. */
  batchOperations: readonly BatchOperation[];
  /** Counts as a lane analytics run (load writes; docs/api.md, "Lane history and carrier recommendations"). */
  analyticsRun?: boolean;
  clock: Clock;
  /** What the kind's write steps share within a unit of work (default: nothing; rows written at once). */
  workspace?: { open(orgId: string): W; rows: RecordRows<T, W>; prefetch?(tx: Executor, ws: W, items: BatchPrefetchItem[]): Promise<void> };
  /** Builds and inserts a new row (rules of create) from `base`. */
  insert(tx: Executor, input: Create, base: NewRecordBase, changes: ChangeSet, ws: W): Promise<RowOf<T>>;
  /**
   * The column values an update sets (unchanged ones are dropped later), after writing anything the
   * row carries in other tables; `touched` says such a write happened, so updated_at moves.
   */
  updateColumns(
    tx: Executor,
    orgId: string,
    row: RowOf<T>,
    input: Update,
    changes: ChangeSet,
    ws: W,
  ): Promise<{ patch: Partial<RowOf<T>>; touched?: boolean; followUp?: boolean }>;
  /** Creates and deletes of this kind are followed up after commit (loads: load.recommendations_changed). */
  followUpWrites?: boolean;
  /** The response records for rows (loading what they carry, such as contacts). */
  present(tx: Executor, orgId: string, rows: RowOf<T>[]): Promise<Out[]>;
  /** After a row was inserted (`previous` null) or changed, in the same transaction: the lanes it moved. */
  afterSave?(tx: Executor, orgId: string, row: RowOf<T>, previous: RowOf<T> | null, ws: W): Promise<LaneKey[]>;
  /** Refuses a delete (409) while other records still use this one, or keeps counters in step. */
  beforeDelete?(tx: Executor, orgId: string, row: RowOf<T>, changes: ChangeSet): Promise<void>;
  /** Before a row is deleted, in the same transaction: the lanes its deletion moves. */
  lanesOfDeleted?(tx: Executor, orgId: string, row: RowOf<T>, ws: W): Promise<LaneKey[]>;
  /**
   * The checks of a body beyond its schema (those that need the database, geocoding), run on a
   * body that failed its schema (types unchecked), so that one 422 lists every problem. `row`: the
   * record an update changes, null on create.
   */
  problems?(tx: Executor, orgId: string, body: unknown, row: RowOf<T> | null): Promise<ValidationIssue[]>;
}

/** An external_reference_id of only white space (docs/api.md, "Errors") names nothing a caller could tell apart. */
export function blankReferenceIssues(ref: unknown): ValidationIssue[] {
  return typeof ref === 'string' && ref.length > 0 && ref.trim() === ''
    ? [{ type: 'value_error', loc: ['body', 'external_reference_id'], msg: 'Value error, external_reference_id must not be only white space' }]
    : [];
}

/** The schema's problems, then the other checks' (one entry per place: a field the schema refused is not checked again). */
export function allProblems(schemaIssues: readonly ValidationIssue[], others: readonly ValidationIssue[]): ValidationIssue[] {
  const refused = new Set(schemaIssues.map((i) => JSON.stringify(i.loc)));
  return [...schemaIssues, ...others.filter((i) => !refused.has(JSON.stringify(i.loc)))];
}

/**
 * get, create, update, upsert and delete of one record kind, with the API's errors (404 by reference,
 * 409 on duplicates, 422 for a changed external_reference_id; docs/api.md, "Errors"). Each write is a
 * step run inside the write pipeline's unit of work: a single write's own transaction, or a batch
 * item's. Single-record routes, batch items, the dashboard and the CLI all call these, so they cannot
 * drift apart.
 */
export function recordLifecycle<
  T extends RecordTable,
  Create extends { external_reference_id: string },
  Update extends { external_reference_id?: string },
  Out,
  W extends Workspace = Workspace,
>(o: RecordLifecycleOptions<T, Create, Update, Out, W>) {
  const repo = tenantRecords(o.table);
  const rows: RecordRows<T, W> = o.workspace?.rows ?? (immediateRows(repo) as RecordRows<T, W>);
  const open = (orgId: string): W => o.workspace?.open(orgId) ?? (IMMEDIATE as W);
  // The kind's names (src/domain/records.ts): in messages, before the `_` of its ids, the batch data object's key.
  const { name: kind, idPrefix: idKind, noun: dataKey } = RECORD_KINDS[o.table];
  const idPrefix = `${idKind}_`;
  const validateCreate = compileBodyValidator(o.createSchema);
  const presenter = o.present as unknown as Presenter;
  /** A change of the unit of work; its event's data is the record's answer, built at seal (docs/events.md, "The events"). */
  const changeOf = (
    op: 'created' | 'updated' | 'deleted',
    row: RowOf<T>,
    previous?: RowOf<T>,
    followUp = op !== 'updated' && o.followUpWrites === true,
  ): RecordChange => ({
    kind: o.table as VersionedKind,
    op,
    id: row.id,
    external_reference_id: row.external_reference_id,
    ...(op === 'deleted' ? {} : { row, present: presenter }),
    ...(previous ? { previous } : {}),
    ...(followUp ? { followUp } : {}),
  });

  /** Every problem of a body beside its schema's (a body that failed its schema; `ref`: the record it updates). */
  async function bodyProblems(
    tx: Executor,
    ws: W,
    orgId: string,
    schemaIssues: readonly ValidationIssue[],
    body: unknown,
    ref: string | null,
  ): Promise<ValidationIssue[]> {
    const row = ref === null ? null : ((await rows.findByRef(tx, ws, orgId, ref)) ?? null);
    const sentRef = typeof body === 'object' && body !== null ? (body as { external_reference_id?: unknown }).external_reference_id : undefined;
    const others = [...(row === null ? blankReferenceIssues(sentRef ?? ref) : []), ...((await o.problems?.(tx, orgId, body, row)) ?? [])];
    return allProblems(schemaIssues, others);
  }

  async function insert(tx: Executor, changes: ChangeSet, ws: W, orgId: string, input: Create): Promise<RowOf<T>> {
    const blank = blankReferenceIssues(input.external_reference_id);
    if (blank.length > 0) throw new ValidationError([...blank, ...((await o.problems?.(tx, orgId, input, null)) ?? [])]);
    const now = toIso(o.clock.now());
    const row = await o.insert(
      tx,
      input,
      { id: newId(idKind), org_id: orgId, external_reference_id: input.external_reference_id, created_at: now, updated_at: now },
      changes,
      ws,
    );
    changes.record(changeOf('created', row), (await o.afterSave?.(tx, orgId, row, null, ws)) ?? []);
    return row;
  }

  /** Writes what changed; updated_at moves only when something did, so updated_since stays honest. */
  async function applyUpdate(tx: Executor, changes: ChangeSet, ws: W, orgId: string, row: RowOf<T>, input: Update): Promise<RowOf<T>> {
    const { patch, touched, followUp } = await o.updateColumns(tx, orgId, row, input, changes, ws);
    const changed = changedFields(row, patch);
    if (!changed && !touched) return row;
    const updatedAt = toIso(o.clock.now());
    await rows.update(tx, ws, orgId, row.id, Object.assign({}, changed, { updated_at: updatedAt }) as Partial<RowOf<T>>);
    const updated: RowOf<T> = Object.assign({}, row, changed, { updated_at: updatedAt });
    changes.record(changeOf('updated', updated, row, followUp === true), (await o.afterSave?.(tx, orgId, updated, row, ws)) ?? []);
    return updated;
  }

  async function existing(tx: Executor, ws: W, orgId: string, ref: string): Promise<RowOf<T>> {
    const row = await rows.findByRef(tx, ws, orgId, ref);
    if (!row) throw new NotFoundError(kind, ref);
    return row;
  }

  /** The writes, each run inside a unit of work of the pipeline (its transaction, change set and workspace). */
  const steps = {
    async create(tx: Executor, changes: ChangeSet, ws: W, orgId: string, input: Create): Promise<RowOf<T>> {
      // Known absent in this unit (a deferred workspace writes later: its insert would not fail here).
      if (o.workspace && (await rows.findByRef(tx, ws, orgId, input.external_reference_id))) throw ConflictError.duplicate(kind, input.external_reference_id);
      try {
        return await insert(tx, changes, ws, orgId, input);
      } catch (err) {
        if (isUniqueViolation(err)) throw ConflictError.duplicate(kind, input.external_reference_id);
        throw err;
      }
    },
    async update(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string, input: Update): Promise<RowOf<T>> {
      assertSameReference(ref, input.external_reference_id);
      return applyUpdate(tx, changes, ws, orgId, await existing(tx, ws, orgId, ref), input);
    },
    /**
     * Creates the record when absent (the create rules apply), otherwise updates the fields sent. A
     * unique violation here is a concurrent upsert's insert: it reaches the pipeline, which runs this again.
     */
    async upsert(tx: Executor, changes: ChangeSet, ws: W, orgId: string, ref: string, input: Update): Promise<RowOf<T>> {
      assertSameReference(ref, input.external_reference_id);
      const found = await rows.findByRef(tx, ws, orgId, ref);
      if (found) return applyUpdate(tx, changes, ws, orgId, found, input);
      // The body spread last (its own reference, if any, is `ref`: checked above): an own `__proto__` key
      // stays a plain key, where Object.assign would make it the copy's prototype.
      const candidate = { external_reference_id: ref, ...input };
      const issues = validateCreate(candidate, ['body']);
      if (issues) throw new ValidationError(await bodyProblems(tx, ws, orgId, issues, candidate, null));
      return insert(tx, changes, ws, orgId, candidate as unknown as Create);
    },
    /** `refOrId` is the external reference id or the service id (published clients delete by id). */
    async delete(tx: Executor, changes: ChangeSet, ws: W, orgId: string, refOrId: string): Promise<{ id: string }> {
      const row = (await rows.findByRef(tx, ws, orgId, refOrId)) ?? (refOrId.startsWith(idPrefix) ? await rows.findById(tx, ws, orgId, refOrId) : undefined);
      if (!row) throw new NotFoundError(kind, refOrId);
      await o.beforeDelete?.(tx, orgId, row, changes);
      const lanes = (await o.lanesOfDeleted?.(tx, orgId, row, ws)) ?? [];
      try {
        await rows.delete(tx, ws, orgId, row.id);
      } catch (err) {
        // A reference created concurrently, after beforeDelete looked: the database still refuses.
        if (isForeignKeyViolation(err)) throw new ConflictError(`${kind} '${refOrId}' is still referenced by other records`);
        throw err;
      }
      changes.record(changeOf('deleted', row), lanes);
      return { id: row.id };
    },
  };

  const presentOne = async (tx: Executor, orgId: string, row: RowOf<T>) => (await o.present(tx, orgId, [row]))[0]!;
  /** A single write's answer, which is also its event's data (seal does not build it again); read after its writes reached the transaction. */
  const answer = async (tx: Executor, changes: ChangeSet, ws: W, orgId: string, row: RowOf<T>) => {
    await ws.flush(tx);
    const out = await presentOne(tx, orgId, row);
    changes.presented(row.id, out);
    return out;
  };
  const analyticsRun = o.analyticsRun ?? false;
  const workspace = () => (o.workspace ? o.workspace.open : undefined);
  const single = <R>(orgId: string, work: (tx: Executor, changes: ChangeSet, ws: W) => Promise<R>, retryUniqueRace = false): Promise<R> => {
    const opener = workspace();
    return o.pipeline.write<R, W>(orgId, work, { analyticsRun, retryUniqueRace, ...(opener ? { workspace: () => opener(orgId) } : {}) });
  };
  const idOnly = async <R extends { id: string }>(r: Promise<R>) => ({ id: (await r).id });

  return {
    repo,
    steps,
    /** A single write's body that failed its schema, answered with every other problem too (docs/api.md, "Errors"). */
    async withBodyProblems(orgId: string, invalid: ValidationError, body: unknown, ref: string | null): Promise<ValidationError> {
      return new ValidationError(await bodyProblems(o.pipeline.reader, open(orgId), orgId, invalid.issues, body, ref));
    },
    /**
     * The external_reference_id a path names: itself, or for a service id of this kind that no record
     * uses as its reference, that record's (GET and PUT take the id as DELETE does). No read unless the
     * path has this kind's id prefix.
     */
    async refOf(orgId: string, refOrId: string): Promise<string> {
      if (!refOrId.startsWith(idPrefix)) return refOrId;
      const reader = o.pipeline.reader;
      if (await repo.findByRef(reader, orgId, refOrId)) return refOrId;
      return (await repo.findById(reader, orgId, refOrId))?.external_reference_id ?? refOrId;
    },
    async get(orgId: string, ref: string): Promise<Out> {
      const row = await repo.findByRef(o.pipeline.reader, orgId, ref);
      if (!row) throw new NotFoundError(kind, ref);
      return presentOne(o.pipeline.reader, orgId, row);
    },
    create: async (orgId: string, input: Create): Promise<Out> => {
      try {
        return await single(orgId, async (tx, changes, ws) => answer(tx, changes, ws, orgId, await steps.create(tx, changes, ws, orgId, input)));
      } catch (err) {
        // A deferred workspace inserts at its flush, after the step's own check: a concurrent create of the
        // same reference that committed in between is refused there by the unique index (the same 409).
        if (isUniqueViolation(err)) throw ConflictError.duplicate(kind, input.external_reference_id);
        throw err;
      }
    },
    update: (orgId: string, ref: string, input: Update): Promise<Out> =>
      single(orgId, async (tx, changes, ws) => answer(tx, changes, ws, orgId, await steps.update(tx, changes, ws, orgId, ref, input))),
    upsert: (orgId: string, ref: string, input: Update): Promise<Out> =>
      single(orgId, async (tx, changes, ws) => answer(tx, changes, ws, orgId, await steps.upsert(tx, changes, ws, orgId, ref, input)), true),
    delete: (orgId: string, refOrId: string): Promise<{ id: string }> => single(orgId, (tx, changes, ws) => steps.delete(tx, changes, ws, orgId, refOrId)),
    /** The batch endpoint: the same steps, items answering the service id only (docs/api.md, "Batches"). */
    batch: batchRunner<Create, Update, W>({
      dataKey,
      operations: o.batchOperations,
      createSchema: o.createSchema,
      updateSchema: o.updateSchema,
      pipeline: o.pipeline,
      analyticsRun,
      ...(o.workspace
        ? {
            workspace: async (tx: Executor, orgId: string, items: BatchPrefetchItem[]) => {
              const ws = o.workspace!.open(orgId);
              await o.workspace!.prefetch?.(tx, ws, items);
              return ws;
            },
          }
        : {}),
      create: (tx, changes, ws, orgId, data) => idOnly(steps.create(tx, changes, ws, orgId, data)),
      update: (tx, changes, ws, orgId, ref, data) => idOnly(steps.update(tx, changes, ws, orgId, ref, data)),
      upsert: (tx, changes, ws, orgId, ref, data) => idOnly(steps.upsert(tx, changes, ws, orgId, ref, data)),
      delete: (tx, changes, ws, orgId, ref) => steps.delete(tx, changes, ws, orgId, ref),
      problems: (tx, ws, orgId, data, ref) => bodyProblems(tx, ws, orgId, [], data, ref),
    }),
  };
}
