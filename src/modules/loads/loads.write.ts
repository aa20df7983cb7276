import type { Clock } from '../../lib/clock.js';
import type { LanesService } from '../lanes/lanes.service.js';
import type { Executor } from '../../lib/db/index.js';
import type { LoadRatesTable, LoadsTable, LocationsTable } from '../../lib/db/types.js';
import { toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import {
  carryActuals,
  cleanTeamMember,
  deliveredAt,
  distanceRule,
  estimateMiles,
  estimatedDistance,
  normalizeRates,
  planStops,
  sameRates,
  sameStops,
  type RateRequest,
  type StopPlan,
  type StopRequest,
  type TeamMemberRequest,
} from '../../domain/load.js';
import { sameLaneEnds } from '../../domain/lane.js';
import { sentFields } from '../shared/records.js';
import { unknownReferenceIssue } from './loads.checks.js';
import { LOAD_CARRIER, LOAD_CUSTOMER, type LoadReference } from './references.js';
import { countStatusChange, type StopWithLocation } from './loads.repo.js';
import type { LoadWorkspace } from './loads.workspace.js';
import type { KnownParts, NamedRecord } from './loads.present.js';
import type { NewRecordBase, UpdateColumns } from '../shared/record-kind.js';
import type { ChangeSet } from '../shared/write-pipeline.js';
import type { LoadCreate, LoadUpdate } from './loads.schema.js';

/** What a load's writes and answers need. */
export interface LoadDeps {
  clock: Clock;
  lanes: LanesService;
  /** Road miles per great-circle mile for estimated distances (default 1.2, the usual truck circuity). */
  circuityFactor: number;
  /** PostgreSQL: a read is one round trip (the load and its parts in one statement; src/lib/db/capabilities.ts). */
  oneStatementReads: boolean;
}

const FREE_TEXT = ['assigned_dispatcher', 'actual_dispatcher', 'operation_user', 'account_manager'] as const;

// The rules of writing a load (docs/api.md, "Loads"): references resolved through the workspace, the rest
// by the domain core. Every problem of a body in one 422 (docs/api.md, "Errors"): the checks below add to
// `issues` instead of throwing; the write throws them all together before its first write.

/** The customer or carrier a load names (a 422 entry in `issues` when the organization has none). */
async function resolveRef(tx: Executor, ws: LoadWorkspace, reference: LoadReference, ref: string, issues: ValidationIssue[]): Promise<NamedRecord> {
  const row = await ws.record(tx, reference.kind, ref);
  if (!row) issues.push(unknownReferenceIssue(reference, ref));
  return { id: row?.id ?? '', external_reference_id: row?.external_reference_id ?? ref, name: row?.name ?? '' };
}

const carrierOf = (tx: Executor, ws: LoadWorkspace, ref: string | null, issues: ValidationIssue[]) =>
  ref === null ? null : resolveRef(tx, ws, LOAD_CARRIER, ref, issues);

type PlacedPlan = StopPlan & { places: Map<string, LocationsTable> };

/** The stops planned against their locations (read through the workspace). */
async function stopPlan(tx: Executor, ws: LoadWorkspace, stops: StopRequest[], circuityFactor: number, issues: ValidationIssue[]): Promise<PlacedPlan> {
  const places: LocationsTable[] = [];
  for (const ref of new Set(stops.map((s) => s.location_external_reference_id))) {
    const place = await ws.record(tx, 'locations', ref);
    if (place) places.push(place);
  }
  const plan = planStops(stops, new Map(places.map((l) => [l.external_reference_id, l])), circuityFactor);
  issues.push(...plan.issues);
  return Object.assign({}, plan, { places: new Map(places.map((l) => [l.id, l])) });
}

function refuse(issues: ValidationIssue[]): void {
  if (issues.length > 0) throw new ValidationError(issues);
}

/** New stop rows as reads return them (with their places): what the workspace holds and the answer shows. */
function stopRows(orgId: string, loadId: string, plan: PlacedPlan): StopWithLocation[] {
  return plan.stops.map((s) => {
    const l = plan.places.get(s.location_id)!;
    return {
      id: newId('stop'),
      org_id: orgId,
      load_id: loadId,
      ...s,
      location_external_reference_id: l.external_reference_id,
      location_name: l.name,
      latitude: l.latitude,
      longitude: l.longitude,
    };
  });
}

function rateRows(orgId: string, loadId: string, rates: RateRequest[]): LoadRatesTable[] {
  return normalizeRates(rates).map((r) => ({ id: newId('rate'), org_id: orgId, load_id: loadId, ...r }));
}

function teamMember(input: TeamMemberRequest | null, field: string, issues: ValidationIssue[]): string | null {
  const { rep, issue } = cleanTeamMember(input, field);
  if (issue) issues.push(issue);
  return rep === null ? null : JSON.stringify(rep);
}

/** A new load (the create rules): its references resolved, its stops planned, held in the workspace with its stops and rates. */
export async function insertLoad(
  deps: LoadDeps,
  tx: Executor,
  input: LoadCreate,
  base: NewRecordBase,
  changes: ChangeSet,
  ws: LoadWorkspace,
): Promise<LoadsTable> {
  const { id, org_id: orgId, created_at: now } = base;
  const issues: ValidationIssue[] = [];
  const customer = await resolveRef(tx, ws, LOAD_CUSTOMER, input.customer_external_reference_id, issues);
  const carrier = await carrierOf(tx, ws, input.carrier_external_reference_id ?? null, issues);
  const plan = await stopPlan(tx, ws, input.stops, deps.circuityFactor, issues);
  const salesRep = teamMember(input.sales_rep ?? null, 'sales_rep', issues);
  const dispatcherRep = teamMember(input.dispatcher_rep ?? null, 'dispatcher_rep', issues);
  refuse(issues);
  const status = input.status ?? 'ACTIVE';
  const sent = input.total_distance ?? null;
  const distance = sent !== null ? { total_distance: sent, total_distance_source: 'caller' as const } : estimatedDistance(plan.estimatedMiles);
  // The fields one by one, not `...base` first: Node 20's V8 adds each property after a leading spread
  // on a slow path (about 1 µs each; docs/architecture.md).
  const row: LoadsTable = {
    id: base.id,
    org_id: base.org_id,
    external_reference_id: base.external_reference_id,
    created_at: base.created_at,
    updated_at: base.updated_at,
    status,
    equipment_type: input.equipment_type,
    transport_mode: input.transport_mode,
    description: input.description ?? null,
    customer_id: customer.id,
    carrier_id: carrier?.id ?? null,
    weight: input.weight ?? null,
    weight_uom: input.weight_uom ?? null,
    ...distance,
    max_buy_rate: input.max_buy_rate ?? null,
    max_buy_rate_source: input.max_buy_rate !== undefined && input.max_buy_rate !== null ? 'caller' : null,
    sales_rep: salesRep,
    dispatcher_rep: dispatcherRep,
    assigned_dispatcher: input.assigned_dispatcher ?? null,
    actual_dispatcher: input.actual_dispatcher ?? null,
    operation_user: input.operation_user ?? null,
    account_manager: input.account_manager ?? null,
    pickup_at: plan.pickupAt,
    delivery_deadline: plan.deliveryDeadline,
    status_updated_at: now,
    delivered_at: deliveredAt(null, status, now),
  };
  countStatusChange(changes, null, status);
  const stops = stopRows(orgId, id, plan);
  const rates = rateRows(orgId, id, input.financial_rates ?? []);
  ws.insert(row, stops, rates);
  changes.keep(id, { stops, rates, customer, carrier } satisfies KnownParts);
  return row;
}

/** The plain columns an update sets (no reads, no writes elsewhere). */
function plainPatch(row: LoadsTable, input: LoadUpdate, now: string, issues: ValidationIssue[]): Partial<LoadsTable> {
  const patch: Partial<LoadsTable> = sentFields(input, ['equipment_type', 'transport_mode', 'description', 'weight', 'weight_uom', ...FREE_TEXT]);
  if (input.sales_rep !== undefined) patch.sales_rep = teamMember(input.sales_rep, 'sales_rep', issues);
  if (input.dispatcher_rep !== undefined) patch.dispatcher_rep = teamMember(input.dispatcher_rep, 'dispatcher_rep', issues);
  if (input.max_buy_rate !== undefined) {
    patch.max_buy_rate = input.max_buy_rate;
    patch.max_buy_rate_source = input.max_buy_rate === null ? null : 'caller';
  }
  if (input.status !== undefined && input.status !== row.status) {
    patch.status = input.status;
    patch.status_updated_at = now;
    patch.delivered_at = deliveredAt(row, input.status, now);
  }
  return patch;
}

/** The columns a load update sets, after replacing its stops and rates when sent and different (docs/api.md, "Loads"). */
export async function loadUpdateColumns(
  deps: LoadDeps,
  tx: Executor,
  orgId: string,
  row: LoadsTable,
  input: LoadUpdate,
  changes: ChangeSet,
  ws: LoadWorkspace,
): Promise<UpdateColumns<'loads'>> {
  const issues: ValidationIssue[] = [];
  const patch = plainPatch(row, input, toIso(deps.clock.now()), issues);
  let touched = false;
  // What can change the load's own recommendations (the follow-up of load.recommendations_changed).
  let laneMoved = false;
  // What this write learns of the load's answer beside its row: when it is all known (a full upsert,
  // the usual TMS push), the answer at seal is built from it instead of read back.
  let customer: NamedRecord | undefined;
  let carrier: NamedRecord | null | undefined = row.carrier_id === null ? null : undefined;
  let stops: StopWithLocation[] | undefined;
  let rates: LoadRatesTable[] | undefined;
  if (input.customer_external_reference_id !== undefined) {
    customer = await resolveRef(tx, ws, LOAD_CUSTOMER, input.customer_external_reference_id, issues);
    patch.customer_id = customer.id;
  }
  if (input.carrier_external_reference_id !== undefined) {
    carrier = await carrierOf(tx, ws, input.carrier_external_reference_id, issues);
    patch.carrier_id = carrier?.id ?? null;
  }
  const plan = input.stops !== undefined ? await stopPlan(tx, ws, input.stops, deps.circuityFactor, issues) : undefined;
  refuse(issues);
  if (patch.status !== undefined) countStatusChange(changes, row.status, patch.status);
  if (input.stops !== undefined && plan) {
    const current = await ws.stopsOf(tx, row.id);
    // Actuals not sent stay; an arrival already recorded keeps the deadline it was scored against.
    const carried = Object.assign({}, plan, { stops: carryActuals(input.stops, plan.stops, current) });
    stops = current;
    if (!sameStops(current, carried.stops)) {
      const next = stopRows(orgId, row.id, carried);
      ws.replaceStops(row.id, next);
      stops = next;
      touched = true;
      laneMoved = !sameLaneEnds(current, carried.stops);
    }
    patch.pickup_at = plan.pickupAt;
    patch.delivery_deadline = plan.deliveryDeadline;
  }
  const rule = distanceRule(input.total_distance, row.total_distance_source as 'caller' | 'estimated' | null, plan !== undefined);
  if (rule === 'caller') Object.assign(patch, { total_distance: input.total_distance, total_distance_source: 'caller' });
  if (rule === 'estimate')
    Object.assign(patch, estimatedDistance(plan ? plan.estimatedMiles : estimateMiles(await ws.stopsOf(tx, row.id), deps.circuityFactor)));
  if (input.financial_rates !== undefined) {
    const next = rateRows(orgId, row.id, input.financial_rates);
    rates = await ws.ratesOf(tx, row.id);
    if (!sameRates(rates, next)) {
      ws.replaceRates(row.id, next);
      rates = next;
      touched = true;
    }
  }
  if (customer && carrier !== undefined && stops && rates) changes.keep(row.id, { stops, rates, customer, carrier } satisfies KnownParts);
  const followUp =
    laneMoved || ['status', 'equipment_type', 'carrier_id'].some((k) => k in patch && patch[k as keyof LoadsTable] !== row[k as keyof LoadsTable]);
  return { patch, touched, followUp };
}
