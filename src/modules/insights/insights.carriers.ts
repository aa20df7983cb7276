import { graceMinutesFor, parseOutcomes, priceSummary } from '../../domain/evidence.js';
import { graceMinutesOf } from '../lanes/lanes.repo.js';
import type { Executor } from '../../lib/db/index.js';
import { countLoadsOf, locationsByIds, loadsOf } from './insights.repo.js';
import { carrierContacts, carrierDeliveries, watchesNaming } from './lanes-carriers.repo.js';
import type { LanesService } from '../lanes/lanes.service.js';
import type { LoadsService } from '../loads/loads.service.js';

/** What the insights read with: the dashboard's reader, and the loads' and lanes' services. */
export interface InsightsDeps {
  reader: Executor;
  loads: Pick<LoadsService, 'present'>;
  lanes: Pick<LanesService, 'recommendMany' | 'recommendLane' | 'rules' | 'priceAgainstMarket'>;
}

/**
 * A carrier's page on the dashboard (docs/dashboard.md, "Recommendation evidence"): its loads, the lanes
 * it delivered on with their price against the market, its on-time deliveries by month, the open loads
 * recommending it; and the carriers' primary contacts (a carrier's page, a lane's, a load's).
 */

/** Lanes of a carrier's page at most. */
const CARRIER_LANES_SHOWN = 25;

export interface CarrierLane {
  equipment_type: string;
  origin_location_id: string;
  destination_location_id: string;
  loads: number;
  last_delivered_at: string;
  /** The price against the market of the carrier's deliveries on the lane (see carrierActivity). */
  price?: PriceAgainstMarket;
}

/** The median of total ÷ (market $/mi at the delivery date × miles) over the priced deliveries (null: none priced). */
export type PriceAgainstMarket = ReturnType<typeof priceSummary>;

// Each delivery counts once on the page (the recommendations weigh them by recency).
const priceOf = (ratios: readonly number[]): PriceAgainstMarket => priceSummary(ratios.map((value) => ({ value, w: 1 })));

export interface PrimaryContact {
  name: string;
  phone: string | null;
  email: string | null;
}

/** The lanes (origin and destination locations, equipment) of delivered history rows, busiest first. */
function groupByLane(
  rows: readonly { equipment_type: string; origin_location_id: string; destination_location_id: string; delivered_at: string }[],
): CarrierLane[] {
  const lanes = new Map<string, CarrierLane>();
  for (const r of rows) {
    const key = `${r.equipment_type}|${r.origin_location_id}|${r.destination_location_id}`;
    const lane = lanes.get(key);
    if (lane) lane.loads++;
    else
      lanes.set(key, {
        equipment_type: r.equipment_type,
        origin_location_id: r.origin_location_id,
        destination_location_id: r.destination_location_id,
        loads: 1,
        last_delivered_at: r.delivered_at,
      });
  }
  return [...lanes.values()].sort((a, b) => b.loads - a.loads || (a.last_delivered_at < b.last_delivered_at ? 1 : -1));
}

/** On-time delivery on the carrier page (docs/dashboard.md, "Recommendation evidence"): scored delivery stops and those on time, per calendar month (UTC) of delivery, oldest first. */
function onTimeByMonth(
  rows: readonly { delivered_at: string; stop_outcomes: string }[],
  graceMinutes: number,
): { month: string; scored: number; onTime: number }[] {
  const months = new Map<string, { scored: number; onTime: number }>();
  for (const r of rows) {
    const month = r.delivered_at.slice(0, 7);
    const m = months.get(month) ?? { scored: 0, onTime: 0 };
    for (const late of parseOutcomes(r.stop_outcomes ?? '').deliveries) {
      if (late === null) continue;
      m.scored++;
      if (late <= graceMinutes * 60) m.onTime++;
    }
    months.set(month, m);
  }
  return [...months.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([month, m]) => ({ month, ...m }));
}

/** Each carrier's primary contact (else its first), with the carrier's own phone and email as fallback. */
export async function primaryContacts(reader: Executor, orgId: string, carrierIds: string[]): Promise<Map<string, PrimaryContact>> {
  const out = new Map<string, PrimaryContact>();
  if (carrierIds.length === 0) return out;
  const { contacts, carriers } = await carrierContacts(reader, orgId, carrierIds);
  for (const c of carriers) out.set(c.id, { name: '', phone: c.phone_number, email: c.email });
  const chosen = new Map<string, (typeof contacts)[number]>();
  for (const c of contacts) {
    const had = chosen.get(c.carrier_id);
    if (!had || (!had.is_primary_contact && c.is_primary_contact)) chosen.set(c.carrier_id, c);
  }
  for (const [carrierId, c] of chosen) {
    const fallback = out.get(carrierId);
    out.set(carrierId, {
      name: [c.first_name, c.last_name].filter(Boolean).join(' '),
      phone: c.primary_phone ?? fallback?.phone ?? null,
      email: c.primary_email ?? fallback?.email ?? null,
    });
  }
  return out;
}

/** Open loads whose current recommendations include the carrier, with its rank there (0 if unreadable). */
async function recommendedFor(reader: Executor, orgId: string, carrierId: string) {
  return (await watchesNaming(reader, orgId, carrierId)).map((r) => {
    let rank = 0;
    try {
      rank = (JSON.parse(r.ranked) as string[]).indexOf(carrierId) + 1;
    } catch {
      rank = 0;
    }
    return { external_reference_id: r.external_reference_id, status: r.status, equipment_type: r.equipment_type, pickup_at: r.pickup_at, rank };
  });
}

/**
 * A carrier's newest loads and their count, the lanes it has delivered on (busiest first, with their
 * locations; `history`: the history loads read), and the open loads recommending it.
 */
export async function carrierActivity(deps: InsightsDeps, orgId: string, carrierId: string) {
  const { reader } = deps;
  const [loads, total, deliveries, recommended] = await Promise.all([
    loadsOf(reader, orgId, { carrierId }),
    countLoadsOf(reader, orgId, { carrierId }),
    carrierDeliveries(reader, orgId, carrierId),
    recommendedFor(reader, orgId, carrierId),
  ]);
  const lanes = groupByLane(deliveries).slice(0, CARRIER_LANES_SHOWN);
  const places = new Map(
    (
      await locationsByIds(
        reader,
        orgId,
        lanes.flatMap((l) => [l.origin_location_id, l.destination_location_id]),
      )
    ).map((l) => [l.id, l]),
  );
  const graceMinutes = graceMinutesFor(await graceMinutesOf(reader, orgId), deps.lanes.rules.graceMinutes);
  // The price against the market on each lane shown, and over them all: its deliveries priced as
  // the recommendations price them (the lane's snapshot as of the delivery date), the median of each.
  const priceable = lanes.flatMap((lane) => {
    const origin = places.get(lane.origin_location_id);
    const destination = places.get(lane.destination_location_id);
    if (!origin || !destination) return [];
    const rows = deliveries.filter(
      (r) =>
        r.equipment_type === lane.equipment_type &&
        r.origin_location_id === lane.origin_location_id &&
        r.destination_location_id === lane.destination_location_id,
    );
    return [{ lane, equipmentType: lane.equipment_type, origin, destination, rows }];
  });
  const ratios = await deps.lanes.priceAgainstMarket(reader, orgId, priceable);
  priceable.forEach((p, i) => (p.lane.price = priceOf(ratios[i]!)));
  const price = priceOf(ratios.flat());
  return { loads, total, lanes, history: deliveries.length, places, recommended, onTime: onTimeByMonth(deliveries, graceMinutes), graceMinutes, price };
}
