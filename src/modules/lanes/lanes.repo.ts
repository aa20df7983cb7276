import { sql } from 'kysely';
import { dialectOf, type Executor } from '../../lib/db/index.js';
import { prepared } from '../../lib/db/prepared.js';
import { cellOf } from '../../domain/grid.js';
import { laneEnds as laneEndsOf, type LaneKey } from '../../domain/lane.js';
import { onLane, type LaneArea } from '../../lib/db/lane-area.js';

export { onLane, type LaneArea };

import { laneKeyOf as keyOf } from './lane-history.js';

export interface LaneEnds {
  origin: { locationId: string; latitude: number; longitude: number } | null;
  destination: { locationId: string; latitude: number; longitude: number; lateArrival: string } | null;
}

// Compiled once: every load write runs these (src/lib/db/prepared.ts).
const stopsWithPlaces = prepared<
  { orgId: string; loadId: string },
  { stop_number: number; stop_type: string; location_id: string; late_arrival: string; latitude: number; longitude: number }
>((db, p) =>
  db
    .selectFrom('load_stops as s')
    .innerJoin('locations as l', 'l.id', 's.location_id')
    .select(['s.stop_number', 's.stop_type', 's.location_id', 's.late_arrival', 'l.latitude', 'l.longitude'])
    .where('s.org_id', '=', p('orgId'))
    .where('s.load_id', '=', p('loadId'))
    .orderBy('s.stop_number'),
);
const historyLaneOf = prepared<{ loadId: string }, LaneKey>((db, p) =>
  db.selectFrom('lane_history').select(['equipment_type', 'origin_cell', 'destination_cell']).where('load_id', '=', p('loadId')),
);
/** A stop with its place: what the lane ends are found from. */
export interface LaneStop {
  stop_number: number;
  stop_type: string;
  location_id: string;
  late_arrival: string;
  latitude: number;
  longitude: number;
}

/** A stored load's lane ends (D7), with their places; from `stops` when the caller has them already. */
export async function laneEnds(tx: Executor, orgId: string, loadId: string, stops?: readonly LaneStop[]): Promise<LaneEnds> {
  const { origin: first, destination: last } = laneEndsOf(stops ?? (await stopsWithPlaces(tx, { orgId, loadId })));
  return {
    origin: first ? { locationId: first.location_id, latitude: first.latitude, longitude: first.longitude } : null,
    destination: last ? { locationId: last.location_id, latitude: last.latitude, longitude: last.longitude, lateArrival: last.late_arrival } : null,
  };
}

/** The lane keys of existing history rows of `loadIds`, by load id (a batch's read, once for all items). */
export async function historyLanesOf(tx: Executor, orgId: string, loadIds: string[]): Promise<Map<string, LaneKey>> {
  if (loadIds.length === 0) return new Map();
  const rows = await tx
    .selectFrom('lane_history')
    .select(['load_id', 'equipment_type', 'origin_cell', 'destination_cell'])
    .where('org_id', '=', orgId)
    .where('load_id', 'in', loadIds)
    .execute();
  return new Map(rows.map((r) => [r.load_id, keyOf({ ...r, origin_cell: Number(r.origin_cell), destination_cell: Number(r.destination_cell) })]));
}

/** A location moved (re-geocoded): the history rows that start or end there follow it. */
export async function relocateLaneHistory(tx: Executor, orgId: string, location: { id: string; latitude: number; longitude: number }): Promise<LaneKey[]> {
  // Two indexed lookups, not one OR (which SQLite answers by scanning every history row).
  const affected = async () => [
    ...(await tx
      .selectFrom('lane_history')
      .select(['equipment_type', 'origin_cell', 'destination_cell'])
      .distinct()
      .where('org_id', '=', orgId)
      .where('origin_location_id', '=', location.id)
      .execute()),
    ...(await tx
      .selectFrom('lane_history')
      .select(['equipment_type', 'origin_cell', 'destination_cell'])
      .distinct()
      .where('org_id', '=', orgId)
      .where('destination_location_id', '=', location.id)
      .execute()),
  ];
  const before = await affected();
  if (before.length === 0) return [];
  const cell = cellOf(location.latitude, location.longitude);
  await tx
    .updateTable('lane_history')
    .set({ origin_latitude: location.latitude, origin_longitude: location.longitude, origin_cell: cell })
    .where('org_id', '=', orgId)
    .where('origin_location_id', '=', location.id)
    .execute();
  await tx
    .updateTable('lane_history')
    .set({ destination_latitude: location.latitude, destination_longitude: location.longitude, destination_cell: cell })
    .where('org_id', '=', orgId)
    .where('destination_location_id', '=', location.id)
    .execute();
  return [...before, ...(await affected())].map(keyOf);
}

/**
 * History rows of one equipment type whose origin and destination lie in the area's cells (the index)
 * and boxes (checked in the database, so rows far outside the radius never reach the scoring).
 */
/** A history row of the lane, with its carrier's card where the engine read it in the same statement. */
export interface LaneCandidate {
  carrier_id: string;
  carrier_external_reference_id: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  delivered_at: string;
  carrier_rate_total: number | null;
  carrier_rate_currency: string | null;
  carrier_name?: string | null;
  carrier_dot_number?: string | null;
}

const CANDIDATE_COLUMNS = [
  'lane_history.carrier_id',
  'lane_history.carrier_external_reference_id',
  'lane_history.origin_latitude',
  'lane_history.origin_longitude',
  'lane_history.destination_latitude',
  'lane_history.destination_longitude',
  'lane_history.delivered_at',
  'lane_history.carrier_rate_total',
  'lane_history.carrier_rate_currency',
] as const;

/**
 * History rows of one equipment type whose origin and destination lie in the area's cells (the index)
 * and boxes (checked in the database, so rows far outside the radius never reach the scoring).
 * PostgreSQL joins each row's carrier card in (a hash join, and a round trip saved); SQLite reads the
 * cards of the ranked carriers afterwards (carrierCards), cheaper than a lookup per history row.
 */
export async function laneCandidates(tx: Executor, area: LaneArea): Promise<LaneCandidate[]> {
  const postgres = dialectOf(tx) === 'postgres';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- onLane serves both tables' builders
  const onArea = (eb: any) => onLane(eb as never, area, 'lane_history.', postgres);
  if (!postgres) return tx.selectFrom('lane_history').select(CANDIDATE_COLUMNS).where(onArea).execute();
  return tx
    .selectFrom('lane_history')
    .leftJoin('carriers', (j) => j.onRef('carriers.id', '=', 'lane_history.carrier_id').on('carriers.org_id', '=', area.orgId))
    .select(CANDIDATE_COLUMNS)
    .select(['carriers.name as carrier_name', 'carriers.dot_number as carrier_dot_number'])
    .where(onArea)
    .execute();
}

/** What a recommendation shows of each ranked carrier: from the candidates when they carry it, else read. */
export async function carrierCards(tx: Executor, orgId: string, candidates: LaneCandidate[], carrierIds: string[]) {
  type Card = { id: string; external_reference_id: string; name: string; dot_number: string | null };
  const wanted = new Set(carrierIds);
  if (candidates.some((c) => c.carrier_name !== undefined)) {
    const cards = new Map<string, Card>();
    for (const c of candidates) {
      if (wanted.has(c.carrier_id) && c.carrier_name != null) {
        cards.set(c.carrier_id, { id: c.carrier_id, external_reference_id: c.carrier_external_reference_id, name: c.carrier_name, dot_number: c.carrier_dot_number ?? null });
      }
    }
    return cards;
  }
  const rows: Card[] = await tx.selectFrom('carriers').select(['id', 'external_reference_id', 'name', 'dot_number']).where('org_id', '=', orgId).where('id', 'in', [...wanted]).execute();
  return new Map(rows.map((c) => [c.id, c]));
}

/** Every lane with history in the organization. */
export function historyLanes(tx: Executor, orgId: string): Promise<LaneKey[]> {
  return tx.selectFrom('lane_history').select(['equipment_type', 'origin_cell', 'destination_cell']).distinct().where('org_id', '=', orgId).execute();
}

/** The organization's lane stats rebuilt from scratch for `lanes`. */
export async function replaceLaneStats(tx: Executor, orgId: string, lanes: LaneKey[], now: string): Promise<void> {
  await tx.deleteFrom('lane_stats').where('org_id', '=', orgId).execute();
  for (let i = 0; i < lanes.length; i += 500) await refreshLaneStats(tx, orgId, lanes.slice(i, i + 500), now);
}

/**
 * Recomputes the stats of the given lanes from the history. PostgreSQL: one statement (the lanes as
 * arrays joined to the history index, stats upserted, lanes left without history deleted); SQLite: one
 * grouped query, one delete, one insert (in the caller's transaction).
 */
export async function refreshLaneStats(tx: Executor, orgId: string, lanes: LaneKey[], now: string): Promise<void> {
  if (lanes.length === 0) return;
  if (dialectOf(tx) === 'postgres') {
    await sql`
      with lanes as (
        select * from unnest(${lanes.map((k) => k.equipment_type)}::text[], ${lanes.map((k) => k.origin_cell)}::int[], ${lanes.map((k) => k.destination_cell)}::int[])
          as k(equipment_type, origin_cell, destination_cell)),
      stats as (
        select k.equipment_type, k.origin_cell, k.destination_cell, count(*)::int as load_count,
               count(distinct h.carrier_id)::int as carrier_count, max(h.delivered_at) as last_delivered_at
        from lanes k join lane_history h
          on h.org_id = ${orgId} and h.equipment_type = k.equipment_type and h.origin_cell = k.origin_cell and h.destination_cell = k.destination_cell
        group by k.equipment_type, k.origin_cell, k.destination_cell),
      gone as (
        delete from lane_stats s using lanes k
        where s.org_id = ${orgId} and s.equipment_type = k.equipment_type and s.origin_cell = k.origin_cell and s.destination_cell = k.destination_cell
          and not exists (select 1 from stats t where t.equipment_type = k.equipment_type and t.origin_cell = k.origin_cell and t.destination_cell = k.destination_cell))
      insert into lane_stats (org_id, equipment_type, origin_cell, destination_cell, load_count, carrier_count, last_delivered_at, refreshed_at)
      select ${orgId}, equipment_type, origin_cell, destination_cell, load_count, carrier_count, last_delivered_at, ${now} from stats
      on conflict (org_id, equipment_type, origin_cell, destination_cell) do update set
        load_count = excluded.load_count, carrier_count = excluded.carrier_count,
        last_delivered_at = excluded.last_delivered_at, refreshed_at = excluded.refreshed_at`.execute(tx);
    return;
  }
  const tuples = sql.join(lanes.map((k) => sql`(${k.equipment_type}, ${k.origin_cell}, ${k.destination_cell})`));
  const stats = await sql<{ equipment_type: string; origin_cell: number; destination_cell: number; load_count: number; carrier_count: number; last_delivered_at: string }>`
    select equipment_type, origin_cell, destination_cell, count(*) as load_count, count(distinct carrier_id) as carrier_count,
           max(delivered_at) as last_delivered_at
    from lane_history
    where org_id = ${orgId} and (equipment_type, origin_cell, destination_cell) in (${tuples})
    group by equipment_type, origin_cell, destination_cell`.execute(tx);
  await sql`delete from lane_stats where org_id = ${orgId} and (equipment_type, origin_cell, destination_cell) in (${tuples})`.execute(tx);
  if (stats.rows.length > 0) {
    await tx
      .insertInto('lane_stats')
      .values(
        stats.rows.map((s) => ({
          org_id: orgId,
          equipment_type: s.equipment_type,
          origin_cell: Number(s.origin_cell),
          destination_cell: Number(s.destination_cell),
          load_count: Number(s.load_count),
          carrier_count: Number(s.carrier_count),
          last_delivered_at: s.last_delivered_at,
          refreshed_at: now,
        })),
      )
      .execute();
  }
}

/** The lane a load's history row sits on, if it has one. */
export async function historyLaneOfLoad(tx: Executor, loadId: string): Promise<LaneKey | undefined> {
  const [row] = await historyLaneOf(tx, { loadId });
  return row ? keyOf(row) : undefined;
}

const snapshotEquipment = prepared<{ orgId: string }, { equipment_type: string }>((db, p) =>
  db.selectFrom('market_rate_snapshots').select('equipment_type').distinct().where('org_id', '=', p('orgId')),
);

/** Equipment types that have any market snapshot in the organization. */
export async function equipmentWithSnapshots(tx: Executor, orgId: string): Promise<Set<string>> {
  return new Set((await snapshotEquipment(tx, { orgId })).map((r) => r.equipment_type));
}

/** Market snapshots in the lane's cells and boxes, newest first (`limit` of them, or all). */
export function snapshotsOnLane(tx: Executor, area: LaneArea, limit: number | null) {
  const postgres = dialectOf(tx) === 'postgres';
  let q = tx
    .selectFrom('market_rate_snapshots')
    .select(['origin_latitude', 'origin_longitude', 'destination_latitude', 'destination_longitude', 'rate_per_mile', 'rate_per_mile_high'])
    .where((eb) => onLane(eb as never, area, '', postgres))
    .orderBy('as_of', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc');
  if (limit !== null) q = q.limit(limit);
  return q.execute();
}
