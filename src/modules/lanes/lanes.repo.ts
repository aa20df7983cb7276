import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import type { UnderwayLoadStop } from '../../domain/backhaul.js';
import { BACKHAUL_STATUSES } from '../../domain/enums.js';
import { prepared, preparedByShape } from '../../lib/db/prepared.js';
import { cellOf } from '../../domain/grid.js';
import { laneEnds as laneEndsOf, type LaneKey } from '../../domain/lane.js';
import { laneCandidates, onLane, onLaneIn, snapshotsOnLane, type LaneArea, type LaneHistoryRow } from './lane-area.repo.js';
import { beginHistoryChange, refreshLaneStats, updateLaneStats } from './lane-stats.repo.js';

export { laneCandidates, onLane, refreshLaneStats, snapshotsOnLane, type LaneArea, type LaneHistoryRow };

import { laneKeyOf as keyOf } from './lane-history.js';

export interface LaneEnds {
  /** earlyArrival: the first pickup's early_arrival (a backhaul's window ends there). */
  origin: { locationId: string; latitude: number; longitude: number; earlyArrival: string | null } | null;
  destination: { locationId: string; latitude: number; longitude: number; lateArrival: string } | null;
}

// Compiled once: every load write runs these (src/lib/db/prepared.ts).
const stopsWithPlaces = prepared<
  { orgId: string; loadId: string },
  { stop_number: number; stop_type: string; location_id: string; early_arrival: string; late_arrival: string; latitude: number; longitude: number }
>((db, p) =>
  db
    .selectFrom('load_stops as s')
    .innerJoin('locations as l', 'l.id', 's.location_id')
    .select(['s.stop_number', 's.stop_type', 's.location_id', 's.early_arrival', 's.late_arrival', 'l.latitude', 'l.longitude'])
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
  early_arrival?: string;
  latitude: number;
  longitude: number;
}

/** A stored load's lane ends (docs/api.md, "Lane history and carrier recommendations"), with their places; from `stops` when the caller has them already. */
export async function laneEnds(tx: Executor, orgId: string, loadId: string, stops?: readonly LaneStop[]): Promise<LaneEnds> {
  const { origin: first, destination: last } = laneEndsOf(stops ?? (await stopsWithPlaces(tx, { orgId, loadId })));
  return {
    origin: first ? { locationId: first.location_id, latitude: first.latitude, longitude: first.longitude, earlyArrival: first.early_arrival ?? null } : null,
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
  return new Map(
    rows.map((r) => [r.load_id, keyOf(Object.assign({}, r, { origin_cell: Number(r.origin_cell), destination_cell: Number(r.destination_cell) }))]),
  );
}

/** A location moved (re-geocoded): the history rows that start or end there follow it, and the stats of the lanes they left and joined. */
export async function relocateLaneHistory(
  tx: Executor,
  orgId: string,
  location: { id: string; latitude: number; longitude: number },
  now: string,
): Promise<LaneKey[]> {
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
  await beginHistoryChange(tx, orgId);
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
  const moved = [...before, ...(await affected())].map(keyOf);
  await updateLaneStats(tx, orgId, { added: [], removed: [], moved }, now);
  return moved;
}

/** What a recommendation shows of each ranked carrier. */
export async function carrierCards(tx: Executor, orgId: string, carrierIds: string[]) {
  const rows = await cardsRead(tx, { orgId, carrierIds });
  return new Map(rows.map((c) => [c.id, c]));
}

// carrierCards' statement, compiled once per number of carriers.
const cardsRead = preparedByShape<
  { orgId: string; carrierIds: readonly string[] },
  { id: string; external_reference_id: string; name: string; dot_number: string | null }
>(
  ({ carrierIds }) => String(carrierIds.length),
  (tx, { orgId, carrierIds }) =>
    tx
      .selectFrom('carriers')
      .select(['id', 'external_reference_id', 'name', 'dot_number'])
      .where('org_id', '=', orgId)
      .where('id', 'in', [...carrierIds]),
  ({ orgId, carrierIds }) => [orgId, ...carrierIds],
);

/** Every lane with history in the organization. */
export function historyLanes(tx: Executor, orgId: string): Promise<LaneKey[]> {
  return tx.selectFrom('lane_history').select(['equipment_type', 'origin_cell', 'destination_cell']).distinct().where('org_id', '=', orgId).execute();
}

/** The organization's lane stats (and lane carriers) rebuilt from scratch for `lanes`. */
export async function replaceLaneStats(tx: Executor, orgId: string, lanes: LaneKey[], now: string): Promise<void> {
  await tx.deleteFrom('lane_stats').where('org_id', '=', orgId).execute();
  await tx.deleteFrom('lane_carriers').where('org_id', '=', orgId).execute();
  await refreshLaneStats(tx, orgId, lanes, now);
}

/** The lane a load's history row sits on, if it has one. */
export async function historyLaneOfLoad(tx: Executor, loadId: string): Promise<LaneKey | undefined> {
  const [row] = await historyLaneOf(tx, { loadId });
  return row ? keyOf(row) : undefined;
}

/** A load on its way (COVERED … AT_RECEIVER: a backhaul, docs/api.md, "Stop actuals, tracking events and recommendation evidence") of one of `carrierIds`, with its stops' places. */
export type UnderwayStop = UnderwayLoadStop & { late_arrival: string };

/**
 * The stops of the organization's loads on their way carried by `carrierIds` whose delivery deadline
 * (loads.delivery_deadline: the last delivery's late_arrival, canonical UTC text) falls within `due`: a
 * backhaul delivers in a window before the pickup. One range of the partial index loads_backhaul_idx
 * (org, carrier, deadline; migration 0021) per carrier: at a million loads the ranked carriers have
 * hundreds of loads on their way and a handful due near a given pickup, and probing each one's stops for
 * a deadline in the window was 5 ms of a 9 ms recommendation read. A load whose deadline is not filled yet
 * (written before 0021 and not reached by the fill after the migrations, or by an older instance during a
 * rolling deploy: docs/deployment.md) is found as before, by a stop due in the window (the index's null
 * range). The caller checks each load's deadline against its own pickup from the stops read here.
 */
export async function underwayStops(tx: Executor, orgId: string, carrierIds: readonly string[], due: { from: string; to: string }): Promise<UnderwayStop[]> {
  if (carrierIds.length === 0) return [];
  return underwayRead(tx, { orgId, carrierIds, due });
}

// underwayStops' statement, compiled once per number of carriers.
const underwayRead = preparedByShape<{ orgId: string; carrierIds: readonly string[]; due: { from: string; to: string } }, UnderwayStop>(
  ({ carrierIds }) => String(carrierIds.length),
  (tx, { orgId, carrierIds, due }) => {
    const onTheirWay = () =>
      tx
        .selectFrom('loads as l')
        .innerJoin('load_stops as s', 's.load_id', 'l.id')
        .innerJoin('locations as lo', 'lo.id', 's.location_id')
        .select([
          'l.id as load_id',
          'l.external_reference_id',
          'l.carrier_id',
          's.stop_number',
          's.stop_type',
          's.early_arrival',
          's.late_arrival',
          'lo.latitude',
          'lo.longitude',
        ])
        .where('l.org_id', '=', orgId)
        .where('l.carrier_id', 'in', [...carrierIds])
        // Literal statuses: the partial index's own condition, so both engines use it.
        .where(sql<boolean>`l.status in ${sql.raw(`(${BACKHAUL_STATUSES.map((s) => `'${s}'`).join(', ')})`)}`);
    return onTheirWay()
      .where('l.delivery_deadline', '>=', due.from)
      .where('l.delivery_deadline', '<=', due.to)
      .unionAll(
        onTheirWay()
          .where('l.delivery_deadline', 'is', null)
          .where((eb) =>
            eb.exists(
              eb
                .selectFrom('load_stops as d')
                .select(sql`1`.as('one'))
                .whereRef('d.load_id', '=', 'l.id')
                .where('d.org_id', '=', orgId)
                .where('d.late_arrival', '>=', due.from)
                .where('d.late_arrival', '<=', due.to),
            ),
          ),
      ) as never;
  },
  ({ orgId, carrierIds, due }) => [orgId, ...carrierIds, due.from, due.to, orgId, ...carrierIds, orgId, due.from, due.to],
);

/** The market snapshots on the area, newest first, with what the evidence's price against the market needs. */
export function marketHistoryOnLane(tx: Executor, area: LaneArea) {
  const onArea = onLaneIn(tx);
  return tx
    .selectFrom('market_rate_snapshots')
    .select([
      'origin_latitude',
      'origin_longitude',
      'destination_latitude',
      'destination_longitude',
      'rate_per_mile',
      'rate_per_mile_high',
      'currency',
      'as_of',
    ])
    .where((eb) => onArea(eb as never, area, ''))
    .orderBy('as_of', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

const orgGrace = prepared<{ orgId: string }, { on_time_grace_minutes: number | null }>((db, p) =>
  db.selectFrom('organizations').select('on_time_grace_minutes').where('id', '=', p('orgId')),
);

/** The organization's own on-time grace in minutes, or null for the default. */
export async function graceMinutesOf(tx: Executor, orgId: string): Promise<number | null> {
  const [row] = await orgGrace(tx, { orgId });
  return row?.on_time_grace_minutes ?? null;
}

const anySnapshot = prepared<{ orgId: string; equipment: string }, { one: number }>((db, p) =>
  db
    .selectFrom('market_rate_snapshots')
    .select((eb) => eb.lit(1).as('one'))
    .where('org_id', '=', p('orgId'))
    .where('equipment_type', '=', p('equipment'))
    .limit(1),
);

/**
 * Which of `equipment` have any market snapshot in the organization: one index probe per type (a
 * `select distinct` over the organization's snapshots read them all: 28 ms at 160,000 snapshots on
 * PostgreSQL, in every changed batch's answers).
 */
export async function equipmentWithSnapshots(tx: Executor, orgId: string, equipment: Iterable<string>): Promise<Set<string>> {
  const found = new Set<string>();
  for (const e of new Set(equipment)) if ((await anySnapshot(tx, { orgId, equipment: e })).length > 0) found.add(e);
  return found;
}
