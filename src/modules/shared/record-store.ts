import type { TSchema } from '@sinclair/typebox';
import type { DataStore, Executor } from '../../lib/db/index.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction, retryOnUniqueRace } from '../../lib/db/tx.js';
import { prepared } from '../../lib/db/prepared.js';
import type { Database } from '../../lib/db/types.js';
import { ConflictError, NotFoundError, ValidationError, type ResourceKind } from '../../lib/http/errors.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { assertSameReference, changedFields } from './records.js';

/** Tables of the records callers address by external_reference_id. */
export type RecordTable = 'customers' | 'carriers' | 'locations' | 'loads';

type RowOf<T extends RecordTable> = Database[T];

/**
 * Point reads and writes every tenant record table shares. Every statement filters by org_id: a
 * record of another organization is as absent as one that never existed.
 */
export function tenantRecords<T extends RecordTable>(table: T) {
  // Kysely cannot type a query over a table chosen by a type parameter; the casts stay in here.
  const t = table as 'customers';
  // The read behind every GET of one record: built and compiled once.
  const byRef = prepared<{ orgId: string; ref: string }, RowOf<T>>(
    (db, p) => db.selectFrom(t).selectAll().where('org_id', '=', p('orgId')).where('external_reference_id', '=', p('ref')) as never,
  );
  return {
    findByRef: async (tx: Executor, orgId: string, ref: string): Promise<RowOf<T> | undefined> => (await byRef(tx, { orgId, ref }))[0],
    findById: (tx: Executor, orgId: string, id: string) =>
      tx.selectFrom(t).selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst() as Promise<RowOf<T> | undefined>,
    insert: (tx: Executor, row: RowOf<T>) => tx.insertInto(t).values(row as never).execute(),
    update: (tx: Executor, orgId: string, id: string, patch: Partial<RowOf<T>>) =>
      tx.updateTable(t).set(patch as never).where('org_id', '=', orgId).where('id', '=', id).execute(),
    delete: (tx: Executor, orgId: string, id: string) => tx.deleteFrom(t).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  };
}

/** What the app wires into a record service from other domains (e.g. loads refusing deletes). */
export interface ServiceHooks<Row = { id: string; external_reference_id: string }> {
  beforeDelete?: (tx: Executor, orgId: string, row: { id: string; external_reference_id: string }) => Promise<void>;
  /** After a row was inserted or changed, in the same transaction (e.g. keeping lane history in step). */
  afterSave?: (tx: Executor, orgId: string, row: Row) => Promise<void>;
}

export interface RecordLifecycleOptions<T extends RecordTable, Create, Update, Out> {
  store: DataStore;
  table: T;
  kind: ResourceKind;
  /** Prefix of the service ids of this kind, so DELETE can take an id as well as a reference. */
  idPrefix: string;
  createSchema: TSchema;
  /** Builds and inserts a new row (rules of create). */
  insert(tx: Executor, orgId: string, input: Create): Promise<RowOf<T>>;
  /**
   * The column values an update sets (unchanged ones are dropped here), after writing anything the
   * row carries in other tables; `touched` says such a write happened, so updated_at moves.
   */
  updateColumns(tx: Executor, orgId: string, row: RowOf<T>, input: Update): Promise<{ patch: Partial<RowOf<T>>; touched?: boolean }>;
  clock: Clock;
  /** The response records for rows (loading what they carry, such as contacts). */
  present(tx: Executor, orgId: string, rows: RowOf<T>[]): Promise<Out[]>;
  /** Refuses a delete (409) while other records still use this one. */
  beforeDelete?(tx: Executor, orgId: string, row: RowOf<T>): Promise<void>;
  /** After a row was inserted or changed, in the same transaction. */
  afterSave?(tx: Executor, orgId: string, row: RowOf<T>): Promise<void>;
}

/**
 * get, create, update, upsert and delete of one record kind, each in its own transaction, with the
 * D1 errors (404 by reference, 409 on duplicates, 422 for a changed external_reference_id). The
 * single-record routes and the batch endpoint both call these, so they cannot drift apart.
 */
export function recordLifecycle<T extends RecordTable, Create extends { external_reference_id: string }, Update extends { external_reference_id?: string }, Out>(
  o: RecordLifecycleOptions<T, Create, Update, Out>,
) {
  const repo = tenantRecords(o.table);
  const validateCreate = compileBodyValidator(o.createSchema);
  /** Writes what changed; updated_at moves only when something did, so updated_since stays honest. */
  async function applyUpdate(tx: Executor, orgId: string, row: RowOf<T>, input: Update): Promise<RowOf<T>> {
    const { patch, touched } = await o.updateColumns(tx, orgId, row, input);
    const changed = changedFields(row, patch);
    if (!changed && !touched) return row;
    const updatedAt = toIso(o.clock.now());
    await repo.update(tx, orgId, row.id, { ...changed, updated_at: updatedAt } as Partial<RowOf<T>>);
    const updated = { ...row, ...changed, updated_at: updatedAt };
    await o.afterSave?.(tx, orgId, updated);
    return updated;
  }

  async function insert(tx: Executor, orgId: string, input: Create): Promise<RowOf<T>> {
    const row = await o.insert(tx, orgId, input);
    await o.afterSave?.(tx, orgId, row);
    return row;
  }

  const presentOne = async (tx: Executor, orgId: string, row: RowOf<T>) => (await o.present(tx, orgId, [row]))[0]!;
  const idOf = async (_tx: Executor, _orgId: string, row: RowOf<T>) => ({ id: row.id });
  type Finish<R> = (tx: Executor, orgId: string, row: RowOf<T>) => Promise<R>;

  async function createThen<R>(orgId: string, input: Create, finish: Finish<R>, outer?: Executor): Promise<R> {
    try {
      return await inTransaction(o.store, async (tx) => finish(tx, orgId, await insert(tx, orgId, input)), outer);
    } catch (err) {
      if (isUniqueViolation(err)) throw ConflictError.duplicate(o.kind, input.external_reference_id);
      throw err;
    }
  }

  async function updateThen<R>(orgId: string, ref: string, input: Update, finish: Finish<R>, outer?: Executor): Promise<R> {
    assertSameReference(ref, input.external_reference_id);
    return inTransaction(
      o.store,
      async (tx) => {
        const existing = await repo.findByRef(tx, orgId, ref);
        if (!existing) throw new NotFoundError(o.kind, ref);
        return finish(tx, orgId, await applyUpdate(tx, orgId, existing, input));
      },
      outer,
    );
  }

  async function upsertThen<R>(orgId: string, ref: string, input: Update, finish: Finish<R>, outer?: Executor): Promise<{ record: R; created: boolean }> {
    assertSameReference(ref, input.external_reference_id);
    return retryOnUniqueRace(() =>
      inTransaction(
        o.store,
        async (tx) => {
          const existing = await repo.findByRef(tx, orgId, ref);
          if (existing) return { record: await finish(tx, orgId, await applyUpdate(tx, orgId, existing, input)), created: false };
          const candidate = { ...input, external_reference_id: ref };
          const issues = validateCreate(candidate, ['body']);
          if (issues) throw new ValidationError(issues);
          return { record: await finish(tx, orgId, await insert(tx, orgId, candidate as unknown as Create)), created: true };
        },
        outer,
      ),
    );
  }

  async function findByRefOrId(tx: Executor, orgId: string, refOrId: string) {
    return (await repo.findByRef(tx, orgId, refOrId)) ?? (refOrId.startsWith(o.idPrefix) ? await repo.findById(tx, orgId, refOrId) : undefined);
  }

  return {
    repo,
    async get(orgId: string, ref: string): Promise<Out> {
      const row = await repo.findByRef(o.store.db, orgId, ref);
      if (!row) throw new NotFoundError(o.kind, ref);
      return presentOne(o.store.db, orgId, row);
    },

    async create(orgId: string, input: Create): Promise<Out> {
      return createThen(orgId, input, presentOne);
    },

    async update(orgId: string, ref: string, input: Update): Promise<Out> {
      return updateThen(orgId, ref, input, presentOne);
    },

    /** Creates the record when absent (the create rules apply), otherwise updates the fields sent. */
    async upsert(orgId: string, ref: string, input: Update): Promise<{ record: Out; created: boolean }> {
      return upsertThen(orgId, ref, input, presentOne);
    },

    /**
     * The same writes answering only the service id: batch items report nothing else (D6), so they
     * skip reading back and building the full record. `outer`: the batch's transaction, if it has one.
     */
    createId: (orgId: string, input: Create, outer?: Executor) => createThen(orgId, input, idOf, outer),
    updateId: (orgId: string, ref: string, input: Update, outer?: Executor) => updateThen(orgId, ref, input, idOf, outer),
    upsertId: async (orgId: string, ref: string, input: Update, outer?: Executor) => (await upsertThen(orgId, ref, input, idOf, outer)).record,

    /** `refOrId` is the external reference id or the service id (published clients delete by id). */
    async delete(orgId: string, refOrId: string, outer?: Executor): Promise<{ id: string }> {
      try {
        return await inTransaction(
          o.store,
          async (tx) => {
            const row = await findByRefOrId(tx, orgId, refOrId);
            if (!row) throw new NotFoundError(o.kind, refOrId);
            await o.beforeDelete?.(tx, orgId, row);
            await repo.delete(tx, orgId, row.id);
            return { id: row.id };
          },
          outer,
        );
      } catch (err) {
        // A reference created concurrently, after beforeDelete looked: the database still refuses.
        if (isForeignKeyViolation(err)) throw new ConflictError(`${o.kind} '${refOrId}' is still referenced by other records`);
        throw err;
      }
    },
  };
}
