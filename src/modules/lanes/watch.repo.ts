import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { forUpdate, holdFollowUp } from '../../lib/db/locks.js';
import type { LaneKey } from '../../domain/lane.js';
import type { LaneStop } from './lanes.repo.js';
import type { RecommendationWatchTable } from '../../lib/db/types.js';

// SQL of the recommendations follow-up (recommendations.feed.ts): its cursor over the outbox, and the
// open loads it watches with the ranked carriers last announced for each.

/** The follow-up's cursor and the organization's last event sequence, as committed. */
export async function followUpPosition(db: Executor, orgId: string): Promise<{ after: number; last: number }> {
  const row = await db.selectFrom('org_versions').select(['recommendations_after', 'events']).where('org_id', '=', orgId).executeTakeFirst();
  return { after: Number(row?.recommendations_after ?? 0), last: Number(row?.events ?? 0) };
}

/** Waits for the organization's follow-up turn (held to commit: passes of several processes take turns); the cursor then. */
export async function followUpTurn(tx: Executor, orgId: string): Promise<number> {
  await holdFollowUp(tx, orgId);
  return (await followUpPosition(tx, orgId)).after;
}

/** Organizations whose outbox has events the follow-up has not read (a crashed process's leftovers). */
export async function organizationsBehind(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('org_versions').select('org_id').whereRef('events', '>', 'recommendations_after').execute();
  return rows.map((r) => r.org_id);
}

export interface FollowUpEvent {
  sequence: number;
  type: string;
  record_id: string | null;
  lanes: string | null;
}

/** The load and location events after the cursor that are for the follow-up (they carry lanes), oldest first. */
export async function loadEventsAfter(db: Executor, orgId: string, after: number, limit: number): Promise<FollowUpEvent[]> {
  const rows = await db
    .selectFrom('events')
    .select(['sequence', 'type', 'record_id', 'lanes'])
    .where('org_id', '=', orgId)
    .where('sequence', '>', after)
    .where('kind', 'in', ['loads', 'locations'])
    .where('lanes', 'is not', null)
    .orderBy('sequence')
    .limit(limit)
    .execute();
  return rows.map((r) => Object.assign({}, r, { sequence: Number(r.sequence) }));
}

/**
 * Moves the cursor from `from` to `to` (false when another process moved it first); last in the
 * follow-up's transaction, as a write takes the counters' row last.
 */
export async function advanceCursor(tx: Executor, orgId: string, from: number, to: number): Promise<boolean> {
  const locking = forUpdate(tx);
  const { rows } = await sql<{ after: number | string }>`select recommendations_after as after from org_versions where org_id = ${orgId}${locking}`.execute(tx);
  if (Number(rows[0]?.after ?? 0) !== from) return false;
  await tx.updateTable('org_versions').set({ recommendations_after: to }).where('org_id', '=', orgId).execute();
  return true;
}

export interface WatchedLoad {
  id: string;
  external_reference_id: string;
  status: string;
  equipment_type: string;
  carrier_id: string | null;
}

/** Loads by id with their stops' places (what their lane and recommendations are computed from). */
export async function loadsWithStops(db: Executor, orgId: string, ids: readonly string[]): Promise<{ load: WatchedLoad; stops: LaneStop[] }[]> {
  if (ids.length === 0) return [];
  const [loads, stops] = await Promise.all([
    db
      .selectFrom('loads')
      .select(['id', 'external_reference_id', 'status', 'equipment_type', 'carrier_id'])
      .where('org_id', '=', orgId)
      .where('id', 'in', [...ids])
      .execute(),
    db
      .selectFrom('load_stops as s')
      .innerJoin('locations as l', 'l.id', 's.location_id')
      .select(['s.load_id', 's.stop_number', 's.stop_type', 's.location_id', 's.late_arrival', 'l.latitude', 'l.longitude'])
      .where('s.org_id', '=', orgId)
      .where('s.load_id', 'in', [...ids])
      .orderBy('s.load_id')
      .orderBy('s.stop_number')
      .execute(),
  ]);
  const byLoad = new Map<string, LaneStop[]>();
  for (const { load_id, ...s } of stops) byLoad.set(load_id, [...(byLoad.get(load_id) ?? []), s]);
  return loads.map((load) => ({ load, stops: byLoad.get(load.id) ?? [] }));
}

/** Open loads (of the given ids) with a stop at one of the locations (a moved location moves their lane). */
export async function loadsAtLocations(db: Executor, orgId: string, locationIds: readonly string[]): Promise<string[]> {
  if (locationIds.length === 0) return [];
  const rows = await db
    .selectFrom('load_stops as s')
    .innerJoin('recommendation_watch as w', 'w.load_id', 's.load_id')
    .select('s.load_id')
    .distinct()
    .where('s.org_id', '=', orgId)
    .where('s.location_id', 'in', [...locationIds])
    .execute();
  return rows.map((r) => r.load_id);
}

/** A watched open load: its lane (cells and ends), its own carrier, and the ranked carrier ids announced. */
export type WatchRow = RecommendationWatchTable;

const WATCH_COLUMNS = [
  'load_id',
  'org_id',
  'equipment_type',
  'origin_cell',
  'destination_cell',
  'external_reference_id',
  'origin_latitude',
  'origin_longitude',
  'destination_latitude',
  'destination_longitude',
  'carrier_id',
  'ranked',
] as const;

/** Watched loads of one equipment type whose lane cells are among the given ones (a superset of a lane's neighbours). */
export function watchedNear(
  db: Executor,
  orgId: string,
  equipmentType: string,
  originCells: readonly number[],
  destinationCells: readonly number[],
): Promise<WatchRow[]> {
  return db
    .selectFrom('recommendation_watch')
    .select(WATCH_COLUMNS)
    .where('org_id', '=', orgId)
    .where('equipment_type', '=', equipmentType)
    .where('origin_cell', 'in', [...originCells])
    .where('destination_cell', 'in', [...destinationCells])
    .execute();
}

export async function watchRows(db: Executor, ids: readonly string[]): Promise<Map<string, WatchRow>> {
  const out = new Map<string, WatchRow>();
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .selectFrom('recommendation_watch')
      .select(WATCH_COLUMNS)
      .where('load_id', 'in', ids.slice(i, i + 1000))
      .execute();
    for (const r of rows) out.set(r.load_id, r);
  }
  return out;
}

/** Starts, moves or updates the watch of open loads, in load id order (two passes lock rows alike), 200 a statement. */
export async function upsertWatch(tx: Executor, rows: readonly WatchRow[]): Promise<void> {
  const sorted = [...rows].sort((a, b) => (a.load_id < b.load_id ? -1 : 1));
  for (let i = 0; i < sorted.length; i += 200) {
    await tx
      .insertInto('recommendation_watch')
      .values(sorted.slice(i, i + 200))
      .onConflict((oc) =>
        oc
          .column('load_id')
          .doUpdateSet((eb) => Object.fromEntries(WATCH_COLUMNS.filter((c) => c !== 'load_id').map((c) => [c, eb.ref(`excluded.${c}`)])) as never),
      )
      .execute();
  }
}

/** Stops watching loads that are no longer open (or lost their lane). */
export async function unwatch(tx: Executor, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 1000)
    await tx
      .deleteFrom('recommendation_watch')
      .where('load_id', 'in', ids.slice(i, i + 1000))
      .execute();
}

export const lanesOf = (json: string | null): LaneKey[] => (json ? (JSON.parse(json) as LaneKey[]) : []);

/** The loads' first pickup early_arrival (loads.pickup_at), by id: the backhaul window of their recommendations. */
export async function pickupTimes(db: Executor, orgId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db
      .selectFrom('loads')
      .select(['id', 'pickup_at'])
      .where('org_id', '=', orgId)
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const r of rows) out.set(r.id, r.pickup_at);
  }
  return out;
}
