import { sql } from 'kysely';
import type { DataStore } from './index.js';
import type { Executor } from './executor.js';
import { dialectOf } from './executor.js';
import type { LaneKey } from '../../domain/lane.js';

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

/** The stats of `lanes` refreshed as one atomic change: PostgreSQL's one statement is; SQLite's three run in a transaction. */
export async function refreshLaneStatsAtomically(store: DataStore, orgId: string, lanes: LaneKey[], now: string): Promise<void> {
  if (store.dialect === 'postgres') await refreshLaneStats(store.db, orgId, lanes, now);
  else await store.db.transaction().execute((tx) => refreshLaneStats(tx, orgId, lanes, now));
}
