import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import type { ValidationIssue } from '../../lib/http/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { LaneKey } from '../../domain/lane.js';
import { RECORD_KINDS, type RecordNoun } from '../../domain/records.js';
import type { RecordTable, RowOf } from './tenant-records.repo.js';
import type { BatchOperation, BatchPrefetchItem } from './batch.js';
import type { ChangeSet, Workspace, WritePipeline } from './write-pipeline.js';

/** The columns every new record row starts with. */
export interface NewRecordBase {
  id: string;
  org_id: string;
  external_reference_id: string;
  created_at: string;
  updated_at: string;
}

/**
 * A reference a record holds to a record of another kind (a load's customer, carrier, stop locations):
 * the body field that names it by external_reference_id, and whether the other record's delete is
 * refused (409) while this kind still uses it (docs/api.md, "Deleting").
 */
export interface RecordReference {
  /** The kind referred to. */
  kind: 'customers' | 'carriers' | 'locations';
  /** The body field naming it (a stop's field for locations: `stops[i].location_external_reference_id`). */
  field: string;
  /** How the referring records use it, in the 409 (`used as their carrier by 2 loads`). */
  usedAs: string;
  /** The referred record cannot be deleted while a record of this kind uses it. */
  refusesDelete: boolean;
}

/** Refuses a delete (409) while records of other kinds still use the row: derived from their declared references. */
export type DeleteGuard = (tx: Executor, orgId: string, row: { id: string; external_reference_id: string }) => Promise<void>;

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

/** What a kind's write steps share within a unit of work, when they do not write at once (loads). */
export interface KindWorkspace<T extends RecordTable, W extends Workspace> {
  open(orgId: string, now: () => string): W;
  rows: RecordRows<T, W>;
  /** A batch's reads, at its start, of everything its items name. */
  prefetch?(tx: Executor, ws: W, items: BatchPrefetchItem[]): Promise<void>;
}

/** What an update sets: the columns (unchanged ones are dropped later), and what else it did. */
export interface UpdateColumns<T extends RecordTable> {
  patch: Partial<RowOf<T>>;
  /** A write to another table the row carries (contacts, stops) happened: updated_at moves. */
  touched?: boolean;
  /** The update may move recommendations (a load's lane, status, equipment or carrier): followed up after commit. */
  followUp?: boolean;
}

/**
 * One record kind, as data: its table, schemas, batch operations, references and events, and the few
 * behaviours that differ per kind. The generic lifecycle (record-store.ts, recordLifecycle) takes it
 * with the kind's dependencies `D` (given to every behaviour first) and gives the kind its get, create,
 * update, upsert, delete and batch (docs/architecture.md, "The write pipeline (`src/modules/shared/write-pipeline.ts`)").
 */
export interface RecordDefinition<T extends RecordTable, Create, Update, Out, W extends Workspace = Workspace, D = void> {
  /** The table; its records' counter (src/lib/db/versions.ts) and its names (src/domain/records.ts) go by it. */
  readonly table: T;
  readonly createSchema: TSchema;
  readonly updateSchema: TSchema;
  /** The operations the batch endpoint takes. */
  readonly batchOperations: readonly BatchOperation[];
  /** The event types its writes emit (docs/events.md, "The events"); the outbox names them from the kind's noun. */
  readonly events: readonly `${RecordNoun}.${string}`[];
  /** The records of other kinds its rows name. */
  readonly references: readonly RecordReference[];
  /** Its writes count as a lane analytics run (docs/api.md, "Lane history and carrier recommendations"). */
  readonly analyticsRun: boolean;
  /** Its creates and deletes are followed up after commit (loads: load.recommendations_changed). */
  readonly followUpWrites: boolean;
  /** What its steps share within a unit of work (default: nothing; rows written at once). */
  readonly workspace?: KindWorkspace<T, W>;

  /** Builds a new row (the rules of create) from `base` and stores it, with what it carries in other tables. */
  insert(deps: D, tx: Executor, input: Create, base: NewRecordBase, changes: ChangeSet, ws: W): Promise<RowOf<T>>;
  /** The column values an update sets, after writing anything the row carries in other tables. */
  updateColumns(deps: D, tx: Executor, orgId: string, row: RowOf<T>, input: Update, changes: ChangeSet, ws: W): Promise<UpdateColumns<T>>;
  /** The response records of rows (loading what they carry, such as contacts); `known`: parts a write holds (RecordChange.parts). */
  present(deps: D, tx: Executor, orgId: string, rows: RowOf<T>[], known?: ReadonlyMap<string, unknown>): Promise<Out[]>;
  /** After a row was inserted (`previous` null) or changed, in the same transaction: the lanes it moved. */
  afterSave?(deps: D, tx: Executor, orgId: string, row: RowOf<T>, previous: RowOf<T> | null, ws: W): Promise<LaneKey[]>;
  /** Before a row is deleted (after the delete guard): keeps counters in step. */
  beforeDelete?(deps: D, tx: Executor, orgId: string, row: RowOf<T>, changes: ChangeSet): Promise<void>;
  /** Before a row is deleted, in the same transaction: the lanes its deletion moves. */
  lanesOfDeleted?(deps: D, tx: Executor, orgId: string, row: RowOf<T>, ws: W): Promise<LaneKey[]>;
  /**
   * The checks of a body beyond its schema (those that need the database, geocoding), run on a body
   * that failed its schema (types unchecked), so that one 422 lists every problem. `row`: the record an
   * update changes, null on create.
   */
  problems?(deps: D, tx: Executor, orgId: string, body: unknown, row: RowOf<T> | null): Promise<ValidationIssue[]>;
}

/** What every record service runs over: the write pipeline, the clock, and the guard of its deletes (none when nothing refers to it). */
export interface RecordContext {
  pipeline: WritePipeline;
  clock: Clock;
  deleteGuard?: DeleteGuard;
}

export { allProblems, blankReferenceIssues } from './records.js';

/** The tables of the kinds whose rows name no other record: customers, carriers, locations. */
export type SimpleRecordTable = 'customers' | 'carriers' | 'locations';

/**
 * The data every simple kind declares alike: create, update and upsert in a batch (a delete is one
 * request), `<noun>.created|updated|deleted` events, no references, no analytics run, no follow-up.
 */
export function simpleKindData<T extends SimpleRecordTable>(table: T) {
  const noun = RECORD_KINDS[table].noun;
  return {
    table,
    batchOperations: ['create', 'update', 'upsert'] as const,
    events: [`${noun}.created`, `${noun}.updated`, `${noun}.deleted`] as const,
    references: [] as const,
    analyticsRun: false,
    followUpWrites: false,
  };
}
