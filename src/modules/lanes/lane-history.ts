import type { LaneHistoryTable } from '../../lib/db/types.js';
import { DELIVERED_STATUSES } from '../../domain/enums.js';
import { cellOf } from '../../domain/grid.js';
import { laneEnds, type LaneKey } from '../../domain/lane.js';
import { stopOutcomes, type OutcomeStop } from '../../domain/evidence.js';

/** What a load's lane history row is made of, as the write that changes the load holds it. */
export interface HistorySource {
  load: {
    id: string;
    org_id: string;
    status: string;
    carrier_id: string | null;
    equipment_type: string;
    delivered_at: string | null;
    total_distance: number | null;
  };
  carrierRef: string | null;
  stops: readonly (OutcomeStop & { location_id: string; latitude: number; longitude: number })[];
  rates: readonly { rate_entity: string; amount: number; currency: string }[];
}

export const laneKeyOf = (r: LaneKey): LaneKey => ({ equipment_type: r.equipment_type, origin_cell: r.origin_cell, destination_cell: r.destination_cell });

/** Whether a load is lane history (docs/api.md, "Lane history and carrier recommendations"): it names a carrier and is delivered (or later). */
export const isHistory = (load: { status: string; carrier_id: string | null }): boolean => load.carrier_id !== null && DELIVERED_STATUSES.has(load.status);

/**
 * The load's CARRIER rates in one currency, the one most of them use (ties: USD, then by code), summed
 * in position order; null without any CARRIER rate.
 */
export function carrierTotal(rates: HistorySource['rates']): { total: number; currency: string } | null {
  const counts = new Map<string, number>();
  for (const r of rates) if (r.rate_entity === 'CARRIER') counts.set(r.currency, (counts.get(r.currency) ?? 0) + 1);
  if (counts.size === 0) return null;
  const [currency] = [...counts].sort(([a, m], [b, n]) => n - m || (a === 'USD' ? -1 : b === 'USD' ? 1 : a < b ? -1 : a > b ? 1 : 0))[0]!;
  let total = 0;
  for (const r of rates) if (r.rate_entity === 'CARRIER' && r.currency === currency) total += r.amount;
  return { total, currency };
}

/** The load's lane history row, or null when it is not history or has no lane ends. */
export function laneHistoryRow({ load, carrierRef, stops, rates }: HistorySource): LaneHistoryTable | null {
  if (!isHistory(load) || carrierRef === null) return null;
  const { origin, destination } = laneEnds(stops);
  if (!origin || !destination) return null;
  const priced = carrierTotal(rates);
  return {
    load_id: load.id,
    org_id: load.org_id,
    carrier_id: load.carrier_id!,
    carrier_external_reference_id: carrierRef,
    equipment_type: load.equipment_type,
    origin_location_id: origin.location_id,
    destination_location_id: destination.location_id,
    origin_latitude: origin.latitude,
    origin_longitude: origin.longitude,
    destination_latitude: destination.latitude,
    destination_longitude: destination.longitude,
    origin_cell: cellOf(origin.latitude, origin.longitude),
    destination_cell: cellOf(destination.latitude, destination.longitude),
    // The delivery date: the last delivery stop's late_arrival (always present: stops require it).
    delivered_at: destination.late_arrival ?? load.delivered_at,
    carrier_rate_total: priced ? priced.total : null,
    carrier_rate_currency: priced ? priced.currency : null,
    total_distance: load.total_distance,
    stop_outcomes: stopOutcomes(stops),
  };
}
