import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { LocationsTable } from '../../lib/db/types.js';
import type { Carrier } from '../../modules/carriers/carriers.schema.js';
import { LOAD_STATUSES, OPEN_STATUSES, isPickup } from '../../domain/enums.js';
import { laneEnds } from '../../domain/lane.js';
import type { Load, TeamMember } from '../../modules/loads/loads.schema.js';
import type { Location } from '../../modules/locations/locations.schema.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { cellBoxLabel, count, hours, inZone, label, miles, money, utc } from '../format.js';
import { html, segment, type SafeHtml } from '../html.js';
import { page, pager } from '../layout.js';
import { pagination } from '../../lib/http/pagination.js';

const PAGE_SIZE = 25;
const OPEN = 'open';

function queryText(req: FastifyRequest, name: string, max = 100): string {
  const v = (req.query as Record<string, unknown>)[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first.trim().slice(0, max) : '';
}

function pageNumber(req: FastifyRequest): number {
  const n = Number(queryText(req, 'page'));
  return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : 1;
}

function searchForm(path: string, labelText: string, value: string, extra: SafeHtml | string = ''): SafeHtml {
  return html`<form class="inline" method="get" action="${path}" role="search">
  <div><label for="q">${labelText}</label><input id="q" name="q" type="search" value="${value}" maxlength="100"></div>
  ${extra}
  <div><button type="submit">Search</button></div>
  ${value || extra ? html`<div><a href="${path}">Clear</a></div>` : ''}
</form>`;
}

function statusBadge(status: string): SafeHtml {
  const kind = OPEN_STATUSES.has(status) ? 'warn' : status === 'CANCELLED' || status === 'ON_HOLD' || status === 'INACTIVE' ? 'bad' : 'ok';
  return html`<span class="badge ${kind}">${label(status)}</span>`;
}

const loadPath = (ref: string) => `/loads/${segment(ref)}`;

function endsOf(load: Load): { origin: string; destination: string } {
  const { origin, destination } = laneEnds(load.stops);
  return { origin: origin?.location_name ?? '—', destination: destination?.location_name ?? '—' };
}

function placeOf(l: Pick<LocationsTable, 'city' | 'state' | 'postal_code' | 'country'> | undefined): string {
  if (!l) return '';
  return [l.city, [l.state, l.postal_code].filter(Boolean).join(' '), l.state ? '' : l.country].filter(Boolean).join(', ');
}

function rep(member: TeamMember | null): string {
  if (!member) return '—';
  return [member.name, member.email ? `<${member.email}>` : null, member.external_reference_id ? `(${member.external_reference_id})` : null].filter(Boolean).join(' ');
}

async function loadsList(ctx: DashboardContext, req: FastifyRequest, orgId: string) {
  const text = queryText(req, 'q');
  const statusParam = queryText(req, 'status', 40).toUpperCase();
  const status = statusParam === OPEN.toUpperCase() ? OPEN : (LOAD_STATUSES as readonly string[]).includes(statusParam) ? statusParam : '';
  const statuses = status === OPEN ? [...OPEN_STATUSES] : status ? [status] : undefined;
  const pageNo = pageNumber(req);
  const { loads, total } = await ctx.services.insights.searchLoads(orgId, { statuses, text }, { page: pageNo, page_size: PAGE_SIZE, sort: '-created_at' });
  const statusSelect = html`<div><label for="status">Status</label><select id="status" name="status">
    <option value=""${status === '' ? html` selected` : ''}>All statuses</option>
    <option value="${OPEN}"${status === OPEN ? html` selected` : ''}>Open (Active, Spot, Tendered, Tender rejected)</option>
    ${LOAD_STATUSES.map((st) => html`<option value="${st}"${status === st ? html` selected` : ''}>${label(st)}</option>`)}
  </select></div>`;
  return {
    body: html`<h1>Loads</h1>
${searchForm('/loads', 'Search reference, description or customer', text, statusSelect)}
${loads.length === 0
  ? html`<p>No loads${text || status ? ' match' : ' yet'}.</p>`
  : html`<div class="table-wrap"><table>
  <caption>Loads, newest first (times in UTC)</caption>
  <thead><tr><th scope="col">Reference</th><th scope="col">Status</th><th scope="col">Customer</th><th scope="col">Carrier</th>
  <th scope="col">Equipment</th><th scope="col">Origin → destination</th><th scope="col">First pickup</th><th scope="col" class="num">Distance</th></tr></thead>
  <tbody>${loads.map((l) => {
    const ends = endsOf(l);
    return html`<tr><th scope="row"><a href="${loadPath(l.external_reference_id)}">${l.external_reference_id}</a></th>
    <td>${statusBadge(l.status)}</td><td>${l.customer_name}</td><td>${l.carrier_name ?? html`<span class="muted">none</span>`}</td>
    <td>${label(l.equipment_type)} · ${l.transport_mode}</td><td>${ends.origin} → ${ends.destination}</td>
    <td class="nowrap">${utc(l.stops.find((st) => isPickup(st.stop_type))?.early_arrival)}</td><td class="num">${miles(l.total_distance)}</td></tr>`;
  })}</tbody>
</table></div>`}
${pager('/loads', pagination(pageNo, PAGE_SIZE, total), { q: text || undefined, status: status || undefined }, 'loads')}`,
  };
}

async function loadPage(ctx: DashboardContext, orgId: string, ref: string): Promise<{ title: string; body: SafeHtml }> {
  const load = await ctx.services.loads.get(orgId, ref);
  const locations = new Map((await ctx.services.insights.locationsByIds(orgId, load.stops.map((st) => st.location_id))).map((l) => [l.id, l]));
  const open = OPEN_STATUSES.has(load.status);
  const recs = load.carrier_recommendations ?? [];
  const stops = [...load.stops].sort((a, b) => a.stop_number - b.stop_number);
  return {
    title: `Load ${load.external_reference_id}`,
    body: html`<p><a href="/loads">← All loads</a></p>
<h1>Load ${load.external_reference_id} ${statusBadge(load.status)}</h1>
${load.description ? html`<p>${load.description}</p>` : ''}
<section class="card" aria-labelledby="summary-title">
<h2 id="summary-title">Summary</h2>
<dl class="facts">
  <dt>Customer</dt><dd>${load.customer_name} <span class="muted">(${load.customer_external_reference_id})</span></dd>
  <dt>Carrier</dt><dd>${load.carrier_name ? html`${load.carrier_name} <span class="muted">(${load.carrier_external_reference_id})</span>` : 'not assigned'}</dd>
  <dt>Equipment</dt><dd>${label(load.equipment_type)} · ${load.transport_mode}</dd>
  <dt>Weight</dt><dd>${load.weight !== null ? `${count(load.weight)} ${load.weight_uom ?? ''}` : '—'}</dd>
  <dt>Total distance</dt><dd>${miles(load.total_distance)}${load.total_distance_source ? html` <span class="muted">(${load.total_distance_source === 'estimated' ? 'estimated from the stops' : 'as sent'})</span>` : ''}</dd>
  <dt>Max buy rate</dt><dd>${money(load.max_buy_rate)}${load.max_buy_rate_source ? html` <span class="muted">(${load.max_buy_rate_source === 'market' ? 'from market rates on the lane' : 'as sent'})</span>` : ''}</dd>
  <dt>Sales rep</dt><dd>${rep(load.sales_rep)}</dd>
  <dt>Dispatcher rep</dt><dd>${rep(load.dispatcher_rep)}</dd>
  <dt>Status since</dt><dd>${utc(load.status_updated_at)}</dd>
  <dt>Updated</dt><dd>${utc(load.updated_at)}</dd>
</dl>
</section>
<h2 id="stops-title">Stops</h2>
<div class="table-wrap"><table aria-labelledby="stops-title">
  <caption>Arrival windows in each location’s local time, with its hours for scheduling</caption>
  <thead><tr><th scope="col" class="num">#</th><th scope="col">Type</th><th scope="col">Location</th><th scope="col">Arrival window (local)</th>
  <th scope="col">Time zone</th><th scope="col">Weekday hours</th><th scope="col">Weekend hours</th></tr></thead>
  <tbody>${stops.map((st) => {
    const loc = locations.get(st.location_id);
    const tz = loc?.timezone ?? null;
    return html`<tr><td class="num">${st.stop_number}</td><td>${st.stop_type}</td>
    <th scope="row">${st.location_name} <span class="muted">(${st.location_external_reference_id})</span><br><span class="muted">${placeOf(loc)}</span></th>
    <td>${inZone(st.early_arrival, tz)}<br>to ${inZone(st.late_arrival, tz)}</td>
    <td>${tz ?? 'unknown (times in UTC)'}</td>
    <td class="nowrap">${hours(loc?.weekday_open_hours, loc?.weekday_close_hours)}</td>
    <td class="nowrap">${hours(loc?.weekend_open_hours, loc?.weekend_close_hours)}</td></tr>`;
  })}</tbody>
</table></div>
${load.financial_rates.length
  ? html`<h2 id="rates-title">Financial rates</h2>
<div class="table-wrap"><table aria-labelledby="rates-title">
  <thead><tr><th scope="col">With</th><th scope="col">Type</th><th scope="col" class="num">Amount</th><th scope="col">Description</th></tr></thead>
  <tbody>${load.financial_rates.map(
    (r) => html`<tr><td>${label(r.rate_entity)}</td><td>${label(r.rate_type)}</td><td class="num">${money(r.amount, r.currency)}</td><td>${r.description ?? ''}</td></tr>`,
  )}</tbody>
</table></div>`
  : ''}
<h2 id="recs-title">Carrier recommendations</h2>
${!open
  ? html`<p>Recommendations are shown for open loads (Active, Spot, Tendered, Tender rejected); this load is ${label(load.status).toLowerCase()}.</p>`
  : recs.length === 0
    ? html`<p>No carrier has delivered a load on this lane yet.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="recs-title">
  <caption>Carriers that ran this lane, best first: score = Σ proximity weight × ½^(age in days ÷ 90)</caption>
  <thead><tr><th scope="col" class="num">Rank</th><th scope="col">Carrier</th><th scope="col">DOT number</th><th scope="col" class="num">Loads on lane</th>
  <th scope="col">Last delivered</th><th scope="col" class="num">Score</th><th scope="col" class="num">Average carrier rate</th></tr></thead>
  <tbody>${recs.map(
    (r, i) => html`<tr><td class="num">${i + 1}</td><th scope="row">${r.carrier_name} <span class="muted">(${r.carrier_external_reference_id})</span></th>
    <td>${r.dot_number ?? '—'}</td><td class="num">${r.lane_load_count}</td><td class="nowrap">${utc(r.last_delivered_at)}</td>
    <td class="num">${r.score.toFixed(3)}</td><td class="num">${money(r.average_carrier_rate)}</td></tr>`,
  )}</tbody>
</table></div>`}`,
  };
}

function locationRows(items: Location[]): SafeHtml {
  return html`${items.map(
    (l) => html`<tr><th scope="row">${l.name} <span class="muted">(${l.external_reference_id})</span></th>
  <td>${[l.address_line1, l.address_line2].filter(Boolean).join(', ')}${l.address_line1 ? html`<br>` : ''}${placeOf(l)}</td>
  <td>${l.timezone ?? '—'}</td><td class="nowrap">${hours(l.weekday_open_hours, l.weekday_close_hours)}</td>
  <td class="nowrap">${hours(l.weekend_open_hours, l.weekend_close_hours)}</td>
  <td>${l.phone_number ?? ''}${l.phone_number && l.email ? html`<br>` : ''}${l.email ?? ''}</td></tr>`,
  )}`;
}

function contactList(c: Carrier): SafeHtml {
  if (c.contacts.length === 0) return html`<span class="muted">none</span>`;
  return html`<ul class="plain">${c.contacts.map(
    (p) => html`<li>${[p.first_name, p.last_name].filter(Boolean).join(' ') || 'Unnamed'}${p.is_primary_contact ? html` <span class="badge">primary</span>` : ''}
    ${p.primary_email ? html`<br><span class="muted">${p.primary_email}</span>` : ''}${p.primary_phone ? html`<br><span class="muted">${p.primary_phone}</span>` : ''}</li>`,
  )}</ul>`;
}

export function dataRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const { services } = ctx;

  app.get('/loads', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const { body } = await loadsList(ctx, req, s.orgId);
    return sendPage(reply, page({ title: 'Loads', session: s, active: 'loads', body }));
  });

  app.get('/loads/:ref', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const { title, body } = await loadPage(ctx, s.orgId, String((req.params as { ref: string }).ref));
    return sendPage(reply, page({ title, session: s, active: 'loads', body }));
  });

  app.get('/locations', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const text = queryText(req, 'q');
    const pageNo = pageNumber(req);
    const result = await services.locations.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) });
    const body = html`<h1>Locations</h1>
${searchForm('/locations', 'Search by name', text)}
${result.items.length === 0
  ? html`<p>No locations${text ? ' match' : ' yet'}.</p>`
  : html`<div class="table-wrap"><table>
  <caption>Locations by name, with hours in each location’s local time</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Address</th><th scope="col">Time zone</th><th scope="col">Weekday hours</th>
  <th scope="col">Weekend hours</th><th scope="col">Contact</th></tr></thead>
  <tbody>${locationRows(result.items)}</tbody>
</table></div>`}
${pager('/locations', result.pagination, { q: text || undefined }, 'locations')}`;
    return sendPage(reply, page({ title: 'Locations', session: s, active: 'locations', body }));
  });

  app.get('/carriers', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const text = queryText(req, 'q');
    const pageNo = pageNumber(req);
    const result = await services.carriers.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) });
    const body = html`<h1>Carriers</h1>
${searchForm('/carriers', 'Search by name', text)}
${result.items.length === 0
  ? html`<p>No carriers${text ? ' match' : ' yet'}.</p>`
  : html`<div class="table-wrap"><table>
  <caption>Carriers by name</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">DOT number</th><th scope="col">MC number</th><th scope="col">Phone</th>
  <th scope="col">Email</th><th scope="col">City</th><th scope="col">Contacts</th></tr></thead>
  <tbody>${result.items.map(
    (c) => html`<tr><th scope="row">${c.name} <span class="muted">(${c.external_reference_id})</span></th><td>${c.dot_number ?? '—'}</td>
    <td>${c.mc_number ?? '—'}</td><td>${c.phone_number ?? ''}</td><td>${c.email ?? ''}</td>
    <td>${c.address ? [c.address.city, c.address.state].filter(Boolean).join(', ') : ''}</td><td>${contactList(c)}</td></tr>`,
  )}</tbody>
</table></div>`}
${pager('/carriers', result.pagination, { q: text || undefined }, 'carriers')}`;
    return sendPage(reply, page({ title: 'Carriers', session: s, active: 'carriers', body }));
  });

  app.get('/customers', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const text = queryText(req, 'q');
    const pageNo = pageNumber(req);
    const result = await services.customers.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) });
    const body = html`<h1>Customers</h1>
${searchForm('/customers', 'Search by name', text)}
${result.items.length === 0
  ? html`<p>No customers${text ? ' match' : ' yet'}.</p>`
  : html`<div class="table-wrap"><table>
  <caption>Customers by name</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Reference number</th><th scope="col">Type</th><th scope="col">Domain</th>
  <th scope="col">Phone</th><th scope="col">Active</th></tr></thead>
  <tbody>${result.items.map(
    (c) => html`<tr><th scope="row">${c.name} <span class="muted">(${c.external_reference_id})</span></th><td>${c.reference_number ?? ''}</td>
    <td>${c.customer_type ?? ''}</td><td>${c.domain ?? ''}</td><td>${c.phone ?? ''}</td>
    <td>${c.is_active ? 'Yes' : html`<span class="badge bad">No</span>`}</td></tr>`,
  )}</tbody>
</table></div>`}
${pager('/customers', result.pagination, { q: text || undefined }, 'customers')}`;
    return sendPage(reply, page({ title: 'Customers', session: s, active: 'customers', body }));
  });

  app.get('/lanes', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const pageNo = pageNumber(req);
    const { rows, total, ends } = await ctx.services.insights.topLanes(s.orgId, pageNo, PAGE_SIZE);
    const area = (cell: number, loc: LocationsTable | undefined) =>
      html`${loc ? html`near ${[loc.city ?? loc.name, loc.state].filter(Boolean).join(', ')}<br>` : ''}<span class="muted">${cellBoxLabel(cell)}</span>`;
    const body = html`<h1>Lanes</h1>
<p>Lanes with the most delivered history first. A lane is an equipment type between two 1-degree grid cells; each end is named by a
location of yours inside the cell.</p>
${rows.length === 0
  ? html`<p>No lane history yet: it grows as loads with a carrier are delivered.</p>`
  : html`<div class="table-wrap"><table>
  <caption>Lanes by delivered loads (times in UTC)</caption>
  <thead><tr><th scope="col">Equipment</th><th scope="col">Origin area</th><th scope="col">Destination area</th>
  <th scope="col" class="num">Delivered loads</th><th scope="col" class="num">Carriers</th><th scope="col">Last delivered</th></tr></thead>
  <tbody>${rows.map(
    (r, i) => html`<tr><th scope="row">${label(r.equipment_type)}</th><td>${area(r.origin_cell, ends[i]?.origin)}</td>
    <td>${area(r.destination_cell, ends[i]?.destination)}</td><td class="num">${count(r.load_count)}</td>
    <td class="num">${count(r.carrier_count)}</td><td class="nowrap">${utc(r.last_delivered_at)}</td></tr>`,
  )}</tbody>
</table></div>`}
${pager('/lanes', pagination(pageNo, PAGE_SIZE, total), {}, 'lanes')}`;
    return sendPage(reply, page({ title: 'Lanes', session: s, active: 'lanes', body }));
  });
}
