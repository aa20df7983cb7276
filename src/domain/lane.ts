import { haversineMiles, type Coordinates } from '../geo/distance.js';
import { isDelivery, isPickup } from './enums.js';

/** What the lane rules need of a stop: its type and its place in the load's order. */
export interface OrderedStop {
  stop_number: number;
  stop_type: string;
}

/**
 * A load's lane ends (docs/api.md, "Lane history and carrier recommendations"): its origin is its first
 * Pickup/Both stop by stop_number, its destination the last Delivery/Both stop. Either is undefined when
 * the load has no such stop.
 */
export function laneEnds<S extends OrderedStop>(stops: readonly S[]): { origin: S | undefined; destination: S | undefined } {
  const ordered = [...stops].sort((a, b) => a.stop_number - b.stop_number);
  return {
    origin: ordered.find((s) => isPickup(s.stop_type)),
    destination: [...ordered].reverse().find((s) => isDelivery(s.stop_type)),
  };
}

/** Whether two stop lists have the same lane ends (the same origin and destination places). */
export function sameLaneEnds<S extends OrderedStop & { location_id: string }>(a: readonly S[], b: readonly S[]): boolean {
  const x = laneEnds(a);
  const y = laneEnds(b);
  return x.origin?.location_id === y.origin?.location_id && x.destination?.location_id === y.destination?.location_id;
}

/** Two points share a lane end when they are within the lane radius of each other. */
export const withinRadius = (a: Coordinates, b: Coordinates, radiusMiles: number) => haversineMiles(a, b) <= radiusMiles;

export interface LaneSnapshot {
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  rate_per_mile: number;
  rate_per_mile_high: number | null;
}

/** The first snapshot (callers pass them newest first) whose both ends lie on the lane (the snapshot of a market max_buy_rate). */
export function latestOnLane<S extends LaneSnapshot>(
  newestFirst: readonly S[],
  lane: { origin: Coordinates; destination: Coordinates },
  radiusMiles: number,
): S | undefined {
  return newestFirst.find(
    (s) =>
      withinRadius(lane.origin, { latitude: s.origin_latitude, longitude: s.origin_longitude }, radiusMiles) &&
      withinRadius(lane.destination, { latitude: s.destination_latitude, longitude: s.destination_longitude }, radiusMiles),
  );
}

/**
 * A market max_buy_rate (docs/api.md, "Loads"): (rate_per_mile_high, else rate_per_mile) × miles, to the
 * cent, half a cent up. The product in binary floating point can fall just short of a half cent that the
 * decimal figures reach (1.15 × 100.5 is 115.57499999999999): it is taken to 12 significant digits
 * first, as the decimal product is.
 */
export const maxBuyRate = (snapshot: LaneSnapshot, miles: number) =>
  Math.round(Number(((snapshot.rate_per_mile_high ?? snapshot.rate_per_mile) * miles * 100).toPrecision(12))) / 100;

/** A lane as the stats table keys it: equipment and the grid cells of its two ends. */
export interface LaneKey {
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
}

export const laneKeyId = (k: LaneKey) => `${k.equipment_type}|${k.origin_cell}|${k.destination_cell}`;
