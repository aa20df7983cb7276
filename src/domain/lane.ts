import { isDelivery, isPickup } from './enums.js';

/** What the lane rules need of a stop: its type and its place in the load's order. */
export interface OrderedStop {
  stop_number: number;
  stop_type: string;
}

/**
 * D7: a load's origin is its first Pickup/Both stop by stop_number, its destination the last
 * Delivery/Both stop. Either is undefined when the load has no such stop.
 */
export function laneEnds<S extends OrderedStop>(stops: readonly S[]): { origin: S | undefined; destination: S | undefined } {
  const ordered = [...stops].sort((a, b) => a.stop_number - b.stop_number);
  return {
    origin: ordered.find((s) => isPickup(s.stop_type)),
    destination: [...ordered].reverse().find((s) => isDelivery(s.stop_type)),
  };
}
