import type { Executor } from '../../lib/db/index.js';
import { cellCentre, cellOf, cellsWithin, CELL_DEGREES } from '../../domain/grid.js';
import { laneEnds, laneKeyId, type LaneKey } from '../../domain/lane.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { LanesService } from './lanes.service.js';
import type { CarrierRecommendation } from './lanes.schema.js';
import { NO_FOREGROUND, type Foreground } from '../../lib/http/foreground.js';
import {
  advanceCursor,
  followUpPosition,
  followUpTurn,
  lanesOf,
  loadEventsAfter,
  loadsAtLocations,
  loadsWithStops,
  organizationsBehind,
  unwatch,
  upsertWatch,
  watchedNear,
  watchRows,
  type WatchRow,
  pickupTimes,
} from './watch.repo.js';

// Events read per pass (each pass one transaction; four columns an event); a busier outbox is worked
// through in several passes. Ten batches of 100 loads are one pass: the lanes they share ranked once.
const WINDOW = 1000;
// Half the diagonal of a grid cell, in miles (a history row anywhere in a cell may be near a load).
const HALF_CELL_DIAGONAL_MILES = 50 * CELL_DEGREES;
// Announcements written per transaction (about 6 KB each with their evidence).
const SLICE = 50;
// The longest a step of a pass waits for the requests in flight to end (a steady stream of requests
// slows the follow-up down, it never stops it); a pass waits four times this in all at most.
const FOLLOW_UP_WAIT_MS = 250;

export interface FollowUpLog {
  warn(obj: object, msg: string): void;
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

/**
 * load.recommendations_changed (docs/events.md, "The events"): after load writes commit, the open loads
 * near the lanes whose history moved have their ranked carriers computed again, and an event is written
 * for each whose list (the carriers, in order) differs from the last one announced. It reads what the
 * writes left in the outbox (each load event keeps the lanes it moved), from a cursor per organization
 * that moves in the same transaction as the events it writes: a process that dies loses nothing (the
 * next pass, or the sweep of another process, starts from the cursor), and no change is announced twice.
 *
 * It runs beside the requests, never inside one: a write is answered before its follow-up starts.
 */
export function recommendationsFeed(deps: {
  pipeline: WritePipeline;
  lanes: LanesService;
  radiusMiles: number;
  gapMs?: number;
  slice?: number;
  log?: FollowUpLog;
  /** This process's requests: a pass goes on between its steps once none is in flight (or after `quietWaitMs`). */
  foreground?: Foreground;
  quietWaitMs?: number;
}) {
  const { pipeline, lanes } = deps;
  const fg = deps.foreground ?? NO_FOREGROUND;
  const quietWaitMs = deps.quietWaitMs ?? FOLLOW_UP_WAIT_MS;
  // What a pass may spend waiting for requests in all: past it, its steps only let what arrived be read
  // (a turn of the event loop). A process that always has a request in flight (a long upload, a steady
  // push) slows each pass by this much at most, never by a wait per lane group.
  const passBudgetMs = 4 * quietWaitMs;
  /** A pass's way of giving way: each call waits for quiet, within what is left of the pass's budget. */
  const giveWay = () => {
    let waited = 0;
    return async () => {
      const started = performance.now();
      await fg.quiet(Math.min(quietWaitMs, Math.max(0, passBudgetMs - waited)));
      waited += performance.now() - started;
    };
  };
  const slice = deps.slice ?? SLICE;
  const reader: Executor = pipeline.reader;
  const near = (cell: number) => cellsWithin(cellCentre(cell).latitude, cellCentre(cell).longitude, deps.radiusMiles + HALF_CELL_DIAGONAL_MILES);

  /** Watched loads whose recommendations may read history on one of `moved`'s lanes. */
  async function watchedNearLanes(orgId: string, moved: LaneKey[]): Promise<WatchRow[]> {
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

  /** One pass over the outbox after the cursor; true when more is left. */
  async function pass(orgId: string): Promise<boolean> {
    const quiet = giveWay();
    const { after, last } = await followUpPosition(reader, orgId);
    if (last <= after) return false;
    const events = await loadEventsAfter(reader, orgId, after, WINDOW);
    // Requests go first between the reads too: on SQLite each is synchronous, and together (a window's
    // events, its loads with their stops, the watched loads near its lanes, their pickups) they held the
    // event loop for 20–40 ms in front of a push's next batch.
    await quiet();
    // Without load or location events the cursor moves to what has been committed (nothing to follow up).
    const until = events.length === WINDOW ? events[events.length - 1]!.sequence : last;
    // Each lane once (a window of a busy push names the same few lanes hundreds of times).
    const moved = [...new Map(events.flatMap((e) => lanesOf(e.lanes)).map((k) => [laneKeyId(k), k] as const)).values()];
    const written = new Set(
      events.filter((e) => e.type.startsWith('load.') && e.type !== 'load.recommendations_changed' && e.record_id).map((e) => e.record_id!),
    );
    const relocated = events.filter((e) => e.type === 'location.updated' && e.lanes && e.record_id).map((e) => e.record_id!);
    // Open loads at a moved location: their lane moved with it, whatever their cells say.
    const atMoved = new Set(await loadsAtLocations(reader, orgId, relocated));
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
      const { origin, destination } = laneEnds(stops);
      if (!OPEN_STATUSES.has(load.status) || !origin || !destination) {
        closed.add(load.id);
        continue;
      }
      const before = watched.get(load.id);
      const row: WatchRow = {
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
      if (!before || !sameWatch(before, row) || atMoved.has(load.id)) targets.set(load.id, row);
    }
    if (moved.length > 0) {
      for (const w of await watchedNearLanes(orgId, moved)) if (!targets.has(w.load_id) && !closed.has(w.load_id)) targets.set(w.load_id, w);
      await quiet();
    }

    // Outside the transaction: the recommendations as GET would show them now (loads on the same cells
    // share one read of the history: a busy lane has hundreds of open loads).
    const rows = [...targets.values()];
    const pickups = await pickupTimes(
      reader,
      orgId,
      rows.map((w) => w.load_id),
    );
    await quiet();
    const ranked = await lanes.recommendMany(
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
    stats.ranked += rows.length;

    // Written in slices, each its own short transaction: a pass over a busy outbox announces a thousand
    // loads with their evidence (megabytes), and one transaction for all of them held the organization's
    // counters row (its events' sequence numbers) for as long as that insert took, so every write of the
    // organization waited for it. Passes take turns (`followUpTurn`), and each slice compares with what
    // was announced under that turn: a slice of a pass that overlaps another's announces only what the
    // other has not. The last slice moves the cursor; a pass that finds it moved stops there (the slices
    // it wrote stand: they announced real changes), and a process that dies between slices leaves the
    // cursor where it was: the next pass ranks the window again and finds those slices already announced.
    const slices = Math.max(1, Math.ceil(rows.length / slice));
    try {
      for (let s = 0; s < slices; s++) {
        const part = rows.slice(s * slice, (s + 1) * slice);
        const partRanked = ranked.slice(s * slice, (s + 1) * slice);
        const last = s === slices - 1;
        await quiet();
        await pipeline.write(orgId, async (tx, changes) => {
          if ((await followUpTurn(tx, orgId)) !== after) throw new CursorMoved();
          const announced = await watchRows(
            tx,
            part.map((r) => r.load_id),
          );
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
          await upsertWatch(tx, changed);
          if (!last) return;
          await unwatch(tx, [...closed]);
          if (!(await advanceCursor(tx, orgId, after, until))) throw new CursorMoved();
        });
      }
    } catch (err) {
      // Another process moved the cursor first: start again from where it left it.
      if (err instanceof CursorMoved) return true;
      throw err;
    }
    stats.passes++;
    return until < last;
  }

  const running = new Map<string, Promise<void>>();
  // The least time between two runs of an organization: writes arriving meanwhile are followed up
  // together (a busy lane's open loads are ranked once for many batches, not once per batch).
  const gapMs = deps.gapMs ?? 0;
  const lastEnded = new Map<string, number>();
  const pause = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());
  /** What the follow-up has done in this process (benchmarks, diagnosis). */
  const stats = { passes: 0, ranked: 0, announced: 0 };
  const again = new Set<string>();

  /** Works through an organization's outbox; one run per organization at a time in this process. */
  function schedule(orgId: string): Promise<void> {
    const busy = running.get(orgId);
    if (busy) {
      again.add(orgId);
      return busy;
    }
    const run = (async () => {
      // After the write's answer has gone out (the follow-up is never part of a request), and once the
      // requests in flight have ended: a push's next batch goes before the follow-up of its last one.
      await giveWay()();
      try {
        await pause((lastEnded.get(orgId) ?? -Infinity) + gapMs - Date.now());
        do {
          again.delete(orgId);
          while (await pass(orgId));
          if (again.has(orgId)) await pause(gapMs);
        } while (again.has(orgId));
      } catch (err) {
        // The cursor did not move: the next write or the sweep tries again.
        deps.log?.warn({ err }, 'recommendations follow-up failed');
      } finally {
        running.delete(orgId);
        if (gapMs > 0) {
          const now = Date.now();
          lastEnded.set(orgId, now);
          // Forgotten once past the gap (the map stays as small as the organizations writing now).
          for (const [id, at] of lastEnded) if (at + gapMs < now) lastEnded.delete(id);
        }
      }
    })();
    running.set(orgId, run);
    return run;
  }

  return {
    stats,
    schedule,
    /** Every organization with events not yet followed up (after a restart, or another process's crash). */
    async sweep(): Promise<void> {
      await Promise.all((await organizationsBehind(reader)).map((orgId) => schedule(orgId)));
    },
    /** Resolves once no run is under way in this process (tests, shutdown). */
    async idle(): Promise<void> {
      while (running.size > 0) await Promise.all([...running.values()]);
    },
  };
}

export type RecommendationsFeed = ReturnType<typeof recommendationsFeed>;
