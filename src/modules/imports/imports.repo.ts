import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { analyzeTables, plannedRows } from '../../lib/db/planner-stats.js';
import { bulkInsert } from '../../lib/db/bulk.js';
import { holdOrganization } from '../../lib/db/locks.js';
import type { ImportErrorsTable, ImportsTable } from '../../lib/db/types.js';

const ACTIVE = ['queued', 'running'];

export const insertImport = (db: Executor, row: ImportsTable) => db.insertInto('imports').values(row).execute();

export const importById = (db: Executor, orgId: string, id: string) =>
  db.selectFrom('imports').selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst();

/** Expires an upload still awaiting it and unchanged since `before` (a part that arrived meanwhile keeps it). */
export async function expireUpload(db: Executor, orgId: string, id: string, before: string, patch: Partial<ImportsTable>): Promise<boolean> {
  const r = await db
    .updateTable('imports')
    .set(patch)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', '=', 'awaiting_upload')
    .where('updated_at', '<', before)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Imports still awaiting their upload whose last change (creation, or a part) is older than `before`. */
export const staleUploads = (db: Executor, before: string, limit: number) =>
  db
    .selectFrom('imports')
    .select(['id', 'org_id'])
    .where('status', '=', 'awaiting_upload')
    .where('updated_at', '<', before)
    .orderBy('updated_at')
    .limit(limit)
    .execute();

/** The organization's imports awaiting their upload, counted under its row lock (PostgreSQL: two creates at once take turns). */
export async function awaitingUploads(tx: Executor, orgId: string): Promise<number> {
  await holdOrganization(tx, orgId);
  const r = await tx
    .selectFrom('imports')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('org_id', '=', orgId)
    .where('status', '=', 'awaiting_upload')
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

/** Bytes of parts the organization's unfinished imports other than `except` hold (bytes_total moves with each part kept), under its row lock. */
export async function heldUploadBytes(tx: Executor, orgId: string, except: string): Promise<number> {
  await holdOrganization(tx, orgId);
  const r = await tx
    .selectFrom('imports')
    .select((eb) => eb.fn.sum<number | string | null>('bytes_total').as('n'))
    .where('org_id', '=', orgId)
    .where('status', 'in', ['awaiting_upload', ...ACTIVE])
    .where('id', '!=', except)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export const activeImportOf = (db: Executor, orgId: string) =>
  db.selectFrom('imports').select(['id', 'status']).where('org_id', '=', orgId).where('status', 'in', ACTIVE).executeTakeFirst();

export async function pageOfImports(
  db: Executor,
  orgId: string,
  q: { status?: string | undefined; page: number; page_size: number; column: 'created_at' | 'updated_at'; direction: 'asc' | 'desc' },
) {
  let query = db.selectFrom('imports').where('org_id', '=', orgId);
  if (q.status) query = query.where('status', '=', q.status);
  const total = Number((await query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await query
    .selectAll()
    .orderBy(q.column, q.direction)
    .orderBy('id', q.direction)
    .limit(q.page_size)
    .offset((q.page - 1) * q.page_size)
    .execute();
  return { rows, total };
}

/** Moves an import from one of `from` to `patch.status` (with the rest of `patch`); false when it was in none of them. */
export async function moveImport(db: Executor, orgId: string, id: string, from: readonly string[], patch: Partial<ImportsTable>): Promise<boolean> {
  const r = await db
    .updateTable('imports')
    .set(patch)
    .where('org_id', '=', orgId)
    .where('id', '=', id)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Imports a runner may take: queued, or running with no live claim (its process died or stopped), oldest first. */
export const claimableImports = (db: Executor, now: string, limit: number) =>
  db
    .selectFrom('imports')
    .select('id')
    .where('status', 'in', ACTIVE)
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', now)]))
    .orderBy('queued_at')
    .limit(limit)
    .execute();

/**
 * Takes an import for this process: one conditional update, so of several instances exactly one wins
 * (PostgreSQL re-checks the condition on the locked row; SQLite runs one writer at a time).
 */
export const claimImport = (db: Executor, id: string, claim: string, now: string, leasedUntil: string) =>
  db
    .updateTable('imports')
    .set((eb) => ({
      claim,
      leased_until: leasedUntil,
      status: 'running',
      started_at: eb.fn.coalesce('started_at', sql.lit(now)),
      attempts: eb('attempts', '+', 1),
      updated_at: now,
    }))
    .where('id', '=', id)
    .where('status', 'in', ACTIVE)
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', now)]))
    .returningAll()
    .executeTakeFirst();

/** Keeps the claim (false: it was lost, or the import was cancelled). */
export async function extendImportLease(db: Executor, id: string, claim: string, leasedUntil: string): Promise<boolean> {
  const r = await db
    .updateTable('imports')
    .set({ leased_until: leasedUntil })
    .where('id', '=', id)
    .where('claim', '=', claim)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Gives the claim back at once (a process stopping): another instance resumes from the checkpoint. */
export const releaseImport = (db: Executor, id: string, claim: string) =>
  db.updateTable('imports').set({ claim: null, leased_until: null }).where('id', '=', id).where('claim', '=', claim).execute();

export async function setRowsTotal(db: Executor, id: string, claim: string, total: number): Promise<void> {
  await db.updateTable('imports').set({ rows_total: total }).where('id', '=', id).where('claim', '=', claim).execute();
}

/**
 * A chunk's checkpoint and counts, in the chunk's transaction. Only forward, from the checkpoint the
 * chunk started at, and only by the claim's holder while the import runs: false otherwise (the chunk
 * then rolls back; the import was taken over or cancelled).
 */
export async function advanceCheckpoint(
  tx: Executor,
  c: { id: string; claim: string; fromRow: number; toRow: number; succeeded: number; failed: number; now: string; leasedUntil: string },
): Promise<boolean> {
  const r = await tx
    .updateTable('imports')
    .set((eb) => ({
      checkpoint_row: c.toRow,
      rows_processed: eb('rows_processed', '+', c.succeeded + c.failed),
      rows_succeeded: eb('rows_succeeded', '+', c.succeeded),
      rows_failed: eb('rows_failed', '+', c.failed),
      leased_until: c.leasedUntil,
      updated_at: c.now,
    }))
    .where('id', '=', c.id)
    .where('claim', '=', c.claim)
    .where('status', '=', 'running')
    .where('checkpoint_row', '=', c.fromRow)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export const insertImportErrors: (tx: Executor, rows: readonly ImportErrorsTable[]) => Promise<void> = bulkInsert('import_errors', [
  'import_id',
  'row',
  'external_reference_id',
  'detail',
]);

/** The import's refused rows after `afterRow`, in row order, at most `limit`. */
export const importErrorsAfter = (db: Executor, importId: string, afterRow: number, limit: number) =>
  db
    .selectFrom('import_errors')
    .select(['row', 'external_reference_id', 'detail'])
    .where('import_id', '=', importId)
    .where('row', '>', afterRow)
    .orderBy('row')
    .limit(limit)
    .execute();

/** The import's end, by the claim's holder (false: it lost the claim, or the import was cancelled meanwhile). */
export async function finishImport(
  tx: Executor,
  id: string,
  claim: string,
  patch: Pick<ImportsTable, 'status' | 'finished_at' | 'updated_at'> & Partial<ImportsTable>,
): Promise<boolean> {
  const r = await tx
    .updateTable('imports')
    .set(Object.assign({}, patch, { claim: null, leased_until: null }))
    .where('id', '=', id)
    .where('claim', '=', claim)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export const importRow = (db: Executor, id: string) => db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirst();

/** The tables an import of each resource grows (the resource's own, and what its write path writes beside it). */
const GROWN_TABLES: Record<string, readonly string[]> = {
  loads: ['loads', 'load_stops', 'load_rates', 'lane_history', 'lane_stats', 'lane_carriers'],
  customers: ['customers'],
  carriers: ['carriers', 'carrier_contacts'],
  locations: ['locations'],
};

/** PostgreSQL's row estimate of a resource's table as of its last ANALYZE (0 when never); null on SQLite. */
export const plannedRowsOf = (db: Executor, resource: string): Promise<number | null> => plannedRows(db, GROWN_TABLES[resource]?.[0] ?? resource);

/**
 * ANALYZE of the tables an import grows (PostgreSQL). An import takes a table from nothing to millions
 * of rows in minutes; the plans of the write path's lookups (a load by reference among the
 * organization's loads) are made from the statistics, and plans made while the table was empty
 * stayed when it was not: PostgreSQL picked an index on (org_id, id) and filtered on the reference,
 * so every lookup read all of the organization's loads (2.7 ms for one load at 30,000 loads, and
 * growing), in the import and in every API request beside it. ANALYZE also makes every connection
 * plan again. Autovacuum does the same, later (and not at all where it is off).
 */
export const analyzeGrownTables = (db: Executor, resource: string): Promise<void> => analyzeTables(db, GROWN_TABLES[resource] ?? []);

/** Finished imports that ended before `before` (retention), oldest first. */
export const expiredImports = (db: Executor, before: string, limit: number) =>
  db
    .selectFrom('imports')
    .select('id')
    .where('status', 'in', ['completed', 'completed_with_errors', 'failed', 'cancelled'])
    .where('finished_at', '<', before)
    .orderBy('finished_at')
    .limit(limit)
    .execute();

/** An import and its refused rows, in one transaction. */
export const deleteImport = (db: Executor, id: string) =>
  db.transaction().execute(async (tx) => {
    await tx.deleteFrom('import_errors').where('import_id', '=', id).execute();
    await tx.deleteFrom('imports').where('id', '=', id).execute();
  });
