import { sql, type ExpressionBuilder } from 'kysely';
import { boxWithin, cellsWithin, nearWithin, type Near } from '../../domain/grid.js';
import type { LaneSnapshot } from '../../domain/lane.js';
import type { HistoryLoad } from '../../domain/scoring.js';
import type { Coordinates } from '../../geo/index.js';
import type { Executor } from '../../lib/db/index.js';
import { bindsArrays, readsInProcess, sendsRowsAsJson } from '../../lib/db/capabilities.js';
import type { Database } from '../../lib/db/types.js';
import { preparedByShape } from '../../lib/db/prepared.js';

type Box = { minLat: number; maxLat: number; minLon: number; maxLon: number };

/** The area of a lane as the reads see it (docs/api.md, "Lane history and carrier recommendations"): the grid cells and boxes around both ends, by equipment. */
export interface LaneArea {
  orgId: string;
  equipmentType: string;
  originCells: number[];
  destinationCells: number[];
  originBox: Box;
  destinationBox: Box;
  /** One lane's: the ellipses around its ends (nearWithin); not for the union of several lanes' areas. */
  originNear?: Near;
  destinationNear?: Near;
}

/** The area within `radiusMiles` of both ends of a lane; callers keep the rows within the radius exactly. */
export function laneAreaOf(orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates, radiusMiles: number): LaneArea {
  return {
    orgId,
    equipmentType,
    originCells: cellsWithin(origin.latitude, origin.longitude, radiusMiles),
    destinationCells: cellsWithin(destination.latitude, destination.longitude, radiusMiles),
    originBox: boxWithin(origin.latitude, origin.longitude, radiusMiles),
    destinationBox: boxWithin(destination.latitude, destination.longitude, radiusMiles),
    originNear: nearWithin(origin.latitude, origin.longitude, radiusMiles),
    destinationNear: nearWithin(destination.latitude, destination.longitude, radiusMiles),
  };
}

/**
 * The area around several lanes at once: the union of their cells and boxes (a superset of each; no
 * ellipses). Each distinct pair of places once: a busy lane's open loads mostly share their facilities
 * (the follow-up ranks a hundred loads of one dock pair together).
 */
export function unionAreaOf(
  orgId: string,
  equipmentType: string,
  lanes: readonly { origin: Coordinates; destination: Coordinates }[],
  radiusMiles: number,
): LaneArea {
  const distinct = new Map(lanes.map((l) => [`${l.origin.latitude},${l.origin.longitude}|${l.destination.latitude},${l.destination.longitude}`, l]));
  const areas = [...distinct.values()].map((l) => laneAreaOf(orgId, equipmentType, l.origin, l.destination, radiusMiles));
  const box = (pick: (a: LaneArea) => Box) => ({
    minLat: Math.min(...areas.map((a) => pick(a).minLat)),
    maxLat: Math.max(...areas.map((a) => pick(a).maxLat)),
    minLon: Math.min(...areas.map((a) => pick(a).minLon)),
    maxLon: Math.max(...areas.map((a) => pick(a).maxLon)),
  });
  return {
    orgId,
    equipmentType,
    originCells: [...new Set(areas.flatMap((a) => a.originCells))],
    destinationCells: [...new Set(areas.flatMap((a) => a.destinationCells))],
    originBox: box((a) => a.originBox),
    destinationBox: box((a) => a.destinationBox),
  };
}

/**
 * A lane's ellipses as a condition (nearWithin's, in SQL): of the box's rows, about 4 in 10 lie beyond the
 * radius at one end or the other, and each was read, parsed and weighed 0 (a third of a recommendation's
 * read at a million loads). Absent (true) for a union of areas.
 */
function nearEnds(a: LaneArea) {
  const within = (n: Near, lat: string, lon: string) =>
    sql<boolean>`(${sql.ref(lat)} - ${n.latitude}) * (${sql.ref(lat)} - ${n.latitude}) * ${n.latScale2} + (${sql.ref(lon)} - ${n.longitude}) * (${sql.ref(lon)} - ${n.longitude}) * ${n.lonScale2} <= ${n.reach2}`;
  return [
    ...(a.originNear ? [within(a.originNear, 'lane_history.origin_latitude', 'lane_history.origin_longitude')] : []),
    ...(a.destinationNear ? [within(a.destinationNear, 'lane_history.destination_latitude', 'lane_history.destination_longitude')] : []),
  ];
}

/**
 * The lane condition shared by the history and the market snapshots (both carry the same columns), for
 * the recommendations and the dashboard's lane pages alike: equipment, origin and destination cells (what
 * the index serves) and boxes (checked in the database).
 * `cellArrays` (PostgreSQL): the cells as two array parameters, `= any($n::integer[])`, so the
 * statement's text and its 13 parameters are the same for every lane: it is a named prepared statement,
 * parsed and planned once per connection. As an `IN` list its text varied with the number of cells
 * and its 40-odd parameters kept it unnamed (src/lib/db/postgres.ts), parsed and planned on every request
 * (about 0.3 ms of PostgreSQL's time per recommendation read, docs/deployment.md).
 */
export function onLane(eb: ExpressionBuilder<Database, 'lane_history' | 'market_rate_snapshots'>, a: LaneArea, table = '', cellArrays = false) {
  const c = (name: string) => `${table}${name}` as 'org_id';
  const inCells = (column: string, cells: number[]) =>
    cellArrays ? sql<boolean>`${sql.ref(c(column))} = any(${cells}::integer[])` : eb(c(column), 'in', cells as never);
  return eb.and([
    eb(c('org_id'), '=', a.orgId),
    eb(c('equipment_type'), '=', a.equipmentType),
    inCells('origin_cell', a.originCells),
    inCells('destination_cell', a.destinationCells),
    eb(c('origin_latitude'), '>=', a.originBox.minLat as never),
    eb(c('origin_latitude'), '<=', a.originBox.maxLat as never),
    eb(c('origin_longitude'), '>=', a.originBox.minLon as never),
    eb(c('origin_longitude'), '<=', a.originBox.maxLon as never),
    eb(c('destination_latitude'), '>=', a.destinationBox.minLat as never),
    eb(c('destination_latitude'), '<=', a.destinationBox.maxLat as never),
    eb(c('destination_longitude'), '>=', a.destinationBox.minLon as never),
    eb(c('destination_longitude'), '<=', a.destinationBox.maxLon as never),
  ]);
}

/** The lane condition as this executor's engine states it best (PostgreSQL: the cells as array parameters). */
export const onLaneIn =
  (tx: Executor) =>
  (eb: ExpressionBuilder<Database, 'lane_history' | 'market_rate_snapshots'>, a: LaneArea, table = '') =>
    onLane(eb, a, table, bindsArrays(tx));

/** A history row of the lane as the ranking and the evidence take it. */
export interface LaneHistoryRow extends HistoryLoad {
  carrierRef: string;
  deliveredAtMs: number;
  totalDistance: number | null;
  stopOutcomes: string;
}

const CANDIDATE_COLUMNS = [
  'carrier_id',
  'carrier_external_reference_id',
  'origin_latitude',
  'origin_longitude',
  'destination_latitude',
  'destination_longitude',
  'delivered_at',
  'carrier_rate_total',
  'carrier_rate_currency',
  'total_distance',
  'stop_outcomes',
] as const;

type Candidate = [string, string, number, number, number, number, string, number | string | null, string | null, number | string | null, string | null];

const historyRow = (c: Candidate): LaneHistoryRow => ({
  carrierId: c[0],
  carrierRef: c[1],
  origin: { latitude: c[2], longitude: c[3] },
  destination: { latitude: c[4], longitude: c[5] },
  deliveredAt: c[6],
  deliveredAtMs: Date.parse(c[6]),
  carrierRateTotal: c[7] === null ? null : Number(c[7]),
  carrierRateCurrency: c[8],
  totalDistance: c[9] === null ? null : Number(c[9]),
  stopOutcomes: c[10] ?? '',
});

/**
 * History rows of one equipment type whose origin and destination lie in the area's cells (the index)
 * and boxes (checked in the database, so rows far outside the radius never reach the scoring).
 * PostgreSQL sends the rows as one JSON array (parsed natively: as rows, the driver's per-field parsing
 * and the strings it made were a quarter of the server's CPU a recommendation, garbage collection
 * included) and reads the organization's on-time grace in the same statement (a round trip saved;
 * `graceMinutes` undefined on SQLite, which reads it by itself). The ranked carriers' cards are read
 * afterwards on both engines (carrierCards): joined here, PostgreSQL looked each row's carrier up.
 */
export async function laneCandidates(tx: Executor, area: LaneArea): Promise<{ rows: LaneHistoryRow[]; graceMinutes?: number | null }> {
  if (!sendsRowsAsJson(tx)) return { rows: ((await candidateRead(tx, area)) as unknown as Candidate[]).map(historyRow) };
  const [found] = (await candidateRead(tx, area)) as unknown as { rows: Candidate[] | null; org_grace_minutes: number | null }[];
  return { rows: (found?.rows ?? []).map(historyRow), graceMinutes: found?.org_grace_minutes ?? null };
}

/** An ellipse's values in the order `nearEnds` writes them. */
const nearValues = (n: Near | undefined) => (n ? [n.latitude, n.latitude, n.latScale2, n.longitude, n.longitude, n.lonScale2, n.reach2] : []);
const boxValues = (b: Box) => [b.minLat, b.maxLat, b.minLon, b.maxLon];

/**
 * laneCandidates' statement, compiled once per shape (the cells' counts on SQLite, whose IN lists vary;
 * whether the ends have ellipses). SQLite's rows come as arrays of CANDIDATE_COLUMNS (no object per row).
 */
const candidateRead = preparedByShape<LaneArea, unknown>(
  (a) => `${a.originCells.length}|${a.destinationCells.length}|${a.originNear ? 1 : 0}${a.destinationNear ? 1 : 0}`,
  (tx, area) => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- onLane serves both tables' builders
    const onArea = (eb: any) => eb.and([onLane(eb as never, area, 'lane_history.', bindsArrays(tx)), ...nearEnds(area)]);
    if (!sendsRowsAsJson(tx)) return tx.selectFrom('lane_history').select(CANDIDATE_COLUMNS).where(onArea);
    return tx
      .selectFrom('lane_history')
      .select(sql<Candidate[] | null>`json_agg(json_build_array(${sql.raw(CANDIDATE_COLUMNS.map((c) => `lane_history.${c}`).join(', '))}))`.as('rows'))
      .select((eb) =>
        eb.selectFrom('organizations').select('organizations.on_time_grace_minutes').where('organizations.id', '=', area.orgId).as('org_grace_minutes'),
      )
      .where(onArea);
  },
  (a, dialect) => [
    ...(sendsRowsAsJson(dialect) ? [a.orgId] : []),
    a.orgId,
    a.equipmentType,
    ...(bindsArrays(dialect) ? [a.originCells, a.destinationCells] : [...a.originCells, ...a.destinationCells]),
    ...boxValues(a.originBox),
    ...boxValues(a.destinationBox),
    ...nearValues(a.originNear),
    ...nearValues(a.destinationNear),
  ],
  { arrayRows: true },
);

/** Market snapshots in the lane's cells and boxes, newest first (`limit` of them, or all). */
export function snapshotsOnLane(tx: Executor, area: LaneArea, limit: number | null): Promise<LaneSnapshot[]> {
  let q = tx
    .selectFrom('market_rate_snapshots')
    .select(SNAPSHOT_COLUMNS)
    .where((eb) => onLaneIn(tx)(eb as never, area, ''))
    .orderBy('as_of', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc');
  if (limit !== null) q = q.limit(limit);
  return q.execute();
}

const SNAPSHOT_COLUMNS = [
  'origin_latitude',
  'origin_longitude',
  'destination_latitude',
  'destination_longitude',
  'rate_per_mile',
  'rate_per_mile_high',
] as const;

/**
 * The newest `limit` market snapshots in each of `areas` (a list per area, newest first: as_of, then
 * created_at, then id). PostgreSQL: ONE statement, the areas as a JSON recordset each read through the
 * snapshots' lane index by a lateral subquery, for the lanes the kept prices do not hold
 * (lane-cache.ts). The answers of a batch's hundred changed open loads each show a max_buy_rate from
 * the market (docs/api.md, "Loads"); read one load at a time, inside the batch's transaction on its one
 * connection, that was a hundred reads in a row (about 50 ms of the 124 ms changed-load batch at 100,000
 * loads: BENCHMARKS.md, "sixth round"). SQLite: one read per area, in process (microseconds each).
 */
export async function newestSnapshotsOnLanes(tx: Executor, areas: readonly LaneArea[], limit: number): Promise<LaneSnapshot[][]> {
  if (areas.length === 0) return [];
  if (readsInProcess(tx) || areas.length === 1) return Promise.all(areas.map((area) => snapshotsOnLane(tx, area, limit)));
  const keys = JSON.stringify(
    areas.map((a, i) => ({
      i,
      org_id: a.orgId,
      equipment_type: a.equipmentType,
      oc: a.originCells,
      dc: a.destinationCells,
      o0: a.originBox.minLat,
      o1: a.originBox.maxLat,
      o2: a.originBox.minLon,
      o3: a.originBox.maxLon,
      d0: a.destinationBox.minLat,
      d1: a.destinationBox.maxLat,
      d2: a.destinationBox.minLon,
      d3: a.destinationBox.maxLon,
    })),
  );
  const { rows } = await sql<LaneSnapshot & { i: number }>`
    select k.i, s.origin_latitude, s.origin_longitude, s.destination_latitude, s.destination_longitude, s.rate_per_mile, s.rate_per_mile_high
    from json_to_recordset(${keys}::json) as k(i integer, org_id text, equipment_type text, oc integer[], dc integer[],
      o0 float8, o1 float8, o2 float8, o3 float8, d0 float8, d1 float8, d2 float8, d3 float8)
    cross join lateral (
      select m.origin_latitude, m.origin_longitude, m.destination_latitude, m.destination_longitude, m.rate_per_mile, m.rate_per_mile_high,
             m.as_of, m.created_at, m.id
      from market_rate_snapshots m
      where m.org_id = k.org_id and m.equipment_type = k.equipment_type
        and m.origin_cell = any(k.oc) and m.destination_cell = any(k.dc)
        and m.origin_latitude >= k.o0 and m.origin_latitude <= k.o1 and m.origin_longitude >= k.o2 and m.origin_longitude <= k.o3
        and m.destination_latitude >= k.d0 and m.destination_latitude <= k.d1 and m.destination_longitude >= k.d2 and m.destination_longitude <= k.d3
      order by m.as_of desc, m.created_at desc, m.id desc
      limit ${limit}
    ) s
    order by k.i, s.as_of desc, s.created_at desc, s.id desc`.execute(tx);
  const out: LaneSnapshot[][] = areas.map(() => []);
  for (const { i, ...row } of rows) out[i]!.push(row);
  return out;
}
