import type { Executor } from '../../lib/db/index.js';
import type { LoadRatesTable, LoadsTable } from '../../lib/db/types.js';
import { laneEnds } from '../../domain/lane.js';
import { teamMemberMatcher, type TeamMemberRecord } from '../../domain/load.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { namesByIds, ratesOf, stopsOf, usersMatching, type StopWithLocation } from './loads.repo.js';
import type { FinancialRate, Load, TeamMember } from './loads.schema.js';
import type { LoadDocument } from './loads.documents.repo.js';
import fastJson from 'fast-json-stringify';
import * as loadSchemas from './loads.schema.js';
import * as laneSchemas from '../lanes/lanes.schema.js';

/**
 * A load's answer as JSON text, by the response schema GET serialises with (fast-json-stringify, as
 * Fastify does): the load events' data is the same text GET sends, made about three times faster than
 * JSON.stringify makes it (a changed batch stores a hundred of them).
 */
export const loadJson: (load: unknown) => string = fastJson(loadSchemas.Load as never, {
  // Every schema the Load schema may refer to, by $id (as Fastify's shared schemas).
  schema: Object.fromEntries(
    [...Object.values(loadSchemas), ...Object.values(laneSchemas)].flatMap((s) =>
      typeof s === 'object' && s !== null && typeof (s as { $id?: unknown }).$id === 'string' ? [[(s as { $id: string }).$id, s]] : [],
    ),
  ) as never,
});

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
  actual_arrival: s.actual_arrival ?? null,
  actual_departure: s.actual_departure ?? null,
});

function groupByLoad<T extends { load_id: string }>(items: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) m.set(it.load_id, [...(m.get(it.load_id) ?? []), it]);
  return m;
}

/** Reps as stored, with their service_user_id matched against the organization's users. */
function teamMembers(users: readonly { id: string; email_lower: string; name: string }[]): (json: string | null) => TeamMember | null {
  // The same user may come back once per load (documents): once each for the matcher.
  const match = teamMemberMatcher([...new Map(users.map((u) => [u.id, u])).values()]);
  return (json) => {
    if (json === null) return null;
    const rep = JSON.parse(json) as TeamMemberRecord;
    return Object.assign({}, rep, { service_user_id: match(rep) });
  };
}

/** The organization's users the loads' reps may name. */
function repUsers(tx: Executor, orgId: string, rows: LoadsTable[]) {
  const reps = rows
    .flatMap((r) => [r.sales_rep, r.dispatcher_rep])
    .filter((x): x is string => x !== null)
    .map((x) => JSON.parse(x) as TeamMemberRecord);
  if (reps.length === 0) return Promise.resolve([]);
  return usersMatching(
    tx,
    orgId,
    [...new Set(reps.flatMap((r) => (r.email ? [r.email.toLowerCase()] : [])))],
    [...new Set(reps.flatMap((r) => (r.name ? [r.name.toLowerCase()] : [])))],
  );
}

type Named = { external_reference_id: string; name: string };
export type NamedRecord = Named & { id: string };

/**
 * What a load write holds of its answer beside the row (RecordChange.parts): the stops with their places
 * and the rates as they now stand, the customer and the carrier. The outbox builds the load's event from
 * it instead of reading these back (a changed batch's 100 answers: two statements instead of six).
 */
export interface KnownParts {
  stops: StopWithLocation[];
  rates: LoadRatesTable[];
  customer: NamedRecord;
  carrier: NamedRecord | null;
}

/** What a load's answer shows beside its own columns. */
interface LoadParts {
  stopsByLoad: Map<string, StopWithLocation[]>;
  ratesByLoad: Map<string, LoadRatesTable[]>;
  customerById: Map<string, Named>;
  carrierById: Map<string, Named>;
  member: (json: string | null) => TeamMember | null;
  /** Whether the load's max_buy_rate comes from a market snapshot that may exist. */
  marketPriced: (row: LoadsTable) => boolean;
  /** The organization's market counter, when the read that gave the parts had it (PostgreSQL's documents). */
  marketVersion?: number;
}

/** Without the caller's figure, max_buy_rate comes from the latest market snapshot on the lane. */
async function marketRates(lanes: LanesService, tx: Executor, orgId: string, rows: LoadsTable[], parts: LoadParts) {
  const wanted = rows.filter(parts.marketPriced);
  const rates = await lanes.marketMaxBuyRates(
    tx,
    orgId,
    wanted.map((r) => {
      const { origin, destination } = laneEnds(parts.stopsByLoad.get(r.id) ?? []);
      return { equipment_type: r.equipment_type, origin: origin ?? null, destination: destination ?? null, miles: r.total_distance };
    }),
    parts.marketVersion,
  );
  return new Map(wanted.map((r, i) => [r.id, rates[i]!]));
}

/**
 * The parts of stored loads, read with a statement per kind (SQLite's path, and writes' answers); the
 * loads in `known` take their stops, rates, customer and carrier from there instead.
 */
async function readParts(lanes: LanesService, tx: Executor, orgId: string, rows: LoadsTable[], known?: ReadonlyMap<string, KnownParts>): Promise<LoadParts> {
  const unknown = known ? rows.filter((r) => !known.has(r.id)) : rows;
  const ids = unknown.map((r) => r.id);
  const [stops, rates, customers, carriers, users, priced] = await Promise.all([
    stopsOf(tx, orgId, ids),
    ratesOf(tx, orgId, ids),
    namesByIds(
      tx,
      'customers',
      orgId,
      unknown.map((r) => r.customer_id),
    ),
    namesByIds(
      tx,
      'carriers',
      orgId,
      unknown.flatMap((r) => (r.carrier_id ? [r.carrier_id] : [])),
    ),
    repUsers(tx, orgId, rows),
    lanes.equipmentWithSnapshots(
      tx,
      orgId,
      rows.flatMap((r) => (r.max_buy_rate_source !== 'caller' ? [r.equipment_type] : [])),
    ),
  ]);
  const parts: LoadParts = {
    stopsByLoad: groupByLoad(stops),
    ratesByLoad: groupByLoad(rates),
    customerById: new Map(customers.map((c) => [c.id, c])),
    carrierById: new Map(carriers.map((c) => [c.id, c])),
    member: teamMembers(users),
    marketPriced: (r) => r.max_buy_rate_source !== 'caller' && priced.has(r.equipment_type),
  };
  for (const [id, k] of known ?? []) {
    parts.stopsByLoad.set(id, k.stops);
    parts.ratesByLoad.set(id, k.rates);
    parts.customerById.set(k.customer.id, k.customer);
    if (k.carrier) parts.carrierById.set(k.carrier.id, k.carrier);
  }
  return parts;
}

/** The parts as the one-statement documents carry them (PostgreSQL reads). */
function partsOf(docs: LoadDocument[]): LoadParts {
  const priced = new Set(docs.filter((d) => d.market_priced).map((d) => d.id));
  return {
    stopsByLoad: new Map(docs.map((d) => [d.id, d.stops])),
    ratesByLoad: new Map(docs.map((d) => [d.id, d.rates])),
    customerById: new Map(
      docs.flatMap((d) => (d.customer_ref !== null ? [[d.customer_id, { external_reference_id: d.customer_ref, name: d.customer_name ?? '' }] as const] : [])),
    ),
    carrierById: new Map(
      docs.flatMap((d) =>
        d.carrier_id && d.carrier_ref !== null ? [[d.carrier_id, { external_reference_id: d.carrier_ref, name: d.carrier_name ?? '' }] as const] : [],
      ),
    ),
    member: teamMembers(docs.flatMap((d) => d.rep_users ?? [])),
    marketPriced: (r) => priced.has(r.id),
    ...(docs[0] ? { marketVersion: docs[0].market_version } : {}),
  };
}

async function assemble(lanes: LanesService, tx: Executor, orgId: string, rows: LoadsTable[], parts: LoadParts): Promise<Load[]> {
  const market = await marketRates(lanes, tx, orgId, rows, parts);
  return rows.map((r) => {
    const customer = parts.customerById.get(r.customer_id);
    const carrier = r.carrier_id ? parts.carrierById.get(r.carrier_id) : undefined;
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
      stops: (parts.stopsByLoad.get(r.id) ?? []).map(toStop),
      financial_rates: (parts.ratesByLoad.get(r.id) ?? []).map(toRate),
      sales_rep: parts.member(r.sales_rep),
      dispatcher_rep: parts.member(r.dispatcher_rep),
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
}

/** Stored rows to answers (docs/api.md, "Loads"): a statement per kind of part (none for the parts `known` holds). */
export async function presentLoads(
  lanes: LanesService,
  tx: Executor,
  orgId: string,
  rows: LoadsTable[],
  known?: ReadonlyMap<string, KnownParts>,
): Promise<Load[]> {
  if (rows.length === 0) return [];
  return assemble(lanes, tx, orgId, rows, await readParts(lanes, tx, orgId, rows, known));
}

/** Documents (a load and its parts from one statement) to answers; only the market max_buy_rate reads more. */
export function presentLoadDocuments(lanes: LanesService, tx: Executor, orgId: string, docs: LoadDocument[]): Promise<Load[]> {
  if (docs.length === 0) return Promise.resolve([]);
  return assemble(lanes, tx, orgId, docs, partsOf(docs));
}
