import type { Executor } from '../../lib/db/index.js';
import type { LoadsTable } from '../../lib/db/types.js';
import { locksRowsForUpdate } from '../../lib/db/locks.js';
import type { LaneKey } from '../../domain/lane.js';
import type { KindWorkspace, RecordDefinition } from '../shared/record-kind.js';
import type { ChangeSet } from '../shared/write-pipeline.js';
import { presentLoadDocuments, presentLoads, type KnownParts } from './loads.present.js';
import { countStatusChange } from './loads.repo.js';
import { loadDocumentsByIds } from './loads.documents.repo.js';
import { LoadWorkspace } from './loads.workspace.js';
import { LoadCreate, LoadUpdate, type Load } from './loads.schema.js';
import { insertLoad, loadUpdateColumns, type LoadDeps } from './loads.write.js';
import { loadBodyProblems } from './loads.checks.js';
import { LOAD_REFERENCES } from './references.js';

export type { LoadDeps } from './loads.write.js';

/**
 * Answers of stored loads. On PostgreSQL several at once (a batch's events, built at seal) come from
 * the one-statement documents instead of a statement per kind of part.
 */
export async function presentLoadRows(deps: LoadDeps, tx: Executor, orgId: string, rows: LoadsTable[], known?: ReadonlyMap<string, unknown>): Promise<Load[]> {
  const held = known as ReadonlyMap<string, KnownParts> | undefined;
  // Loads whose writes hold their parts (full upserts, the usual TMS push) read only reps and the
  // market max_buy_rate's equipment, on either engine; otherwise PostgreSQL reads a batch's loads as
  // documents in one statement.
  if (!deps.oneStatementReads || rows.length < 2 || (held && rows.every((r) => held.has(r.id)))) return presentLoads(deps.lanes, tx, orgId, rows, held);
  const docs = await loadDocumentsByIds(
    tx,
    orgId,
    rows.map((r) => r.id),
  );
  const byId = new Map((await presentLoadDocuments(deps.lanes, tx, orgId, docs)).map((l) => [l.id, l]));
  // A load deleted later in the same unit of work is no longer there to read: presented from its row.
  const gone = rows.filter((r) => !byId.has(r.id));
  if (gone.length > 0) for (const l of await presentLoads(deps.lanes, tx, orgId, gone)) byId.set(l.id, l);
  return rows.map((r) => byId.get(r.id)!);
}

/**
 * A unit of work's loads are held in its workspace and written set-based when it ends; a batch reads
 * its loads and everything they name at once (and locks its loads on PostgreSQL).
 */
const LOAD_WORKSPACE: KindWorkspace<'loads', LoadWorkspace> = {
  open: (orgId, now) => new LoadWorkspace(orgId, now),
  rows: {
    findByRef: (tx, ws, _orgId, ref) => ws.find(tx, ref),
    findById: (tx, ws, _orgId, id) => ws.findById(tx, id),
    update: async (_tx, ws, _orgId, id, patch) => ws.update(id, patch),
    delete: async (_tx, ws, _orgId, id) => ws.remove(id),
  },
  prefetch: (tx, ws, items) => ws.prefetch(tx, items, locksRowsForUpdate(tx)),
};

/** The lane a deleted load's history row was on: its deletion moves that lane. */
async function lanesOfDeletedLoad(_deps: LoadDeps, tx: Executor, _orgId: string, row: LoadsTable, ws: LoadWorkspace): Promise<LaneKey[]> {
  const lane = await ws.historyLaneOf(tx, row.id);
  return lane ? [lane] : [];
}

/** Loads (docs/api.md, "Loads"): the one kind that names others, written through its workspace. */
export const LOAD_KIND: RecordDefinition<'loads', LoadCreate, LoadUpdate, Load, LoadWorkspace, LoadDeps> = {
  table: 'loads',
  createSchema: LoadCreate,
  updateSchema: LoadUpdate,
  batchOperations: ['create', 'update', 'upsert', 'delete'],
  // load.stop_arrived and load.stop_departed are announced by tracking (src/modules/tracking); load.recommendations_changed by the follow-up.
  events: ['load.created', 'load.updated', 'load.deleted', 'load.status_changed'],
  references: LOAD_REFERENCES,
  // One analytics run per load write request, exactly one per batch
  // (docs/api.md, "Lane history and carrier recommendations").
  analyticsRun: true,
  // New and deleted loads, and updates that change a load's lane, status, equipment or carrier, are
  // followed up after commit (load.recommendations_changed).
  followUpWrites: true,
  workspace: LOAD_WORKSPACE,
  insert: insertLoad,
  updateColumns: loadUpdateColumns,
  present: presentLoadRows,
  // Lane history follows every load write in the same transaction: recommendations read their writes.
  afterSave: (_deps: LoadDeps, tx: Executor, _orgId: string, row: LoadsTable, _previous: LoadsTable | null, ws: LoadWorkspace) => ws.syncHistory(tx, row),
  beforeDelete: async (_deps: LoadDeps, _tx: Executor, _orgId: string, row: LoadsTable, changes: ChangeSet) => countStatusChange(changes, row.status, null),
  lanesOfDeleted: lanesOfDeletedLoad,
  // A body that failed its schema is also checked against the database (one 422 with everything:
  // docs/api.md, "Errors").
  problems: (_deps: LoadDeps, tx: Executor, orgId: string, body: unknown) => loadBodyProblems(tx, orgId, body),
};
