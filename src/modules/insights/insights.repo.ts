import { containsFolded, containsInsensitive, type Executor } from '../../lib/db/index.js';
import { fetchPage } from '../../lib/db/paging.js';
import type { LaneStatsTable, LoadsTable, LocationsTable } from '../../lib/db/types.js';
import type { PageRequest } from '../../lib/http/pagination.js';
import { OPEN_STATUSES } from '../../domain/enums.js';

/** Reads only the dashboard needs; every statement filters by the signed-in user's organization. */

async function countOf(db: Executor, table: 'loads' | 'customers' | 'carriers' | 'locations' | 'users', orgId: string) {
  const r = await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('org_id', '=', orgId).executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function overviewCounts(db: Executor, orgId: string) {
  const [loads, customers, carriers, locations, users, openLoads, activeKeys, lanes] = await Promise.all([
    countOf(db, 'loads', orgId),
    countOf(db, 'customers', orgId),
    countOf(db, 'carriers', orgId),
    countOf(db, 'locations', orgId),
    countOf(db, 'users', orgId),
    db
      .selectFrom('loads')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .where('status', 'in', [...OPEN_STATUSES])
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
    db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
    db
      .selectFrom('lane_stats')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0)),
  ]);
  return { loads, openLoads, customers, carriers, locations, users, activeKeys, lanes };
}

export interface LoadSearch {
  statuses?: string[];
  /** Matches the load's reference, its description or its customer's name (any case). */
  text?: string;
}

export function searchLoads(db: Executor, orgId: string, search: LoadSearch, page: PageRequest) {
  let q = db.selectFrom('loads').where('loads.org_id', '=', orgId);
  if (search.statuses?.length) q = q.where('loads.status', 'in', search.statuses);
  const text = search.text?.trim();
  if (text) {
    q = q.where((eb) =>
      eb.or([
        containsInsensitive('loads.external_reference_id', text),
        containsInsensitive('loads.description', text),
        eb(
          'loads.customer_id',
          'in',
          eb.selectFrom('customers').select('customers.id').where('customers.org_id', '=', orgId).where(containsFolded('customers.name_folded', text)),
        ),
      ]),
    );
  }
  return fetchPage<'loads', LoadsTable>(q, page, { created_at: 'created_at' });
}

export function locationsByIds(db: Executor, orgId: string, ids: string[]): Promise<LocationsTable[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('locations').selectAll().where('org_id', '=', orgId).where('id', 'in', [...new Set(ids)]).execute();
}

/** Lanes with the most delivered history first (then the most recent), a page at a time. */
export async function topLanes(db: Executor, orgId: string, page: number, pageSize: number) {
  const counted = await db.selectFrom('lane_stats').select((eb) => eb.fn.countAll().as('n')).where('org_id', '=', orgId).executeTakeFirst();
  const total = Number(counted?.n ?? 0);
  const rows: LaneStatsTable[] = await db
    .selectFrom('lane_stats')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('load_count', 'desc')
    .orderBy('last_delivered_at', 'desc')
    .orderBy('equipment_type')
    .orderBy('origin_cell')
    .orderBy('destination_cell')
    .limit(pageSize)
    .offset((page - 1) * pageSize)
    .execute();
  return { rows, total };
}

/**
 * One known location at each end of a lane (the latest delivered load's), so a lane's grid cell can
 * be named by a place the organization ships from or to. One index lookup per lane.
 */
export async function laneEndLocations(db: Executor, orgId: string, lanes: Pick<LaneStatsTable, 'equipment_type' | 'origin_cell' | 'destination_cell'>[]) {
  const ends = await Promise.all(
    lanes.map((l) =>
      db
        .selectFrom('lane_history')
        .select(['origin_location_id', 'destination_location_id'])
        .where('org_id', '=', orgId)
        .where('equipment_type', '=', l.equipment_type)
        .where('origin_cell', '=', l.origin_cell)
        .where('destination_cell', '=', l.destination_cell)
        .orderBy('delivered_at', 'desc')
        .limit(1)
        .executeTakeFirst(),
    ),
  );
  const ids = ends.flatMap((e) => (e ? [e.origin_location_id, e.destination_location_id] : []));
  const byId = new Map((await locationsByIds(db, orgId, ids)).map((l) => [l.id, l]));
  return ends.map((e) => ({
    origin: e ? byId.get(e.origin_location_id) : undefined,
    destination: e ? byId.get(e.destination_location_id) : undefined,
  }));
}
