import { haversineMiles, type Coordinates } from '../geo/distance.js';
import { DELIVERED_STATUSES, isDelivery, isPickup } from './enums.js';

/** A broken rule of the load, where it is in the body and why (the 422 `detail` entry). */
export interface RuleIssue {
  type: 'value_error';
  loc: (string | number)[];
  msg: string;
}

export const ruleIssue = (loc: (string | number)[], msg: string): RuleIssue => ({ type: 'value_error', loc, msg: `Value error, ${msg}` });

// ---- Stops (docs/api.md, "Loads") ----

export interface StopRequest {
  stop_number?: number;
  stop_type: string;
  location_external_reference_id: string;
  /** Canonical UTC text (the schema rewrites timestamps), so text order is time order. */
  early_arrival: string;
  late_arrival: string;
  /** An actual (docs/api.md, "Stop actuals, tracking events and recommendation evidence"); undefined: not sent (an update keeps the stop's stored value), null: cleared. */
  actual_arrival?: string | null;
  actual_departure?: string | null;
}

export interface PlacedLocation extends Coordinates {
  id: string;
}

export interface PlannedStop {
  stop_number: number;
  stop_type: string;
  location_id: string;
  early_arrival: string;
  late_arrival: string;
  /** The actual arrival and departure (null: unknown). */
  actual_arrival: string | null;
  actual_departure: string | null;
  /** The deadline (late_arrival, else early_arrival) when actual_arrival was recorded; null without one. */
  arrival_deadline: string | null;
}

export interface StopPlan {
  /** By stop_number. */
  stops: PlannedStop[];
  /** The first pickup's early_arrival (the list's pickup_date filters). */
  pickupAt: string | null;
  /** The last delivery's late_arrival (the lane's destination; the window a backhaul must deliver in). */
  deliveryDeadline: string | null;
  estimatedMiles: number | null;
  issues: RuleIssue[];
}

/** A stop's location the organization does not have. */
export const unknownLocationIssue = (index: number, ref: string): RuleIssue =>
  ruleIssue(
    ['body', 'stops', index, 'location_external_reference_id'],
    `no location with external_reference_id '${ref}' in your organization: create locations before the loads that use them`,
  );

/** A stop whose late_arrival is before its early_arrival (both canonical UTC text). */
export const windowIssue = (index: number, early: string, late: string): RuleIssue =>
  ruleIssue(['body', 'stops', index, 'late_arrival'], `late_arrival (${late}) is before early_arrival (${early})`);

/** A stop whose actual_departure is before its actual_arrival. */
export const actualsIssue = (index: number, arrival: string, departure: string): RuleIssue =>
  ruleIssue(['body', 'stops', index, 'actual_departure'], `actual_departure (${departure}) is before actual_arrival (${arrival})`);

/**
 * An update's stops beside the stored ones (by stop_number): an actual not sent keeps the stored value,
 * and an arrival already recorded keeps the deadline it was recorded against (a window moved after
 * the arrival changes nothing).
 */
export function carryActuals(sent: readonly StopRequest[], planned: readonly PlannedStop[], stored: readonly PlannedStop[]): PlannedStop[] {
  const before = new Map(stored.map((s) => [s.stop_number, s]));
  const sentByNumber = new Map(sent.map((s, i) => [s.stop_number ?? i + 1, s]));
  return planned.map((p) => {
    const old = before.get(p.stop_number);
    const req = sentByNumber.get(p.stop_number);
    if (!old) return p;
    const arrival = req?.actual_arrival === undefined ? old.actual_arrival : p.actual_arrival;
    const departure = req?.actual_departure === undefined ? old.actual_departure : p.actual_departure;
    const deadline = arrival === null ? null : arrival === old.actual_arrival && old.arrival_deadline !== null ? old.arrival_deadline : p.late_arrival;
    return Object.assign({}, p, { actual_arrival: arrival, actual_departure: departure, arrival_deadline: deadline });
  });
}

/**
 * A full stops array checked against its rules (docs/api.md, "Loads"): numbers default to the position
 * and are unique, late not before early, at least one pickup and one delivery, every location known
 * (`locations` by reference).
 */
export function planStops(stops: readonly StopRequest[], locations: ReadonlyMap<string, PlacedLocation>, circuity: number): StopPlan {
  const issues: RuleIssue[] = [];
  const seen = new Map<number, number>();
  const planned: (PlannedStop & { point: PlacedLocation | undefined })[] = [];
  stops.forEach((s, i) => {
    const number = s.stop_number ?? i + 1;
    const at = ['body', 'stops', i];
    if (seen.has(number))
      issues.push(ruleIssue([...at, 'stop_number'], `stop_number ${number} is used twice (also by stops[${seen.get(number)}]); stop numbers must be unique`));
    seen.set(number, i);
    const point = locations.get(s.location_external_reference_id);
    if (!point) issues.push(unknownLocationIssue(i, s.location_external_reference_id));
    if (s.late_arrival < s.early_arrival) issues.push(windowIssue(i, s.early_arrival, s.late_arrival));
    if (s.actual_arrival && s.actual_departure && s.actual_departure < s.actual_arrival) issues.push(actualsIssue(i, s.actual_arrival, s.actual_departure));
    const actualArrival = s.actual_arrival ?? null;
    planned.push({
      stop_number: number,
      stop_type: s.stop_type,
      location_id: point?.id ?? '',
      early_arrival: s.early_arrival,
      late_arrival: s.late_arrival,
      actual_arrival: actualArrival,
      actual_departure: s.actual_departure ?? null,
      arrival_deadline: actualArrival === null ? null : s.late_arrival,
      point,
    });
  });
  if (!stops.some((s) => isPickup(s.stop_type))) issues.push(ruleIssue(['body', 'stops'], 'a load needs at least one Pickup (or Both) stop'));
  if (!stops.some((s) => isDelivery(s.stop_type))) issues.push(ruleIssue(['body', 'stops'], 'a load needs at least one Delivery (or Both) stop'));
  planned.sort((a, b) => a.stop_number - b.stop_number);
  const points = planned.map((p) => p.point);
  return {
    stops: planned.map(({ point: _point, ...stop }) => stop),
    pickupAt: planned.find((p) => isPickup(p.stop_type))?.early_arrival ?? null,
    deliveryDeadline: [...planned].reverse().find((p) => isDelivery(p.stop_type))?.late_arrival ?? null,
    estimatedMiles: points.every((p) => p !== undefined) ? estimateMiles(points as PlacedLocation[], circuity) : null,
    issues,
  };
}

/** Whether two stop lists (both by stop_number) say the same thing: an unchanged list is not rewritten. */
export function sameStops(current: readonly PlannedStop[], next: readonly PlannedStop[]): boolean {
  return (
    current.length === next.length &&
    current.every((c, i) => {
      const n = next[i]!;
      return (
        c.stop_number === n.stop_number &&
        c.stop_type === n.stop_type &&
        c.location_id === n.location_id &&
        c.early_arrival === n.early_arrival &&
        c.late_arrival === n.late_arrival &&
        (c.actual_arrival ?? null) === (n.actual_arrival ?? null) &&
        (c.actual_departure ?? null) === (n.actual_departure ?? null) &&
        (c.arrival_deadline ?? null) === (n.arrival_deadline ?? null)
      );
    })
  );
}

/** Estimated road miles: great-circle miles between consecutive stops × circuity, to 0.1 mile; null with fewer than two. */
export function estimateMiles(points: readonly Coordinates[], circuity: number): number | null {
  if (points.length < 2) return null;
  let miles = 0;
  for (let i = 1; i < points.length; i++) miles += haversineMiles(points[i - 1]!, points[i]!);
  return Math.round(miles * circuity * 10) / 10;
}

export type DistanceSource = 'caller' | 'estimated' | null;

/**
 * total_distance after a write (docs/api.md, "Loads"): the caller's figure when sent; otherwise an
 * estimate follows the stops (new ones, or on a new load), and null hands a caller's distance back to
 * the estimate. `stored`: the load's current source, undefined for a new load.
 */
export function distanceRule(sent: number | null | undefined, stored: DistanceSource | undefined, stopsSent: boolean): 'caller' | 'estimate' | 'unchanged' {
  if (sent !== undefined && sent !== null) return 'caller';
  if (stored === undefined || sent === null || (stopsSent && stored !== 'caller')) return 'estimate';
  return 'unchanged';
}

export const estimatedDistance = (miles: number | null) => ({
  total_distance: miles,
  total_distance_source: (miles === null ? null : 'estimated') as DistanceSource,
});

// ---- Status (docs/api.md, "Loads") ----

/** Delivered (or later) keeps the first delivery time; any other status clears it. */
export function deliveredAt(previous: { status: string; delivered_at: string | null } | null, status: string, now: string): string | null {
  if (!DELIVERED_STATUSES.has(status)) return null;
  return previous && DELIVERED_STATUSES.has(previous.status) && previous.delivered_at ? previous.delivered_at : now;
}

// ---- Team members (docs/api.md, "Loads") ----

export interface TeamMemberRecord {
  name: string | null;
  email: string | null;
  external_reference_id: string | null;
}

export interface TeamMemberRequest {
  name?: string | null;
  email?: string | null;
  external_reference_id?: string | null;
}

/** A rep as stored: trimmed, blanks as null; null (clearing it) stays null. At least one field. */
export function cleanTeamMember(input: TeamMemberRequest | null, field: string): { rep: TeamMemberRecord | null; issue?: RuleIssue } {
  if (input === null) return { rep: null };
  const clean = (v: string | null | undefined) => (v === undefined || v === null || v.trim() === '' ? null : v.trim());
  const rep = { name: clean(input.name), email: clean(input.email), external_reference_id: clean(input.external_reference_id) };
  if (!rep.name && !rep.email && !rep.external_reference_id) {
    return { rep: null, issue: ruleIssue(['body', field], `${field} needs at least one of name, email, external_reference_id (or null to clear it)`) };
  }
  return { rep };
}

export interface WorkspaceUser {
  id: string;
  email_lower: string;
  name: string;
}

/**
 * A rep's service_user_id: the user whose email equals the rep's (any case), else the one user whose
 * name equals the rep's (any case, trimmed), else null.
 */
export function teamMemberMatcher(users: readonly WorkspaceUser[]): (rep: TeamMemberRecord) => string | null {
  const byEmail = new Map(users.map((u) => [u.email_lower, u.id]));
  const byName = new Map<string, string[]>();
  for (const u of users) {
    const key = u.name.trim().toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), u.id]);
  }
  return (rep) => {
    const named = rep.name ? byName.get(rep.name.toLowerCase()) : undefined;
    return (rep.email ? byEmail.get(rep.email.toLowerCase()) : undefined) ?? (named?.length === 1 ? named[0]! : null);
  };
}

// ---- Financial rates (docs/api.md, "Loads") ----

export interface RateRequest {
  rate_entity: string;
  amount: number;
  currency?: string;
  rate_type?: string;
  description?: string | null;
}

export interface FinancialRateValues {
  position: number;
  rate_entity: string;
  amount: number;
  currency: string;
  rate_type: string;
  description: string | null;
}

/** Defaults: currency USD (upper case), rate_type LINEHAUL; order kept as sent. */
export function normalizeRates(rates: readonly RateRequest[]): FinancialRateValues[] {
  return rates.map((r, position) => ({
    position,
    rate_entity: r.rate_entity,
    amount: r.amount,
    currency: (r.currency ?? 'USD').toUpperCase(),
    rate_type: r.rate_type ?? 'LINEHAUL',
    description: r.description ?? null,
  }));
}

export function sameRates(current: readonly FinancialRateValues[], next: readonly FinancialRateValues[]): boolean {
  const values = (rs: readonly FinancialRateValues[]) => rs.map((r) => [r.position, r.rate_entity, r.amount, r.currency, r.rate_type, r.description]);
  return JSON.stringify(values(current)) === JSON.stringify(values(next));
}
