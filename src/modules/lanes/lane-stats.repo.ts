import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { greatestOf, writesInWith } from '../../lib/db/capabilities.js';
import { holdLaneStats } from '../../lib/db/locks.js';
import { laneKeyId, type LaneKey } from '../../domain/lane.js';

/**
 * The lane stats (count, distinct carriers, last delivery per lane: the dashboard's lanes) and each
 * lane's carriers with their loads on it (`lane_carriers`), kept current by the transaction that writes
 * the history. Rows only added to a lane add up: the count and the last delivery directly, a carrier
 * counted when its `lane_carriers` row is new. A lane that lost rows (a load deleted, no longer
 * delivered, given another carrier or delivery, its place moved) is recounted from its history. A
 * row replaced by one with the same lane, carrier and delivery (a tracking event, a rate corrected)
 * changes nothing here. So a batch or an import chunk of new history costs what it adds, not the
 * lanes' whole history (which a recount per chunk made quadratic over an import).
 */

/** What one lane history row counts for in its lane's stats. */
export interface HistoryFact extends LaneKey {
  carrier_id: string;
  delivered_at: string;
}

/** What a transaction did to the lane history: rows added, rows removed (a replaced row is both), lanes whose rows moved. */
export interface HistoryChange {
  added: readonly HistoryFact[];
  removed: readonly HistoryFact[];
  moved?: readonly LaneKey[];
}

const FACT_COLUMNS = ['equipment_type', 'origin_cell', 'destination_cell', 'carrier_id', 'delivered_at'] as const;
const IDS_PER_STATEMENT = 500;
const LANES_PER_STATEMENT = 300;
const ROWS_PER_STATEMENT = 500;

const keyOf = (k: LaneKey): LaneKey => ({ equipment_type: k.equipment_type, origin_cell: Number(k.origin_cell), destination_cell: Number(k.destination_cell) });
const factOf = (r: HistoryFact): HistoryFact => Object.assign(keyOf(r), { carrier_id: r.carrier_id, delivered_at: r.delivered_at });
const factId = (f: HistoryFact) => `${laneKeyId(f)}|${f.carrier_id}|${f.delivered_at}`;
const slices = <T>(xs: readonly T[], n: number): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, (i + 1) * n));

/**
 * Takes the organization's turn at its lane stats before a write touches its history (PostgreSQL: an
 * advisory lock to commit). Taken before the first history row is locked, always: a writer that held
 * history rows while waiting for the turn, beside one that held the turn while waiting for those rows,
 * would deadlock (a location batch re-geocoding two places beside a load write on one of them).
 */
export async function beginHistoryChange(tx: Executor, orgId: string): Promise<void> {
  await holdLaneStats(tx, orgId);
}

/** Deletes the history rows of `loadIds`, answering what they counted for (after beginHistoryChange). */
export async function removeHistory(tx: Executor, orgId: string, loadIds: readonly string[]): Promise<HistoryFact[]> {
  const out: HistoryFact[] = [];
  for (const ids of slices(loadIds, IDS_PER_STATEMENT)) {
    const rows = await tx
      .deleteFrom('lane_history')
      .where('org_id', '=', orgId)
      .where('load_id', 'in', ids)
      .returning([...FACT_COLUMNS])
      .execute();
    for (const r of rows) out.push(factOf(r));
  }
  return out;
}

/** Brings the stats of the lanes `change` touched up to date, in the transaction that made it (begun with beginHistoryChange). */
export async function updateLaneStats(tx: Executor, orgId: string, change: HistoryChange, now: string): Promise<void> {
  // A removed row given back unchanged (same lane, carrier and delivery) cancels out.
  const unmatched = new Map<string, number>();
  for (const f of change.removed) unmatched.set(factId(f), (unmatched.get(factId(f)) ?? 0) + 1);
  const added: HistoryFact[] = [];
  for (const f of change.added) {
    const left = unmatched.get(factId(f)) ?? 0;
    if (left > 0) unmatched.set(factId(f), left - 1);
    else added.push(f);
  }
  const recount = new Map<string, LaneKey>();
  for (const f of change.removed) if ((unmatched.get(factId(f)) ?? 0) > 0) recount.set(laneKeyId(f), keyOf(f));
  for (const k of change.moved ?? []) recount.set(laneKeyId(k), keyOf(k));
  const grown = added.filter((f) => !recount.has(laneKeyId(f)));
  if (grown.length === 0 && recount.size === 0) return;
  // The organization's turn (PostgreSQL) is held since beginHistoryChange: an addition and a recount of
  // the same lane never overwrite each other, and a write takes it once (a round trip).
  if (grown.length > 0) await addToLanes(tx, orgId, grown, now);
  if (recount.size > 0) await recountLanes(tx, orgId, [...recount.values()], now);
}

/** Adds history rows new to their lanes (no row of those lanes removed in the same change). */
async function addToLanes(tx: Executor, orgId: string, facts: readonly HistoryFact[], now: string): Promise<void> {
  const pairs = new Map<string, { fact: HistoryFact; n: number }>();
  const lanes = new Map<string, { key: LaneKey; n: number; last: string; carriers: number }>();
  for (const f of facts) {
    const pair = `${laneKeyId(f)}|${f.carrier_id}`;
    const p = pairs.get(pair);
    if (p) p.n += 1;
    else pairs.set(pair, { fact: f, n: 1 });
    const lane = lanes.get(laneKeyId(f));
    if (!lane) lanes.set(laneKeyId(f), { key: keyOf(f), n: 1, last: f.delivered_at, carriers: 0 });
    else {
      lane.n += 1;
      if (f.delivered_at > lane.last) lane.last = f.delivered_at;
    }
  }
  for (const part of slices([...pairs.values()], ROWS_PER_STATEMENT)) {
    const counted = await tx
      .insertInto('lane_carriers')
      .values(part.map(({ fact, n }) => ({ org_id: orgId, ...keyOf(fact), carrier_id: fact.carrier_id, loads: n })))
      .onConflict((oc) =>
        oc
          .columns(['org_id', 'equipment_type', 'origin_cell', 'destination_cell', 'carrier_id'])
          .doUpdateSet({ loads: sql`lane_carriers.loads + excluded.loads` }),
      )
      .returning(['equipment_type', 'origin_cell', 'destination_cell', 'carrier_id', 'loads'])
      .execute();
    // A carrier whose loads on the lane are now just those added was new to it.
    for (const r of counted) {
      const key = keyOf(r);
      if (Number(r.loads) === pairs.get(`${laneKeyId(key)}|${r.carrier_id}`)!.n) lanes.get(laneKeyId(key))!.carriers += 1;
    }
  }
  const later = greatestOf(tx, sql`lane_stats.last_delivered_at`, sql`excluded.last_delivered_at`);
  for (const part of slices([...lanes.values()], ROWS_PER_STATEMENT)) {
    await tx
      .insertInto('lane_stats')
      .values(part.map((l) => ({ org_id: orgId, ...l.key, load_count: l.n, carrier_count: l.carriers, last_delivered_at: l.last, refreshed_at: now })))
      .onConflict((oc) =>
        oc.columns(['org_id', 'equipment_type', 'origin_cell', 'destination_cell']).doUpdateSet({
          load_count: sql`lane_stats.load_count + excluded.load_count`,
          carrier_count: sql`lane_stats.carrier_count + excluded.carrier_count`,
          last_delivered_at: later,
          refreshed_at: sql`excluded.refreshed_at`,
        }),
      )
      .execute();
  }
}

/**
 * Recounts the given lanes from their history: their stats and carriers. PostgreSQL: two statements
 * (each: the lanes as arrays joined to the history index, rows upserted, rows left without history
 * deleted); SQLite: a grouped read and a rewrite of each (in the caller's transaction).
 */
export async function refreshLaneStats(tx: Executor, orgId: string, lanes: readonly LaneKey[], now: string): Promise<void> {
  await holdLaneStats(tx, orgId);
  await recountLanes(tx, orgId, lanes, now);
}

async function recountLanes(tx: Executor, orgId: string, lanes: readonly LaneKey[], now: string): Promise<void> {
  for (const part of slices(lanes, LANES_PER_STATEMENT)) {
    if (writesInWith(tx)) await recountInTwoStatements(tx, orgId, part, now);
    else await recountStepByStep(tx, orgId, part, now);
  }
}

/** Two statements, each: the lanes as arrays joined to the history index, rows upserted, rows left without history deleted (in its WITH clause). */
async function recountInTwoStatements(tx: Executor, orgId: string, lanes: readonly LaneKey[], now: string): Promise<void> {
  const lanesCte = sql`lanes as (
    select * from unnest(${lanes.map((k) => k.equipment_type)}::text[], ${lanes.map((k) => k.origin_cell)}::int[], ${lanes.map((k) => k.destination_cell)}::int[])
      as k(equipment_type, origin_cell, destination_cell))`;
  const onLane = sql`h.org_id = ${orgId} and h.equipment_type = k.equipment_type and h.origin_cell = k.origin_cell and h.destination_cell = k.destination_cell`;
  await sql`
    with ${lanesCte},
    stats as (
      select k.equipment_type, k.origin_cell, k.destination_cell, count(*)::int as load_count,
             count(distinct h.carrier_id)::int as carrier_count, max(h.delivered_at) as last_delivered_at
      from lanes k join lane_history h on ${onLane}
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
  await sql`
    with ${lanesCte},
    counts as (
      select k.equipment_type, k.origin_cell, k.destination_cell, h.carrier_id, count(*)::int as loads
      from lanes k join lane_history h on ${onLane}
      group by k.equipment_type, k.origin_cell, k.destination_cell, h.carrier_id),
    gone as (
      delete from lane_carriers c using lanes k
      where c.org_id = ${orgId} and c.equipment_type = k.equipment_type and c.origin_cell = k.origin_cell and c.destination_cell = k.destination_cell
        and not exists (select 1 from counts t where t.equipment_type = k.equipment_type and t.origin_cell = k.origin_cell and t.destination_cell = k.destination_cell and t.carrier_id = c.carrier_id))
    insert into lane_carriers (org_id, equipment_type, origin_cell, destination_cell, carrier_id, loads)
    select ${orgId}, equipment_type, origin_cell, destination_cell, carrier_id, loads from counts
    on conflict (org_id, equipment_type, origin_cell, destination_cell, carrier_id) do update set loads = excluded.loads`.execute(tx);
}

/** A grouped read, then each table's rows of the lanes deleted and written again (in the caller's transaction). */
async function recountStepByStep(tx: Executor, orgId: string, lanes: readonly LaneKey[], now: string): Promise<void> {
  const tuples = sql.join(lanes.map((k) => sql`(${k.equipment_type}, ${k.origin_cell}, ${k.destination_cell})`));
  const stats = await sql<{
    equipment_type: string;
    origin_cell: number;
    destination_cell: number;
    load_count: number;
    carrier_count: number;
    last_delivered_at: string;
  }>`
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
          ...keyOf(s),
          load_count: Number(s.load_count),
          carrier_count: Number(s.carrier_count),
          last_delivered_at: s.last_delivered_at,
          refreshed_at: now,
        })),
      )
      .execute();
  }
  await sql`delete from lane_carriers where org_id = ${orgId} and (equipment_type, origin_cell, destination_cell) in (${tuples})`.execute(tx);
  await sql`insert into lane_carriers (org_id, equipment_type, origin_cell, destination_cell, carrier_id, loads)
    select org_id, equipment_type, origin_cell, destination_cell, carrier_id, count(*) from lane_history
    where org_id = ${orgId} and (equipment_type, origin_cell, destination_cell) in (${tuples})
    group by org_id, equipment_type, origin_cell, destination_cell, carrier_id`.execute(tx);
}
