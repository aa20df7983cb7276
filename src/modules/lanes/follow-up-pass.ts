import type { Executor } from '../../lib/db/index.js';
import { cellCentre, cellOf, cellsWithin, CELL_DEGREES } from '../../domain/grid.js';
import { laneEnds, laneKeyId, type LaneKey } from '../../domain/lane.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { ChangeSet, WritePipeline } from '../shared/write-pipeline.js';
import type { LanesService } from './lanes.service.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import type { LaneStop } from './lanes.repo.js';
import {
  advanceCursor,
  followUpPosition,
  followUpTurn,
  lanesOf,
  loadEventsAfter,
  loadsAtLocations,
  loadsWithStops,
  unwatch,
  upsertWatch,
  watchedNear,
  watchRows,
  type WatchedLoad,
  type WatchRow,
  pickupTimes,
} from './watch.repo.js';

/**
 * One pass of the recommendations follow-up (recommendations.feed.ts) over an organization's outbox, in
 * its steps: read the window of events after the cursor, find the watched loads to rank again, rank
 * them, announce the changed ones and move the cursor.
 */

// Events read per pass (each pass one transaction; four columns an event); a busier outbox is worked
// through in several passes. Ten batches of 100 loads are one pass: the lanes they share ranked once.
const WINDOW = 1000;
// Half the diagonal of a grid cell, in miles (a history row anywhere in a cell may be near a load).
const HALF_CELL_DIAGONAL_MILES = 50 * CELL_DEGREES;

/** What the follow-up has done in this process (benchmarks, diagnosis). */
export interface FollowUpStats {
  passes: number;
  ranked: number;
  announced: number;
}

/** What a pass uses. `giveWay`: a new pass's way of letting requests go first (recommendations.feed.ts). */
export interface PassDeps {
  pipeline: WritePipeline;
  lanes: Pick<LanesService, 'recommendMany'>;
  radiusMiles: number;
  /** Announcements written per transaction. */
  slice: number;
  stats: FollowUpStats;
  giveWay: () => () => Promise<void>;
}

/** The outbox after the cursor as a pass reads it: what moved, and up to where the cursor goes. */
interface OutboxWindow {
  after: number;
  last: number;
  until: number;
  /** Each lane once (a window of a busy push names the same few lanes hundreds of times). */
  moved: LaneKey[];
  /** Loads written in the window. */
  written: Set<string>;
  /** Locations re-geocoded in the window (their lanes moved). */
  relocated: string[];
}

class CursorMoved extends Error {}

/** The same lane, equipment, carrier and reference (what ranking and the event read from a watch row). */
const sameWatch = (a: WatchRow, b: WatchRow) =>
  a.equipment_type === b.equipment_type &&
  a.carrier_id === b.carrier_id &&
  a.external_reference_id === b.external_reference_id &&
  a.origin_latitude === b.origin_latitude &&
  a.origin_longitude === b.origin_longitude &&
  a.destination_latitude === b.destination_latitude &&
  a.destination_longitude === b.destination_longitude;

const rankedIds = (recs: readonly CarrierRecommendation[]) => JSON.stringify(recs.map((r) => r.carrier_id));

/** One pass over the outbox after the cursor; true when more is left. */
export async function followUpPass(deps: PassDeps, orgId: string): Promise<boolean> {
  const quiet = deps.giveWay();
  const window = await readWindow(deps.pipeline.reader, orgId, quiet);
  if (!window) return false;
  const { rows, closed } = await followUpTargets(deps, orgId, window, quiet);
  const ranked = await rankTargets(deps, orgId, rows, quiet);
  // Another process moved the cursor first: start again from where it left it.
  if (!(await announceChanges(deps, orgId, window, { rows, ranked, closed }, quiet))) return true;
  deps.stats.passes++;
  return window.until < window.last;
}

/** The window of events after the organization's cursor; null when there is none. */
async function readWindow(reader: Executor, orgId: string, quiet: () => Promise<void>): Promise<OutboxWindow | null> {
  const { after, last } = await followUpPosition(reader, orgId);
  if (last <= after) return null;
  const events = await loadEventsAfter(reader, orgId, after, WINDOW);
  // Requests go first between the reads too: on SQLite each is synchronous, and together (a window's
  // events, its loads with their stops, the watched loads near its lanes, their pickups) they held the
  // event loop for 20–40 ms in front of a push's next batch.
  await quiet();
  // Without load or location events the cursor moves to what has been committed (nothing to follow up).
  const until = events.length === WINDOW ? events[events.length - 1]!.sequence : last;
  const moved = [...new Map(events.flatMap((e) => lanesOf(e.lanes)).map((k) => [laneKeyId(k), k] as const)).values()];
  const written = new Set(
    events.filter((e) => e.type.startsWith('load.') && e.type !== 'load.recommendations_changed' && e.record_id).map((e) => e.record_id!),
  );
  const relocated = events.filter((e) => e.type === 'location.updated' && e.lanes && e.record_id).map((e) => e.record_id!);
  return { after, last, until, moved, written, relocated };
}

/** The watched loads to rank again (by load id, in the order found) and the loads no longer watched. */
async function followUpTargets(
  deps: PassDeps,
  orgId: string,
  window: OutboxWindow,
  quiet: () => Promise<void>,
): Promise<{ rows: WatchRow[]; closed: Set<string> }> {
  const reader = deps.pipeline.reader;
  const written = window.written;
  // Open loads at a moved location: their lane moved with it, whatever their cells say.
  const atMoved = new Set(await loadsAtLocations(reader, orgId, window.relocated));
  for (const id of atMoved) written.add(id);
  // Loads written in the window: watched again when open; ranked again when their own lane, equipment
  // or carrier changed (or they are new), or when history near them moved.
  const ownWrites = await loadsWithStops(reader, orgId, [...written]);
  const watched = await watchRows(reader, [...written]);
  await quiet();
  const found = new Set(ownWrites.map((w) => w.load.id));
  const closed = new Set([...written].filter((id) => !found.has(id)));
  const targets = new Map<string, WatchRow>();
  for (const { load, stops } of ownWrites) {
    const before = watched.get(load.id);
    const row = watchRowOf(orgId, load, stops, before);
    if (!row) closed.add(load.id);
    else if (!before || !sameWatch(before, row) || atMoved.has(load.id)) targets.set(load.id, row);
  }
  if (window.moved.length > 0) {
    for (const w of await watchedNearLanes(reader, deps.radiusMiles, orgId, window.moved))
      if (!targets.has(w.load_id) && !closed.has(w.load_id)) targets.set(w.load_id, w);
    await quiet();
  }
  return { rows: [...targets.values()], closed };
}

/** A written load's watch row, keeping what was last announced for it (`before`); null when it is not open or has no lane. */
function watchRowOf(orgId: string, load: WatchedLoad, stops: readonly LaneStop[], before: WatchRow | undefined): WatchRow | null {
  const { origin, destination } = laneEnds(stops);
  if (!OPEN_STATUSES.has(load.status) || !origin || !destination) return null;
  return {
    load_id: load.id,
    org_id: orgId,
    equipment_type: load.equipment_type,
    origin_cell: cellOf(origin.latitude, origin.longitude),
    destination_cell: cellOf(destination.latitude, destination.longitude),
    external_reference_id: load.external_reference_id,
    origin_latitude: origin.latitude,
    origin_longitude: origin.longitude,
    destination_latitude: destination.latitude,
    destination_longitude: destination.longitude,
    carrier_id: load.carrier_id,
    ranked: before?.ranked ?? '[]',
  };
}

/** The cells whose history may be near a load in `cell` (the radius and half a cell's diagonal around its centre). */
function nearCells(radiusMiles: number, cell: number): number[] {
  return cellsWithin(cellCentre(cell).latitude, cellCentre(cell).longitude, radiusMiles + HALF_CELL_DIAGONAL_MILES);
}

/** Watched loads whose recommendations may read history on one of `moved`'s lanes. */
async function watchedNearLanes(reader: Executor, radiusMiles: number, orgId: string, moved: LaneKey[]): Promise<WatchRow[]> {
  const near = (cell: number) => nearCells(radiusMiles, cell);
  const byEquipment = new Map<string, LaneKey[]>();
  for (const k of moved) byEquipment.set(k.equipment_type, [...(byEquipment.get(k.equipment_type) ?? []), k]);
  const found: WatchRow[] = [];
  for (const [equipment, keys] of byEquipment) {
    const origins = new Set(keys.flatMap((k) => near(k.origin_cell)));
    const destinations = new Set(keys.flatMap((k) => near(k.destination_cell)));
    const candidates = await watchedNear(reader, orgId, equipment, [...origins], [...destinations]);
    // The query took every origin cell with every destination cell: keep the pairs of a real lane.
    const neighbours = keys.map((k) => ({ o: new Set(near(k.origin_cell)), d: new Set(near(k.destination_cell)) }));
    found.push(...candidates.filter((w) => neighbours.some((n) => n.o.has(w.origin_cell) && n.d.has(w.destination_cell))));
  }
  return found;
}

/**
 * The watched loads' recommendations as GET would show them now, outside any transaction (loads on the
 * same cells share one read of the history: a busy lane has hundreds of open loads).
 */
async function rankTargets(deps: PassDeps, orgId: string, rows: readonly WatchRow[], quiet: () => Promise<void>): Promise<CarrierRecommendation[][]> {
  const reader = deps.pipeline.reader;
  const pickups = await pickupTimes(
    reader,
    orgId,
    rows.map((w) => w.load_id),
  );
  await quiet();
  const ranked = await deps.lanes.recommendMany(
    reader,
    orgId,
    rows.map((w) => ({
      load: { id: w.load_id, equipment_type: w.equipment_type, carrier_id: w.carrier_id },
      origin: { latitude: w.origin_latitude, longitude: w.origin_longitude },
      destination: { latitude: w.destination_latitude, longitude: w.destination_longitude },
      pickupAt: pickups.get(w.load_id) ?? null,
    })),
    quiet,
  );
  deps.stats.ranked += rows.length;
  return ranked;
}

/**
 * Announces the loads whose ranked carriers changed and moves the cursor; false when another pass moved
 * it first.
 *
 * Written in slices, each its own short transaction: a pass over a busy outbox announces a thousand
 * loads with their evidence (megabytes), and one transaction for all of them held the organization's
 * counters row (its events' sequence numbers) for as long as that insert took, so every write of the
 * organization waited for it. Passes take turns (`followUpTurn`), and each slice compares with what
 * was announced under that turn: a slice of a pass that overlaps another's announces only what the
 * other has not. The last slice moves the cursor; a pass that finds it moved stops there (the slices
 * it wrote stand: they announced real changes), and a process that dies between slices leaves the
 * cursor where it was: the next pass ranks the window again and finds those slices already announced.
 */
async function announceChanges(
  deps: PassDeps,
  orgId: string,
  window: OutboxWindow,
  found: { rows: readonly WatchRow[]; ranked: readonly CarrierRecommendation[][]; closed: ReadonlySet<string> },
  quiet: () => Promise<void>,
): Promise<boolean> {
  const { slice } = deps;
  const slices = Math.max(1, Math.ceil(found.rows.length / slice));
  try {
    for (let s = 0; s < slices; s++) {
      const part = found.rows.slice(s * slice, (s + 1) * slice);
      const partRanked = found.ranked.slice(s * slice, (s + 1) * slice);
      const last = s === slices - 1;
      await quiet();
      await deps.pipeline.write(orgId, async (tx, changes) => {
        if ((await followUpTurn(tx, orgId)) !== window.after) throw new CursorMoved();
        const announced = await watchRows(
          tx,
          part.map((r) => r.load_id),
        );
        await upsertWatch(tx, announceSlice(deps.stats, changes, announced, part, partRanked));
        if (!last) return;
        await unwatch(tx, [...found.closed]);
        if (!(await advanceCursor(tx, orgId, window.after, window.until))) throw new CursorMoved();
      });
    }
  } catch (err) {
    if (err instanceof CursorMoved) return false;
    throw err;
  }
  return true;
}

/**
 * A slice's events: a load.recommendations_changed for each load whose ranked carriers differ from what
 * was `announced`; the watch rows to write (those announced, and those whose lane or load changed).
 */
function announceSlice(
  stats: FollowUpStats,
  changes: ChangeSet,
  announced: ReadonlyMap<string, WatchRow>,
  part: readonly WatchRow[],
  partRanked: readonly CarrierRecommendation[][],
): WatchRow[] {
  const changed: WatchRow[] = [];
  part.forEach((w, i) => {
    const recs = partRanked[i]!;
    const now = rankedIds(recs);
    const before = announced.get(w.load_id);
    if ((before?.ranked ?? '[]') !== now) {
      stats.announced++;
      changes.announce({
        kind: 'loads',
        type: 'load.recommendations_changed',
        record_id: w.load_id,
        data: { id: w.load_id, external_reference_id: w.external_reference_id, carrier_recommendations: recs },
      });
      changed.push(Object.assign({}, w, { ranked: now }));
    } else if (!before || !sameWatch(before, w)) changed.push(Object.assign({}, w, { ranked: now }));
  });
  return changed;
}
