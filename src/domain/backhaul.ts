import { haversineMiles, type Coordinates } from '../geo/distance.js';
import { laneEnds } from './lane.js';
import type { Backhaul } from './evidence.js';

/**
 * The backhaul of a recommendation's evidence (docs/api.md, "Stop actuals, tracking events and
 * recommendation evidence"): a load the carrier has on its way whose last delivery is due within 100
 * miles of this load's pickup, 0–48 h before it. Pure arithmetic over the carriers' loads on their way.
 */

const HOUR_MS = 3_600_000;
/** A backhaul delivers within this many miles of the pickup … */
export const BACKHAUL_MILES = 100;
/** … from this many hours before it up to it. */
export const BACKHAUL_HOURS = 48;

/** A stop of a load on its way, with its place (what the backhaul is found from). */
export interface UnderwayLoadStop {
  load_id: string;
  external_reference_id: string;
  carrier_id: string;
  stop_number: number;
  stop_type: string;
  early_arrival: string;
  late_arrival: string | null;
  latitude: number;
  longitude: number;
}

/** A load on its way: its last delivery stop's place and deadline. */
export interface UnderwayLoad {
  id: string;
  ref: string;
  destination: Coordinates;
  deadlineMs: number;
}

/** Loads on their way by carrier: each with its last delivery stop's place and deadline (late_arrival, else early_arrival). */
export function underwayByCarrier(stops: readonly UnderwayLoadStop[]): Map<string, UnderwayLoad[]> {
  const byLoad = new Map<string, UnderwayLoadStop[]>();
  for (const s of stops) {
    const list = byLoad.get(s.load_id);
    if (list) list.push(s);
    else byLoad.set(s.load_id, [s]);
  }
  const out = new Map<string, UnderwayLoad[]>();
  for (const [id, list] of byLoad) {
    const { destination } = laneEnds(list);
    if (!destination) continue;
    const load = {
      id,
      ref: destination.external_reference_id,
      destination: { latitude: destination.latitude, longitude: destination.longitude },
      deadlineMs: Date.parse(destination.late_arrival ?? destination.early_arrival),
    };
    const carrier = out.get(destination.carrier_id);
    if (carrier) carrier.push(load);
    else out.set(destination.carrier_id, [load]);
  }
  return out;
}

/** When a backhaul of any of these pickups may be due: from 48 h before the earliest to the latest (ISO texts). */
export function backhaulWindow(pickups: readonly string[]): { from: string; to: string } {
  const ms = pickups.map((p) => Date.parse(p));
  return { from: new Date(Math.min(...ms) - BACKHAUL_HOURS * HOUR_MS).toISOString(), to: new Date(Math.max(...ms)).toISOString() };
}

/**
 * The backhaul of a pickup (`loadId`'s, at `origin`, `pickupAt`) among one carrier's loads on their way:
 * the one due latest within the window and the miles (ties: the lower reference); null when none, or no
 * pickup time. The load itself is never its own backhaul. Miles and hours to a tenth.
 */
export function backhaulFor(pickup: { loadId: string; origin: Coordinates; pickupAt?: string | null }, loads: readonly UnderwayLoad[]): Backhaul | null {
  if (!pickup.pickupAt) return null;
  const pickupMs = Date.parse(pickup.pickupAt);
  let best: { load: UnderwayLoad; miles: number } | null = null;
  for (const l of loads) {
    if (l.id === pickup.loadId) continue;
    const hours = (pickupMs - l.deadlineMs) / HOUR_MS;
    if (hours < 0 || hours > BACKHAUL_HOURS) continue;
    const miles = haversineMiles(l.destination, pickup.origin);
    if (miles > BACKHAUL_MILES) continue;
    if (!best || l.deadlineMs > best.load.deadlineMs || (l.deadlineMs === best.load.deadlineMs && l.ref < best.load.ref)) best = { load: l, miles };
  }
  if (!best) return null;
  return {
    load_external_reference_id: best.load.ref,
    miles_to_origin: Math.round(best.miles * 10) / 10,
    hours_before_pickup: Math.round(((pickupMs - best.load.deadlineMs) / HOUR_MS) * 10) / 10,
  };
}
