import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { bulkInsert, deleteWhereIn } from '../../lib/db/bulk.js';
import { beginHistoryChange, removeHistory, updateLaneStats } from '../lanes/lane-stats.repo.js';
import { prepared } from '../../lib/db/prepared.js';
import { lockedRead } from '../../lib/db/locks.js';
import { fetchPage, pageIds, sinceFilters } from '../../lib/db/paging.js';
import { loadDocumentsPage } from './loads.documents.repo.js';
import {
  LOAD_COLUMNS,
  type Database,
  type LaneHistoryTable,
  type LoadRatesTable,
  type LoadStopsTable,
  type LoadsTable,
  type StopWithLocation,
} from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import type { ChangeSet } from '../shared/write-pipeline.js';

export type { StopWithLocation };

const stopsOfOne = prepared<{ orgId: string; loadId: string }, StopWithLocation>((db, p) =>
  db
    .selectFrom('load_stops as s')
    .innerJoin('locations as l', 'l.id', 's.location_id')
    .selectAll('s')
    .select(['l.external_reference_id as location_external_reference_id', 'l.name as location_name', 'l.latitude', 'l.longitude'])
    .where('s.org_id', '=', p('orgId'))
    .where('s.load_id', '=', p('loadId'))
    .orderBy('s.stop_number'),
);

const ratesOfOne = prepared<{ orgId: string; loadId: string }, LoadRatesTable>((db, p) =>
  db.selectFrom('load_rates').selectAll().where('org_id', '=', p('orgId')).where('load_id', '=', p('loadId')).orderBy('position'),
);

const nameOfCustomer = prepared<{ orgId: string; id: string }, { id: string; external_reference_id: string; name: string }>((db, p) =>
  db.selectFrom('customers').select(['id', 'external_reference_id', 'name']).where('org_id', '=', p('orgId')).where('id', '=', p('id')),
);
const nameOfCarrier = prepared<{ orgId: string; id: string }, { id: string; external_reference_id: string; name: string }>((db, p) =>
  db.selectFrom('carriers').select(['id', 'external_reference_id', 'name']).where('org_id', '=', p('orgId')).where('id', '=', p('id')),
);

/** Stops of loads with their places, by load then stop number. */
export function stopsOf(tx: Executor, orgId: string, loadIds: string[]): Promise<StopWithLocation[]> {
  if (loadIds.length === 0) return Promise.resolve([]);
  // One load (a GET, a write): the precompiled statement.
  if (loadIds.length === 1) return stopsOfOne(tx, { orgId, loadId: loadIds[0]! });
  return tx
    .selectFrom('load_stops as s')
    .innerJoin('locations as l', 'l.id', 's.location_id')
    .selectAll('s')
    .select(['l.external_reference_id as location_external_reference_id', 'l.name as location_name', 'l.latitude', 'l.longitude'])
    .where('s.org_id', '=', orgId)
    .where('s.load_id', 'in', loadIds)
    .orderBy('s.load_id')
    .orderBy('s.stop_number')
    .execute();
}

export function ratesOf(tx: Executor, orgId: string, loadIds: string[]): Promise<LoadRatesTable[]> {
  if (loadIds.length === 0) return Promise.resolve([]);
  if (loadIds.length === 1) return ratesOfOne(tx, { orgId, loadId: loadIds[0]! });
  return tx.selectFrom('load_rates').selectAll().where('org_id', '=', orgId).where('load_id', 'in', loadIds).orderBy('load_id').orderBy('position').execute();
}

/** Loads by reference (a batch's; locked for the transaction on PostgreSQL, in reference order). */
export function loadsByRefs(tx: Executor, orgId: string, refs: string[], lock: boolean): Promise<LoadsTable[]> {
  if (refs.length === 0) return Promise.resolve([]);
  const q = tx.selectFrom('loads').selectAll().where('org_id', '=', orgId).where('external_reference_id', 'in', refs).orderBy('external_reference_id');
  return (lock ? q.forUpdate() : q).execute();
}

/** Customers, carriers or locations by reference, in one statement. */
export function recordsByRefs<T extends 'customers' | 'carriers' | 'locations'>(tx: Executor, table: T, orgId: string, refs: string[]): Promise<Database[T][]> {
  if (refs.length === 0) return Promise.resolve([]);
  const t = table as 'customers';
  return tx.selectFrom(t).selectAll().where('org_id', '=', orgId).where('external_reference_id', 'in', refs).execute() as Promise<Database[T][]>;
}

const loadByRefStatement = prepared<{ orgId: string; ref: string }, LoadsTable>((db, p) =>
  db.selectFrom('loads').selectAll().where('org_id', '=', p('orgId')).where('external_reference_id', '=', p('ref')),
);
const loadByIdStatement = prepared<{ orgId: string; id: string }, LoadsTable>((db, p) =>
  db.selectFrom('loads').selectAll().where('org_id', '=', p('orgId')).where('id', '=', p('id')),
);

// The same reads for a write: the row stays locked to the end of the transaction (PostgreSQL), so the
// writes of one load take turns (docs/reliability.md "One load").
const loadByRefLocked = prepared<{ orgId: string; ref: string }, LoadsTable>((db, p) =>
  lockedRead(db, db.selectFrom('loads').selectAll().where('org_id', '=', p('orgId')).where('external_reference_id', '=', p('ref'))),
);
const loadByIdLocked = prepared<{ orgId: string; id: string }, LoadsTable>((db, p) =>
  lockedRead(db, db.selectFrom('loads').selectAll().where('org_id', '=', p('orgId')).where('id', '=', p('id'))),
);

/** One load by reference (a single write's read): locked to the end of the transaction when `tx` is one. */
export const loadByRef = async (tx: Executor, orgId: string, ref: string): Promise<LoadsTable | undefined> =>
  (await (tx.isTransaction ? loadByRefLocked : loadByRefStatement)(tx, { orgId, ref }))[0];
export const loadById = async (tx: Executor, orgId: string, id: string): Promise<LoadsTable | undefined> =>
  (await (tx.isTransaction ? loadByIdLocked : loadByIdStatement)(tx, { orgId, id }))[0];

const insertLoads = bulkInsert('loads', LOAD_COLUMNS);
const insertStops = bulkInsert('load_stops', [
  'id',
  'org_id',
  'load_id',
  'stop_number',
  'stop_type',
  'location_id',
  'early_arrival',
  'late_arrival',
  'actual_arrival',
  'actual_departure',
  'arrival_deadline',
]);
const insertRates = bulkInsert('load_rates', ['id', 'org_id', 'load_id', 'position', 'rate_entity', 'amount', 'currency', 'rate_type', 'description']);
const insertHistory = bulkInsert('lane_history', [
  'load_id',
  'org_id',
  'carrier_id',
  'carrier_external_reference_id',
  'equipment_type',
  'origin_location_id',
  'destination_location_id',
  'origin_latitude',
  'origin_longitude',
  'destination_latitude',
  'destination_longitude',
  'origin_cell',
  'destination_cell',
  'delivered_at',
  'carrier_rate_total',
  'carrier_rate_currency',
  'total_distance',
  'stop_outcomes',
]);

/** What a unit of work changed of its loads, to be written at once (src/modules/loads/loads.workspace.ts). */
export interface LoadChanges {
  /** Stored loads deleted (their stops, rates and history go with them: ON DELETE CASCADE). */
  deleted: string[];
  inserted: LoadsTable[];
  updated: { id: string; patch: Partial<LoadsTable> }[];
  /** Stored loads whose stops (rates, history rows) are replaced by the rows below. */
  stopsOf: string[];
  stops: LoadStopsTable[];
  ratesOf: string[];
  rates: LoadRatesTable[];
  historyOf: string[];
  history: LaneHistoryTable[];
}

/**
 * A unit of work's load changes, set-based: the deletes first (a reference deleted and created again in
 * one batch never meets itself in the unique index), then one multi-row insert per table. Updates of
 * stored rows are one statement each (their columns differ). The lane stats follow the history in the
 * same transaction: the rows it leaves (replaced, or their load deleted) are read as they go.
 */
export async function writeLoadChanges(tx: Executor, orgId: string, c: LoadChanges, now: string): Promise<void> {
  const leaving = [...new Set([...c.historyOf, ...c.deleted])];
  if (leaving.length > 0 || c.history.length > 0) await beginHistoryChange(tx, orgId);
  const removed = await removeHistory(tx, orgId, leaving);
  await deleteWhereIn(tx, 'loads', 'id', orgId, c.deleted);
  await deleteWhereIn(tx, 'load_stops', 'load_id', orgId, c.stopsOf);
  await deleteWhereIn(tx, 'load_rates', 'load_id', orgId, c.ratesOf);
  await insertLoads(tx, c.inserted);
  for (const { id, patch } of c.updated) await tx.updateTable('loads').set(patch).where('org_id', '=', orgId).where('id', '=', id).execute();
  await insertStops(tx, c.stops);
  await insertRates(tx, c.rates);
  await insertHistory(tx, c.history);
  await updateLaneStats(tx, orgId, { added: c.history, removed }, now);
}

const byRef = {
  customers: tenantRecords('customers').findByRef,
  carriers: tenantRecords('carriers').findByRef,
  locations: tenantRecords('locations').findByRef,
};

/** Records by external reference: one compiled point read per distinct reference (a load names a few). */
export async function findByRefs<T extends 'customers' | 'carriers' | 'locations'>(
  tx: Executor,
  table: T,
  orgId: string,
  refs: string[],
): Promise<Database[T][]> {
  const found = await Promise.all([...new Set(refs)].map((ref) => byRef[table](tx, orgId, ref)));
  return found.filter((r): r is NonNullable<typeof r> => r !== undefined) as Database[T][];
}

export function namesByIds(tx: Executor, table: 'customers' | 'carriers', orgId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([] as { id: string; external_reference_id: string; name: string }[]);
  const unique = [...new Set(ids)];
  if (unique.length === 1) return (table === 'customers' ? nameOfCustomer : nameOfCarrier)(tx, { orgId, id: unique[0]! });
  return tx
    .selectFrom(table)
    .select(['id', 'external_reference_id', 'name'])
    .where('org_id', '=', orgId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
}

/** How many loads use a customer, a carrier or a location, with a few of their references for the message. */
export async function loadsUsing(
  tx: Executor,
  orgId: string,
  by: { customerId: string } | { carrierId: string } | { locationId: string },
): Promise<{ count: number; sample: string[] }> {
  if ('locationId' in by) {
    // From the stops (indexed by location), not from every load of the organization.
    const q = tx
      .selectFrom('load_stops')
      .innerJoin('loads', 'loads.id', 'load_stops.load_id')
      .where('load_stops.location_id', '=', by.locationId)
      .where('load_stops.org_id', '=', orgId);
    const sample = await q.select('loads.external_reference_id').distinct().orderBy('loads.external_reference_id').limit(3).execute();
    if (sample.length === 0) return { count: 0, sample: [] };
    const counted = await q.select((eb) => eb.fn.count('load_stops.load_id').distinct().as('n')).executeTakeFirst();
    return { count: Number(counted?.n ?? 0), sample: sample.map((r) => r.external_reference_id) };
  }
  let q = tx.selectFrom('loads').where('loads.org_id', '=', orgId);
  q = 'customerId' in by ? q.where('loads.customer_id', '=', by.customerId) : q.where('loads.carrier_id', '=', by.carrierId);
  const sample = await q.select('loads.external_reference_id').orderBy('loads.external_reference_id').limit(3).execute();
  if (sample.length === 0) return { count: 0, sample: [] };
  const counted = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
  return { count: Number(counted?.n ?? 0), sample: sample.map((r) => r.external_reference_id) };
}

export interface LoadFilter {
  statuses?: string[];
  equipment_type?: string;
  transport_mode?: string;
  customer_id?: string;
  carrier_id?: string;
  /** By external reference (no such record: nothing matches). */
  customer_ref?: string | undefined;
  carrier_ref?: string | undefined;
  pickup_date_from?: string;
  pickup_date_to?: string;
  updated_since?: string;
  created_since?: string;
}

const SORT_COLUMNS: Record<string, string> = {
  created_at: 'created_at',
  updated_at: 'updated_at',
  status: 'status',
  external_reference_id: 'external_reference_id',
};

/** Moves a load between status counters (from null: a new load; to null: a deleted one). */
const addToStatusCount = prepared<{ orgId: string; status: string; delta: number }, unknown>((db, p) =>
  db
    .insertInto('load_status_counts')
    .values({ org_id: p('orgId'), status: p('status'), n: p('delta') })
    .onConflict((oc) => oc.columns(['org_id', 'status']).doUpdateSet((eb) => ({ n: eb('load_status_counts.n', '+', p('delta')) }))),
);

/** The kept counter of loads per status (the list's total), written at seal (src/modules/shared/write-pipeline.ts). */
export const LOAD_STATUS_COUNTER = 'load_status';

/** A load moved between statuses (from null: a new load; to null: a deleted one). */
export function countStatusChange(changes: ChangeSet, from: string | null, to: string | null): void {
  if (from !== null) changes.tally(LOAD_STATUS_COUNTER, from, -1);
  if (to !== null) changes.tally(LOAD_STATUS_COUNTER, to, 1);
}

/** Writes the net moves of the status counters (in status order: every transaction locks them alike). */
export async function writeStatusCounts(tx: Executor, orgId: string, moves: [status: string, delta: number][]): Promise<void> {
  for (const [status, delta] of moves) await addToStatusCount(tx, { orgId, status, delta });
}

function filteredLoads(tx: Executor, orgId: string, filter: LoadFilter) {
  let q = tx.selectFrom('loads').where('org_id', '=', orgId);
  if (filter.statuses) q = q.where('status', 'in', filter.statuses);
  if (filter.equipment_type) q = q.where('equipment_type', '=', filter.equipment_type);
  if (filter.transport_mode) q = q.where('transport_mode', '=', filter.transport_mode);
  if (filter.customer_id) q = q.where('customer_id', '=', filter.customer_id);
  if (filter.carrier_id) q = q.where('carrier_id', '=', filter.carrier_id);
  for (const [column, table, ref] of [
    ['customer_id', 'customers', filter.customer_ref],
    ['carrier_id', 'carriers', filter.carrier_ref],
  ] as const) {
    if (ref !== undefined) {
      q = q.where(column, '=', (eb) => eb.selectFrom(table).select('id').where('org_id', '=', orgId).where('external_reference_id', '=', ref));
    }
  }
  if (filter.pickup_date_from) q = q.where('pickup_at', '>=', filter.pickup_date_from);
  if (filter.pickup_date_to) q = q.where('pickup_at', '<=', filter.pickup_date_to);
  return sinceFilters(q, filter);
}

/** Whether the kept status counters give the list's total (no filter but status). */
const countedByStatus = (f: LoadFilter) =>
  [
    f.equipment_type,
    f.transport_mode,
    f.customer_id,
    f.carrier_id,
    f.customer_ref,
    f.carrier_ref,
    f.pickup_date_from,
    f.pickup_date_to,
    f.updated_since,
    f.created_since,
  ].every((v) => v === undefined);

/** The total of a status-only (or unfiltered) list from the kept counters; null when other filters apply. */
async function countFromCounters(tx: Executor, orgId: string, filter: LoadFilter): Promise<number | null> {
  if (!countedByStatus(filter)) return null;
  let q = tx
    .selectFrom('load_status_counts')
    .select((eb) => eb.fn.sum<number>('n').as('n'))
    .where('org_id', '=', orgId);
  if (filter.statuses) q = q.where('status', 'in', filter.statuses);
  const row = await q.executeTakeFirst();
  return Number(row?.n ?? 0);
}

export function listLoads(tx: Executor, orgId: string, filter: LoadFilter, page: PageRequest) {
  return fetchPage<'loads', LoadsTable>(filteredLoads(tx, orgId, filter), page, SORT_COLUMNS, () => countFromCounters(tx, orgId, filter));
}

/**
 * PostgreSQL: a page of loads with their parts, its total (from the counters when they give it, else a
 * count in the same statement) and the caller's key state, in two statements (loadDocumentsPage).
 */
export function listLoadDocuments(tx: Executor, orgId: string, filter: LoadFilter, page: PageRequest, keyId: string | null) {
  const q = filteredLoads(tx, orgId, filter);
  const { ids, column, direction } = pageIds(q, page, SORT_COLUMNS);
  const total = countedByStatus(filter)
    ? sql`(select coalesce(sum(n), 0) from load_status_counts where org_id = ${orgId}${filter.statuses ? sql` and status in (${sql.join(filter.statuses)})` : sql``})`
    : sql`(${q.clearSelect().select((eb) => eb.fn.countAll().as('n'))})`;
  const dir = sql.raw(direction === 'desc' ? 'desc' : 'asc');
  const orderBy = sql`${sql.ref(`l.${column}`)} ${dir}, l.id ${dir}`;
  return loadDocumentsPage(tx, { orgId, ids, total, orderBy }, keyId);
}

export function usersMatching(tx: Executor, orgId: string, emails: string[], names: string[]) {
  if (emails.length === 0 && names.length === 0) return Promise.resolve([]);
  return tx
    .selectFrom('users')
    .select(['id', 'email_lower', 'name'])
    .where('org_id', '=', orgId)
    .where((eb) =>
      eb.or([...(emails.length ? [eb('email_lower', 'in', emails)] : []), ...(names.length ? [eb(sql<string>`lower(trim(name))`, 'in', names)] : [])]),
    )
    .execute();
}
