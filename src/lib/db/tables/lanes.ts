// Lane history and what is kept per lane (stats, carriers), market rates, the recommendations watch. Row shapes as stored (src/lib/db/types.ts).

/** One row per load that is lane history (docs/api.md, "Lane history and carrier recommendations"): a carrier and a delivered (or later) status. */
export interface LaneHistoryTable {
  load_id: string;
  org_id: string;
  carrier_id: string;
  /** Immutable, so kept here for the tie-break without a join. */
  carrier_external_reference_id: string;
  equipment_type: string;
  origin_location_id: string;
  destination_location_id: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  origin_cell: number;
  destination_cell: number;
  delivered_at: string;
  /** The load's CARRIER rates in carrier_rate_currency (its most used currency; ties USD). */
  carrier_rate_total: number | null;
  carrier_rate_currency: string | null;
  /** The load's miles (price against market, rate per mile). */
  total_distance: number | null;
  /** One token per stop (docs/api.md, "Stop actuals, tracking events and recommendation evidence"), `p` (Pickup) or `d` (Delivery, Both), then the arrival's lateness in seconds when scored. */
  stop_outcomes: string;
}

/** Per lane (equipment and the origin and destination cells): what the dashboard lists. */
export interface LaneStatsTable {
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  load_count: number;
  carrier_count: number;
  last_delivered_at: string;
  refreshed_at: string;
}

/** A carrier's history loads on a lane (the lane stats' distinct carriers, kept as history is written). */
export interface LaneCarriersTable {
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  carrier_id: string;
  loads: number;
}

export interface MarketRateSnapshotsTable {
  id: string;
  org_id: string;
  equipment_type: string;
  origin_label: string;
  destination_label: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  origin_state: string | null;
  destination_state: string | null;
  origin_cell: number;
  destination_cell: number;
  rate_per_mile: number;
  rate_per_mile_low: number | null;
  rate_per_mile_high: number | null;
  currency: string;
  source: string | null;
  as_of: string;
  created_at: string;
}

/** An open load's lane cells and the ranked carrier ids last announced for it (load.recommendations_changed). */
export interface RecommendationWatchTable {
  load_id: string;
  org_id: string;
  equipment_type: string;
  origin_cell: number;
  destination_cell: number;
  external_reference_id: string;
  origin_latitude: number;
  origin_longitude: number;
  destination_latitude: number;
  destination_longitude: number;
  carrier_id: string | null;
  /** JSON array of carrier ids, best first. */
  ranked: string;
}
