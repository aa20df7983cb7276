import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import type { LocationsTable } from '../../lib/db/types.js';
import { OPEN_STATUSES } from '../../domain/enums.js';
import type { Load, TeamMember } from '../../modules/loads/loads.schema.js';
import { sendPage, type DashboardContext } from '../context.js';
import { count, hours, inZone, label, miles, money, nearCity, utc } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';
import { mapSvg } from '../map.js';
import { outsideHours } from '../hours.js';
import { carrierPath, customerPath, locationPath, placeLabel, statusBadge } from './records.js';
import { recommendationTable } from './recommendations.js';

/** A load's page: its summary, stops on a route map, rates and carrier recommendations. */

type StopLocation = Awaited<ReturnType<DashboardContext['services']['insights']['locationsByIds']>>[number];
type Stop = Load['stops'][number];
type RepUsers = ReadonlyMap<string, { name: string; email: string }>;

/** A location's place (city, state and postal code), or the nearest city to its coordinates when no city was sent. */
export function placeOf(l: Pick<LocationsTable, 'city' | 'state' | 'postal_code' | 'country' | 'latitude' | 'longitude'> | undefined): SafeHtml | string {
  if (!l) return '';
  const place = [l.city, [l.state, l.postal_code].filter(Boolean).join(' '), l.state ? '' : l.country].filter(Boolean).join(', ');
  // Sent without a city (coordinates only): the nearest city to its coordinates, marked as such.
  const near = nearCity(l);
  return near ? html`${place}${place ? html`<br>` : ''}<span data-near-city>${near}</span>` : place;
}

/** The rep as sent: `R. Diaz <rosa@example.com> (EMP-7)`. */
function repAsSent(member: TeamMember): string {
  return [member.name, member.email ? `<${member.email}>` : null, member.external_reference_id ? `(${member.external_reference_id})` : null]
    .filter(Boolean)
    .join(' ');
}

/**
 * A load's rep: matched to a user of the organization (by email, else a unique name), the user's name
 * first with their email beneath, and the rep as sent when it says something else; unmatched, as sent.
 */
function rep(member: TeamMember | null, users: ReadonlyMap<string, { name: string; email: string }>): SafeHtml | string {
  if (!member) return '—';
  const user = member.service_user_id ? users.get(member.service_user_id) : undefined;
  if (!user) return repAsSent(member);
  const sent = repAsSent(member);
  const same = sent === `${user.name} <${user.email}>` || sent === user.name || sent.toLowerCase() === `<${user.email.toLowerCase()}>`;
  return html`<span data-rep-user>${user.name}</span><br><span class="muted">${user.email}${same ? '' : html` · sent as ${sent}`}</span>`;
}

function routeMap(load: Load, stops: Stop[], locations: Map<string, StopLocation>): SafeHtml | string {
  const placed = stops.flatMap((st) => {
    const loc = locations.get(st.location_id);
    return loc ? [{ st, loc }] : [];
  });
  return placed.length
    ? mapSvg({
        id: 'route-map',
        title: `Route of load ${load.external_reference_id}`,
        // The stops' names are the map's labels (and listed in its description by mapSvg).
        description: `${placed.length} stops in order, numbered as in the table below; the first is green, the last red.`,
        points: placed.map(({ st, loc }, i) => ({
          latitude: loc.latitude,
          longitude: loc.longitude,
          label: `Stop ${st.stop_number} (${st.stop_type}): ${loc.name}, ${placeLabel(loc)}`,
          name: loc.name,
          tag: String(st.stop_number),
          kind: i === 0 ? 'origin' : i === placed.length - 1 ? 'destination' : '',
          href: locationPath(loc.external_reference_id),
        })),
        lines: placed.slice(1).map(({ st, loc }, i) => ({
          from: placed[i]!.loc,
          to: loc,
          kind: 'route',
          width: 3,
          label: `Leg to stop ${st.stop_number}: ${placed[i]!.loc.name} → ${loc.name}`,
        })),
      })
    : '';
}

function summary(load: Load, repUsers: RepUsers): SafeHtml {
  return html`<section class="card" aria-labelledby="summary-title">
<h2 id="summary-title">Summary</h2>
<dl class="facts">
  <dt>Customer</dt><dd><a href="${customerPath(load.customer_external_reference_id)}">${load.customer_name}</a> <span class="muted">(${load.customer_external_reference_id})</span></dd>
  <dt>Carrier</dt><dd>${load.carrier_name && load.carrier_external_reference_id ? html`<a href="${carrierPath(load.carrier_external_reference_id)}">${load.carrier_name}</a> <span class="muted">(${load.carrier_external_reference_id})</span>` : 'not assigned'}</dd>
  <dt>Equipment</dt><dd>${label(load.equipment_type)} · ${load.transport_mode}</dd>
  <dt>Weight</dt><dd>${load.weight !== null ? `${count(load.weight)} ${load.weight_uom ?? ''}` : '—'}</dd>
  <dt>Total distance</dt><dd>${miles(load.total_distance)}${load.total_distance_source ? html` <span class="muted">(${load.total_distance_source === 'estimated' ? 'estimated from the stops' : 'as sent'})</span>` : ''}</dd>
  <dt>Max buy rate</dt><dd>${money(load.max_buy_rate)}${load.max_buy_rate_source ? html` <span class="muted">(${load.max_buy_rate_source === 'market' ? 'from market rates on the lane' : 'as sent'})</span>` : ''}</dd>
  <dt>Sales rep</dt><dd>${rep(load.sales_rep, repUsers)}</dd>
  <dt>Dispatcher rep</dt><dd>${rep(load.dispatcher_rep, repUsers)}</dd>
  <dt>Status since</dt><dd>${utc(load.status_updated_at)}</dd>
  <dt>Updated</dt><dd>${utc(load.updated_at)}</dd>
</dl>
</section>`;
}

function stopsTable(stops: Stop[], locations: Map<string, StopLocation>): SafeHtml {
  return html`<div class="table-wrap"><table aria-labelledby="stops-title">
  <caption>Arrival windows in each location’s local time, with its hours for scheduling</caption>
  <thead><tr><th scope="col" class="num">#</th><th scope="col">Type</th><th scope="col">Location</th><th scope="col">Arrival window (local)</th><th scope="col">Actual (local)</th>
  <th scope="col">Time zone</th><th scope="col">Weekday hours</th><th scope="col">Weekend hours</th></tr></thead>
  <tbody>${stops.map((st) => {
    const loc = locations.get(st.location_id);
    const tz = loc?.timezone ?? null;
    const flagged = outsideHours(st.early_arrival, st.late_arrival, loc);
    return html`<tr><td class="num">${st.stop_number}</td><td>${st.stop_type}</td>
    <th scope="row"><a href="${locationPath(st.location_external_reference_id)}">${st.location_name}</a> <span class="muted">(${st.location_external_reference_id})</span><br><span class="muted">${placeOf(loc)}</span></th>
    <td>${inZone(st.early_arrival, tz)}<br>to ${inZone(st.late_arrival, tz)}${flagged ? html`<br><span class="flag" data-outside-hours>⚠ ${flagged}</span>` : ''}</td>
    <td data-actuals>${st.actual_arrival ? html`arrived ${inZone(st.actual_arrival, tz)}` : html`<span class="muted">no arrival yet</span>`}${st.actual_departure ? html`<br>left ${inZone(st.actual_departure, tz)}` : ''}</td>
    <td>${tz ?? 'unknown (times in UTC)'}</td>
    <td class="nowrap">${hours(loc?.weekday_open_hours, loc?.weekday_close_hours)}</td>
    <td class="nowrap">${hours(loc?.weekend_open_hours, loc?.weekend_close_hours)}</td></tr>`;
  })}</tbody>
</table></div>`;
}

function ratesSection(load: Load): SafeHtml | string {
  return load.financial_rates.length
    ? html`<h2 id="rates-title">Financial rates</h2>
<div class="table-wrap"><table aria-labelledby="rates-title">
  <thead><tr><th scope="col">With</th><th scope="col">Type</th><th scope="col" class="num">Amount</th><th scope="col">Description</th></tr></thead>
  <tbody>${load.financial_rates.map(
    (r) =>
      html`<tr><td>${label(r.rate_entity)}</td><td>${label(r.rate_type)}</td><td class="num">${money(r.amount, r.currency)}</td><td>${r.description ?? ''}</td></tr>`,
  )}</tbody>
</table></div>`
    : '';
}

async function loadPage(ctx: DashboardContext, orgId: string, ref: string): Promise<{ title: string; body: SafeHtml }> {
  const load = await ctx.services.loads.get(orgId, ref);
  const repUserIds = [load.sales_rep?.service_user_id, load.dispatcher_rep?.service_user_id].filter((id): id is string => typeof id === 'string');
  const [stopLocations, repUsers] = await Promise.all([
    ctx.services.insights.locationsByIds(
      orgId,
      load.stops.map((st) => st.location_id),
    ),
    ctx.services.insights.usersByIds(orgId, repUserIds),
  ]);
  const locations = new Map(stopLocations.map((l) => [l.id, l]));
  const open = OPEN_STATUSES.has(load.status);
  const recs = load.carrier_recommendations ?? [];
  const stops = [...load.stops].sort((a, b) => a.stop_number - b.stop_number);
  const contacts = await ctx.services.insights.primaryContacts(
    orgId,
    recs.map((r) => r.carrier_id),
  );
  return {
    title: `Load ${load.external_reference_id}`,
    body: html`<p><a href="/loads">← All loads</a></p>
<h1>Load ${load.external_reference_id} ${statusBadge(load.status)}</h1>
${load.description ? html`<p>${load.description}</p>` : ''}
${summary(load, repUsers)}
<h2 id="stops-title">Stops</h2>
${routeMap(load, stops, locations)}
${stopsTable(stops, locations)}
${ratesSection(load)}
<h2 id="recs-title">Carrier recommendations</h2>
${
  !open
    ? html`<p>Recommendations are shown for open loads (Active, Spot, Tendered, Tender rejected); this load is ${label(load.status).toLowerCase()}.</p>`
    : recs.length === 0
      ? html`<p>No carrier has delivered a load on this lane yet.</p>`
      : recommendationTable('recs-title', recs, contacts)
}`,
  };
}

export async function showLoad(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const { title, body } = await loadPage(ctx, s.orgId, String((req.params as { ref: string }).ref));
  return sendPage(reply, page({ title, session: s, active: 'loads', body }));
}
