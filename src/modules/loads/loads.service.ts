import type { DataStore, Executor } from '../../lib/db/index.js';
import type { LoadRatesTable, LoadStopsTable, LoadsTable } from '../../lib/db/types.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ValidationError, type LocPart, type ValidationIssue } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { haversineMiles } from '../../geo/index.js';
import { recordLifecycle, tenantRecords } from '../shared/record-store.js';
import type { LaneAnalytics } from '../lanes/analytics.js';
import { syncLaneHistory } from '../lanes/lanes.repo.js';
import type { CarrierRecommendation, LanesService } from '../lanes/lanes.service.js';
import { DELIVERED_STATUSES, LOAD_STATUSES, OPEN_STATUSES, isDelivery, isPickup } from '../../domain/enums.js';
import {
  countStatusChange,
  findByRefs,
  listLoads,
  namesByIds,
  ratesOf,
  replaceRates,
  replaceStops,
  stopsOf,
  usersMatching,
  type LoadFilter,
  type StopWithLocation,
} from './loads.repo.js';
import {
  LoadCreate,
  type FinancialRate,
  type Load,
  type LoadListQuery,
  type LoadUpdate,
  type RateInput,
  type StopInput,
  type TeamMember,
  type TeamMemberInput,
} from './loads.schema.js';

export interface LoadsOptions {
  /** Road miles per great-circle mile for estimated distances (D4: 1.2, the usual truck circuity). */
  circuityFactor: number;
}

export interface LoadsDeps {
  lanes: LanesService;
  analytics: Pick<LaneAnalytics, 'touch'>;
}

interface StoredRep {
  name: string | null;
  email: string | null;
  external_reference_id: string | null;
}

const invalid = (loc: LocPart[], msg: string): ValidationIssue => ({ type: 'value_error', loc, msg: `Value error, ${msg}` });

function cleanRep(input: TeamMemberInput | null, field: string): string | null {
  if (input === null) return null;
  const clean = (v: string | null | undefined) => (v === undefined || v === null || v.trim() === '' ? null : v.trim());
  const rep: StoredRep = { name: clean(input.name), email: clean(input.email), external_reference_id: clean(input.external_reference_id) };
  if (!rep.name && !rep.email && !rep.external_reference_id) {
    throw new ValidationError([invalid(['body', field], `${field} needs at least one of name, email, external_reference_id (or null to clear it)`)]);
  }
  return JSON.stringify(rep);
}

/** Delivered (or later) keeps the first delivery time; any other status clears it. */
function deliveredAt(previous: LoadsTable | null, status: string, now: string): string | null {
  if (!DELIVERED_STATUSES.has(status)) return null;
  return previous && DELIVERED_STATUSES.has(previous.status) && previous.delivered_at ? previous.delivered_at : now;
}

function rateRows(orgId: string, loadId: string, rates: RateInput[]): LoadRatesTable[] {
  return rates.map((r, position) => ({
    id: newId('rate'),
    org_id: orgId,
    load_id: loadId,
    position,
    rate_entity: r.rate_entity,
    amount: r.amount,
    currency: (r.currency ?? 'USD').toUpperCase(),
    rate_type: r.rate_type ?? 'LINEHAUL',
    description: r.description ?? null,
  }));
}

function toRate(row: LoadRatesTable): FinancialRate {
  return { id: row.id, rate_entity: row.rate_entity, amount: row.amount, currency: row.currency, rate_type: row.rate_type, description: row.description };
}

interface ResolvedLocation {
  id: string;
  latitude: number;
  longitude: number;
}

export function loadsService(store: DataStore, clock: Clock, options: LoadsOptions, deps: LoadsDeps) {
  const repo = tenantRecords('loads');

  async function requireCustomer(tx: Executor, orgId: string, ref: string): Promise<string> {
    const [row] = await findByRefs(tx, 'customers', orgId, [ref]);
    if (!row) throw new ValidationError([invalid(['body', 'customer_external_reference_id'], `no customer with external_reference_id '${ref}' in your organization: create it first`)]);
    return row.id;
  }

  async function carrierIdFor(tx: Executor, orgId: string, ref: string | null): Promise<string | null> {
    if (ref === null) return null;
    const [row] = await findByRefs(tx, 'carriers', orgId, [ref]);
    if (!row) throw new ValidationError([invalid(['body', 'carrier_external_reference_id'], `no carrier with external_reference_id '${ref}' in your organization: create it first`)]);
    return row.id;
  }

  /**
   * Checks a full stops array (D4) and builds its rows: numbers default to the position and must be
   * unique, late not before early, one pickup and one delivery at least, and every location known.
   */
  async function buildStops(tx: Executor, orgId: string, loadId: string, stops: StopInput[]) {
    const issues: ValidationIssue[] = [];
    const locations = new Map<string, ResolvedLocation>();
    for (const l of await findByRefs(tx, 'locations', orgId, stops.map((s) => s.location_external_reference_id))) {
      locations.set(l.external_reference_id, { id: l.id, latitude: l.latitude, longitude: l.longitude });
    }
    const seen = new Map<number, number>();
    const rows: (LoadStopsTable & { point?: ResolvedLocation })[] = [];
    stops.forEach((s, i) => {
      const number = s.stop_number ?? i + 1;
      if (seen.has(number)) issues.push(invalid(['body', 'stops', i, 'stop_number'], `stop_number ${number} is used twice (also by stops[${seen.get(number)}]); stop numbers must be unique`));
      seen.set(number, i);
      const location = locations.get(s.location_external_reference_id);
      if (!location) {
        issues.push(invalid(['body', 'stops', i, 'location_external_reference_id'], `no location with external_reference_id '${s.location_external_reference_id}' in your organization: create locations before the loads that use them`));
      }
      // Already canonical UTC (the schema rewrites timestamps), so text order is time order.
      const early = s.early_arrival;
      const late = s.late_arrival;
      if (late < early) issues.push(invalid(['body', 'stops', i, 'late_arrival'], `late_arrival (${late}) is before early_arrival (${early})`));
      rows.push({
        id: newId('stop'),
        org_id: orgId,
        load_id: loadId,
        stop_number: number,
        stop_type: s.stop_type,
        location_id: location?.id ?? '',
        early_arrival: early,
        late_arrival: late,
        ...(location ? { point: location } : {}),
      });
    });
    if (!stops.some((s) => isPickup(s.stop_type))) issues.push(invalid(['body', 'stops'], 'a load needs at least one Pickup (or Both) stop'));
    if (!stops.some((s) => isDelivery(s.stop_type))) issues.push(invalid(['body', 'stops'], 'a load needs at least one Delivery (or Both) stop'));
    if (issues.length > 0) throw new ValidationError(issues);
    rows.sort((a, b) => a.stop_number - b.stop_number);
    const firstPickup = rows.find((r) => isPickup(r.stop_type));
    return {
      rows: rows.map(({ point: _point, ...row }) => row),
      pickupAt: firstPickup?.early_arrival ?? null,
      estimatedMiles: estimateMiles(rows.map((r) => r.point!)),
    };
  }

  /** Great-circle miles between consecutive stops × circuity, to 0.1 mile (D4). */
  function estimateMiles(points: ResolvedLocation[]): number | null {
    if (points.length < 2) return null;
    let miles = 0;
    for (let i = 1; i < points.length; i++) miles += haversineMiles(points[i - 1]!, points[i]!);
    return Math.round(miles * options.circuityFactor * 10) / 10;
  }

  async function stopsWithPoints(tx: Executor, orgId: string, loadId: string) {
    const rows = await tx
      .selectFrom('load_stops as s')
      .innerJoin('locations as l', 'l.id', 's.location_id')
      .select(['l.latitude', 'l.longitude'])
      .where('s.org_id', '=', orgId)
      .where('s.load_id', '=', loadId)
      .orderBy('s.stop_number')
      .execute();
    return rows;
  }

  async function present(tx: Executor, orgId: string, rows: LoadsTable[]): Promise<Load[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [stops, rates, customers, carriers] = await Promise.all([
      stopsOf(tx, orgId, ids),
      ratesOf(tx, orgId, ids),
      namesByIds(tx, 'customers', orgId, rows.map((r) => r.customer_id)),
      namesByIds(tx, 'carriers', orgId, rows.flatMap((r) => (r.carrier_id ? [r.carrier_id] : []))),
    ]);
    const reps = rows.flatMap((r) => [r.sales_rep, r.dispatcher_rep]).filter((x): x is string => x !== null).map((x) => JSON.parse(x) as StoredRep);
    const users = await usersMatching(
      tx,
      orgId,
      [...new Set(reps.flatMap((r) => (r.email ? [r.email.toLowerCase()] : [])))],
      [...new Set(reps.flatMap((r) => (r.name ? [r.name.toLowerCase()] : [])))],
    );
    const userByEmail = new Map(users.map((u) => [u.email_lower, u.id]));
    const usersByName = new Map<string, string[]>();
    for (const u of users) {
      const key = u.name.trim().toLowerCase();
      usersByName.set(key, [...(usersByName.get(key) ?? []), u.id]);
    }
    const member = (json: string | null): TeamMember | null => {
      if (json === null) return null;
      const rep = JSON.parse(json) as StoredRep;
      const byName = rep.name ? usersByName.get(rep.name.toLowerCase()) : undefined;
      const serviceUserId = (rep.email ? userByEmail.get(rep.email.toLowerCase()) : undefined) ?? (byName?.length === 1 ? byName[0] : undefined) ?? null;
      return { ...rep, service_user_id: serviceUserId };
    };
    const group = <T extends { load_id: string }>(items: T[]) => {
      const m = new Map<string, T[]>();
      for (const it of items) m.set(it.load_id, [...(m.get(it.load_id) ?? []), it]);
      return m;
    };
    // D8: without the caller's figure, max_buy_rate comes from the latest market snapshot on the lane.
    const stopsByLoad = group(stops);
    const marketRates = new Map<string, number | null>();
    const priced = rows.some((r) => r.max_buy_rate_source !== 'caller') ? await deps.lanes.equipmentWithSnapshots(tx, orgId) : new Set<string>();
    for (const r of rows) {
      if (r.max_buy_rate_source === 'caller' || !priced.has(r.equipment_type)) continue;
      const loadStops = stopsByLoad.get(r.id) ?? [];
      const first = loadStops.find((s) => isPickup(s.stop_type));
      const last = [...loadStops].reverse().find((s) => isDelivery(s.stop_type));
      marketRates.set(r.id, await deps.lanes.marketMaxBuyRate(tx, orgId, { equipment_type: r.equipment_type, origin: first ?? null, destination: last ?? null }, r.total_distance));
    }
    const ratesByLoad = group(rates);
    const customerById = new Map(customers.map((c) => [c.id, c]));
    const carrierById = new Map(carriers.map((c) => [c.id, c]));
    return rows.map((r) => {
      const customer = customerById.get(r.customer_id);
      const carrier = r.carrier_id ? carrierById.get(r.carrier_id) : undefined;
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
          : { max_buy_rate: marketRates.get(r.id) ?? null, max_buy_rate_source: marketRates.get(r.id) != null ? 'market' : null }),
        stops: (stopsByLoad.get(r.id) ?? []).map((s: StopWithLocation) => ({
          id: s.id,
          stop_number: s.stop_number,
          stop_type: s.stop_type,
          location_id: s.location_id,
          location_external_reference_id: s.location_external_reference_id,
          location_name: s.location_name,
          early_arrival: s.early_arrival,
          late_arrival: s.late_arrival,
        })),
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
  }

  const lifecycle = recordLifecycle<'loads', LoadCreate, LoadUpdate, Load>({
    store,
    clock,
    table: 'loads',
    kind: 'Load',
    idPrefix: 'load_',
    createSchema: LoadCreate,
    async insert(tx, orgId, input) {
      const now = toIso(clock.now());
      const id = newId('load');
      const customerId = await requireCustomer(tx, orgId, input.customer_external_reference_id);
      const carrierId = await carrierIdFor(tx, orgId, input.carrier_external_reference_id ?? null);
      const stops = await buildStops(tx, orgId, id, input.stops);
      const status = input.status ?? 'ACTIVE';
      const callerDistance = input.total_distance ?? null;
      const row: LoadsTable = {
        id,
        org_id: orgId,
        external_reference_id: input.external_reference_id,
        status,
        equipment_type: input.equipment_type,
        transport_mode: input.transport_mode,
        description: input.description ?? null,
        customer_id: customerId,
        carrier_id: carrierId,
        weight: input.weight ?? null,
        weight_uom: input.weight_uom ?? null,
        total_distance: callerDistance ?? stops.estimatedMiles,
        total_distance_source: callerDistance !== null ? 'caller' : stops.estimatedMiles !== null ? 'estimated' : null,
        max_buy_rate: input.max_buy_rate ?? null,
        max_buy_rate_source: input.max_buy_rate !== undefined && input.max_buy_rate !== null ? 'caller' : null,
        sales_rep: cleanRep(input.sales_rep ?? null, 'sales_rep'),
        dispatcher_rep: cleanRep(input.dispatcher_rep ?? null, 'dispatcher_rep'),
        assigned_dispatcher: input.assigned_dispatcher ?? null,
        actual_dispatcher: input.actual_dispatcher ?? null,
        operation_user: input.operation_user ?? null,
        account_manager: input.account_manager ?? null,
        pickup_at: stops.pickupAt,
        status_updated_at: now,
        delivered_at: deliveredAt(null, status, now),
        created_at: now,
        updated_at: now,
      };
      await repo.insert(tx, row);
      await countStatusChange(tx, orgId, null, status);
      await replaceStops(tx, orgId, id, stops.rows);
      await replaceRates(tx, orgId, id, rateRows(orgId, id, input.financial_rates ?? []));
      return row;
    },
    async updateColumns(tx, orgId, row, input) {
      const now = toIso(clock.now());
      const patch: Partial<LoadsTable> = {};
      let touched = false;
      if (input.equipment_type !== undefined) patch.equipment_type = input.equipment_type;
      if (input.transport_mode !== undefined) patch.transport_mode = input.transport_mode;
      if (input.description !== undefined) patch.description = input.description;
      if (input.weight !== undefined) patch.weight = input.weight;
      if (input.weight_uom !== undefined) patch.weight_uom = input.weight_uom;
      for (const f of ['assigned_dispatcher', 'actual_dispatcher', 'operation_user', 'account_manager'] as const) {
        if (input[f] !== undefined) patch[f] = input[f];
      }
      if (input.sales_rep !== undefined) patch.sales_rep = cleanRep(input.sales_rep, 'sales_rep');
      if (input.dispatcher_rep !== undefined) patch.dispatcher_rep = cleanRep(input.dispatcher_rep, 'dispatcher_rep');
      if (input.customer_external_reference_id !== undefined) patch.customer_id = await requireCustomer(tx, orgId, input.customer_external_reference_id);
      if (input.carrier_external_reference_id !== undefined) patch.carrier_id = await carrierIdFor(tx, orgId, input.carrier_external_reference_id);
      if (input.max_buy_rate !== undefined) {
        patch.max_buy_rate = input.max_buy_rate;
        patch.max_buy_rate_source = input.max_buy_rate === null ? null : 'caller';
      }
      if (input.status !== undefined && input.status !== row.status) {
        await countStatusChange(tx, orgId, row.status, input.status);
        patch.status = input.status;
        patch.status_updated_at = now;
        patch.delivered_at = deliveredAt(row, input.status, now);
      }
      let estimate: number | null | undefined;
      if (input.stops !== undefined) {
        const stops = await buildStops(tx, orgId, row.id, input.stops);
        const current = await stopsOf(tx, orgId, [row.id]);
        const same =
          current.length === stops.rows.length &&
          current.every((c, i) => {
            const n = stops.rows[i]!;
            return c.stop_number === n.stop_number && c.stop_type === n.stop_type && c.location_id === n.location_id && c.early_arrival === n.early_arrival && c.late_arrival === n.late_arrival;
          });
        if (!same) {
          await replaceStops(tx, orgId, row.id, stops.rows);
          touched = true;
        }
        patch.pickup_at = stops.pickupAt;
        estimate = stops.estimatedMiles;
      }
      if (input.total_distance !== undefined && input.total_distance !== null) {
        patch.total_distance = input.total_distance;
        patch.total_distance_source = 'caller';
      } else if (input.total_distance === null || (estimate !== undefined && row.total_distance_source !== 'caller')) {
        // An estimate follows the stops; null hands a caller's distance back to the estimate.
        const miles = estimate !== undefined ? estimate : estimateMiles(await stopsWithPoints(tx, orgId, row.id).then((r) => r.map((p) => ({ id: '', ...p }))));
        patch.total_distance = miles;
        patch.total_distance_source = miles === null ? null : 'estimated';
      }
      if (input.financial_rates !== undefined) {
        const current = await ratesOf(tx, orgId, [row.id]);
        const next = rateRows(orgId, row.id, input.financial_rates);
        const same = JSON.stringify(current.map(({ id: _i, ...r }) => r)) === JSON.stringify(next.map(({ id: _i, ...r }) => r));
        if (!same) {
          await replaceRates(tx, orgId, row.id, next);
          touched = true;
        }
      }
      return { patch, touched };
    },
    present,
    // Lane history follows every load write in the same transaction: recommendations read their writes.
    afterSave: async (tx, orgId, row) => deps.analytics.touch(await syncLaneHistory(tx, orgId, row.id)),
    async beforeDelete(tx, orgId, row) {
      await countStatusChange(tx, orgId, row.status, null);
      const lane = await tx.selectFrom('lane_history').select(['equipment_type', 'origin_cell', 'destination_cell']).where('load_id', '=', row.id).executeTakeFirst();
      if (lane) deps.analytics.touch([lane]);
    },
  });

  async function recommendations(orgId: string, load: Load): Promise<CarrierRecommendation[]> {
    return deps.lanes.recommend(store.db, orgId, load);
  }

  function listFilter(orgId: string, query: LoadListQuery): Promise<LoadFilter | null> {
    return (async () => {
      const filter: LoadFilter = { ...query };
      if (query.status !== undefined) {
        const canonical = new Map(LOAD_STATUSES.map((s) => [s.toLowerCase(), s]));
        const parts = query.status.split(',').map((s) => s.trim()).filter(Boolean);
        const unknown = parts.filter((p) => !canonical.has(p.toLowerCase()));
        if (parts.length === 0 || unknown.length > 0) {
          throw new ValidationError([
            { type: 'enum', loc: ['query', 'status'], msg: `Input should be one or more of ${LOAD_STATUSES.map((s) => `'${s}'`).join(', ')}, separated by commas` },
          ]);
        }
        filter.statuses = parts.map((p) => canonical.get(p.toLowerCase())!);
      }
      if (query.customer_external_reference_id !== undefined) {
        const [c] = await findByRefs(store.db, 'customers', orgId, [query.customer_external_reference_id]);
        if (!c) return null;
        if (query.customer_id !== undefined && query.customer_id !== c.id) return null;
        filter.customer_id = c.id;
      }
      if (query.carrier_external_reference_id !== undefined) {
        const [c] = await findByRefs(store.db, 'carriers', orgId, [query.carrier_external_reference_id]);
        if (!c) return null;
        filter.carrier_id = c.id;
      }
      return filter;
    })();
  }

  return {
    ...lifecycle,
    present,
    /** GET of one load: an open load carries its carrier recommendations (D7), any other an empty list. */
    async get(orgId: string, ref: string): Promise<Load> {
      const load = await lifecycle.get(orgId, ref);
      return { ...load, carrier_recommendations: OPEN_STATUSES.has(load.status) ? await recommendations(orgId, load) : [] };
    },
    /** The dedicated endpoint: recommendations for any load, open or not. */
    async recommendationsFor(orgId: string, ref: string) {
      const load = await lifecycle.get(orgId, ref);
      return {
        load_id: load.id,
        external_reference_id: load.external_reference_id,
        status: load.status,
        open: OPEN_STATUSES.has(load.status),
        carrier_recommendations: await recommendations(orgId, load),
      };
    },
    async list(orgId: string, query: LoadListQuery) {
      const filter = await listFilter(orgId, query);
      // A filter naming a customer or carrier that does not exist matches nothing.
      const { rows, total } = filter ? await listLoads(store.db, orgId, filter, query) : { rows: [], total: 0 };
      return { items: await present(store.db, orgId, rows), pagination: pagination(query.page, query.page_size, total) };
    },
  };
}

export type LoadsService = ReturnType<typeof loadsService>;
