import type { Executor } from '../../lib/db/index.js';
import type { LoadRatesTable, LoadsTable } from '../../lib/db/types.js';
import { laneEnds } from '../../domain/lane.js';
import { teamMemberMatcher, type TeamMemberRecord } from '../../domain/load.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { namesByIds, ratesOf, stopsOf, usersMatching, type StopWithLocation } from './loads.repo.js';
import type { FinancialRate, Load, TeamMember } from './loads.schema.js';

const toRate = (row: LoadRatesTable): FinancialRate => ({
  id: row.id,
  rate_entity: row.rate_entity,
  amount: row.amount,
  currency: row.currency,
  rate_type: row.rate_type,
  description: row.description,
});

const toStop = (s: StopWithLocation) => ({
  id: s.id,
  stop_number: s.stop_number,
  stop_type: s.stop_type,
  location_id: s.location_id,
  location_external_reference_id: s.location_external_reference_id,
  location_name: s.location_name,
  early_arrival: s.early_arrival,
  late_arrival: s.late_arrival,
});

function groupByLoad<T extends { load_id: string }>(items: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) m.set(it.load_id, [...(m.get(it.load_id) ?? []), it]);
  return m;
}

/** Reps as stored, with D4's service_user_id matched against the organization's users. */
async function teamMembers(tx: Executor, orgId: string, rows: LoadsTable[]): Promise<(json: string | null) => TeamMember | null> {
  const reps = rows.flatMap((r) => [r.sales_rep, r.dispatcher_rep]).filter((x): x is string => x !== null).map((x) => JSON.parse(x) as TeamMemberRecord);
  if (reps.length === 0) return () => null;
  const users = await usersMatching(
    tx,
    orgId,
    [...new Set(reps.flatMap((r) => (r.email ? [r.email.toLowerCase()] : [])))],
    [...new Set(reps.flatMap((r) => (r.name ? [r.name.toLowerCase()] : [])))],
  );
  const match = teamMemberMatcher(users);
  return (json) => {
    if (json === null) return null;
    const rep = JSON.parse(json) as TeamMemberRecord;
    return { ...rep, service_user_id: match(rep) };
  };
}

/** The response records of stored loads: their stops, rates, customer and carrier, reps and D8 max_buy_rate. */
export function loadPresenter(lanes: LanesService) {
  /** D8: without the caller's figure, max_buy_rate comes from the latest market snapshot on the lane. */
  async function marketRates(tx: Executor, orgId: string, rows: LoadsTable[], stopsByLoad: Map<string, StopWithLocation[]>) {
    const priced = rows.some((r) => r.max_buy_rate_source !== 'caller') ? await lanes.equipmentWithSnapshots(tx, orgId) : new Set<string>();
    const wanted = rows.filter((r) => r.max_buy_rate_source !== 'caller' && priced.has(r.equipment_type));
    const rates = await Promise.all(
      wanted.map((r) => {
        const { origin, destination } = laneEnds(stopsByLoad.get(r.id) ?? []);
        return lanes.marketMaxBuyRate(tx, orgId, { equipment_type: r.equipment_type, origin: origin ?? null, destination: destination ?? null }, r.total_distance);
      }),
    );
    return new Map(wanted.map((r, i) => [r.id, rates[i]!]));
  }

  return async function present(tx: Executor, orgId: string, rows: LoadsTable[]): Promise<Load[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [stops, rates, customers, carriers, member] = await Promise.all([
      stopsOf(tx, orgId, ids),
      ratesOf(tx, orgId, ids),
      namesByIds(tx, 'customers', orgId, rows.map((r) => r.customer_id)),
      namesByIds(tx, 'carriers', orgId, rows.flatMap((r) => (r.carrier_id ? [r.carrier_id] : []))),
      teamMembers(tx, orgId, rows),
    ]);
    const stopsByLoad = groupByLoad(stops);
    const ratesByLoad = groupByLoad(rates);
    const market = await marketRates(tx, orgId, rows, stopsByLoad);
    const customerById = new Map(customers.map((c) => [c.id, c]));
    const carrierById = new Map(carriers.map((c) => [c.id, c]));
    return rows.map((r) => {
      const customer = customerById.get(r.customer_id);
      const carrier = r.carrier_id ? carrierById.get(r.carrier_id) : undefined;
      const marketRate = market.get(r.id) ?? null;
      return {
        id: r.id,
        external_reference_id: r.external_reference_id,
        status: r.status,
        equipment_type: r.equipment_type,
        transport_mode: r.transport_mode,
        description: r.description,
        customer_id: r.customer_id,
        customer_external_reference_id: customer?.external_reference_id ?? '',
        customer_name: customer?.name ?? '',
        carrier_id: r.carrier_id,
        carrier_external_reference_id: carrier?.external_reference_id ?? null,
        carrier_name: carrier?.name ?? null,
        weight: r.weight,
        weight_uom: r.weight_uom,
        total_distance: r.total_distance,
        total_distance_source: r.total_distance_source,
        ...(r.max_buy_rate_source === 'caller'
          ? { max_buy_rate: r.max_buy_rate, max_buy_rate_source: 'caller' }
          : { max_buy_rate: marketRate, max_buy_rate_source: marketRate !== null ? 'market' : null }),
        stops: (stopsByLoad.get(r.id) ?? []).map(toStop),
        financial_rates: (ratesByLoad.get(r.id) ?? []).map(toRate),
        sales_rep: member(r.sales_rep),
        dispatcher_rep: member(r.dispatcher_rep),
        assigned_dispatcher: r.assigned_dispatcher,
        actual_dispatcher: r.actual_dispatcher,
        operation_user: r.operation_user,
        account_manager: r.account_manager,
        status_updated_at: r.status_updated_at,
        delivered_at: r.delivered_at,
        created_at: r.created_at,
        updated_at: r.updated_at,
      };
    });
  };
}
