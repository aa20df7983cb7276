import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { LocationsTable } from '../../lib/db/types.js';
import type { Carrier } from '../../modules/carriers/carriers.schema.js';
import { EQUIPMENT_TYPES, LOAD_STATUSES, OPEN_STATUSES, isPickup } from '../../domain/enums.js';
import { laneEnds } from '../../domain/lane.js';
import type { Load, TeamMember } from '../../modules/loads/loads.schema.js';
import type { Location } from '../../modules/locations/locations.schema.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { cellArea, cellBoxLabel, count, hours, inZone, label, miles, money, nearCity, utc } from '../format.js';
import { href, html, type SafeHtml } from '../html.js';
import { page, pager } from '../layout.js';
import { pagination } from '../../lib/http/pagination.js';
import { normalizeSubdivision } from '../../geo/index.js';
import { MAX_MAP_LABELS, mapSvg } from '../map.js';
import { LOAD_SORTS } from '../../modules/insights/insights.service.js';
import { carrierPath, customerPath, emptyState, equipmentClass, lanePath, locationPath, placeLabel, recommendationTable } from './details.js';
import { outsideHours } from '../hours.js';

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

import { loadPath, statusBadge } from './details.js';

function endsOf(load: Load): { origin: string; destination: string } {
  const { origin, destination } = laneEnds(load.stops);
  return { origin: origin?.location_name ?? '—', destination: destination?.location_name ?? '—' };
}

function placeOf(l: Pick<LocationsTable, 'city' | 'state' | 'postal_code' | 'country' | 'latitude' | 'longitude'> | undefined): SafeHtml | string {
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

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SORT_LABELS: Record<string, string> = {
  created_at: 'Created',
  updated_at: 'Updated',
  status: 'Status',
  external_reference_id: 'Reference',
  pickup_at: 'First pickup',
};

/** The Loads list's filters from the query string: anything unknown or malformed is ignored, never an error. */
function loadFilters(req: FastifyRequest) {
  const statusParam = queryText(req, 'status', 40).toUpperCase();
  const status = statusParam === OPEN.toUpperCase() ? OPEN : (LOAD_STATUSES as readonly string[]).includes(statusParam) ? statusParam : '';
  const equipmentParam = queryText(req, 'equipment', 40).toUpperCase();
  const state = (name: string) => {
    const v = queryText(req, name, 10);
    if (!v) return '';
    const r = normalizeSubdivision(v, null);
    return r.ok ? r.code : '';
  };
  const date = (name: string) => {
    const v = queryText(req, name, 10);
    return DATE.test(v) && !Number.isNaN(Date.parse(v)) ? v : '';
  };
  const sortParam = queryText(req, 'sort', 40);
  const sortField = sortParam.replace(/^-/, '');
  const sort = LOAD_SORTS[sortField] ? sortParam : '-created_at';
  return {
    text: queryText(req, 'q'),
    status,
    equipment: (EQUIPMENT_TYPES as readonly string[]).includes(equipmentParam) ? equipmentParam : '',
    customer: queryText(req, 'customer', 255),
    carrier: queryText(req, 'carrier', 255),
    origin: state('origin'),
    destination: state('destination'),
    from: date('from'),
    to: date('to'),
    sort,
  };
}

async function loadsList(ctx: DashboardContext, req: FastifyRequest, orgId: string) {
  const f = loadFilters(req);
  const statuses = f.status === OPEN ? [...OPEN_STATUSES] : f.status ? [f.status] : undefined;
  const pageNo = pageNumber(req);
  const { loads, total } = await ctx.services.insights.searchLoads(
    orgId,
    {
      statuses,
      text: f.text,
      equipment: f.equipment,
      customerRef: f.customer,
      carrierRef: f.carrier,
      originState: f.origin,
      destinationState: f.destination,
      pickupFrom: f.from,
      pickupTo: f.to,
    },
    { page: pageNo, page_size: PAGE_SIZE, sort: f.sort },
  );
  const query = {
    q: f.text,
    status: f.status,
    equipment: f.equipment,
    customer: f.customer,
    carrier: f.carrier,
    origin: f.origin,
    destination: f.destination,
    from: f.from,
    to: f.to,
  };
  const keep = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v || undefined]));
  const filtered = Object.values(query).some(Boolean);
  const select = (name: string, text: string, value: string, options: [string, string][]) =>
    html`<div><label for="f-${name}">${text}</label><select id="f-${name}" name="${name}">${options.map(([v, l]) => html`<option value="${v}"${v === value ? html` selected` : ''}>${l}</option>`)}</select></div>`;
  const input = (name: string, text: string, value: string, type = 'text', extra = '') =>
    html`<div><label for="f-${name}">${text}</label><input id="f-${name}" name="${name}" type="${type}" value="${value}"${extra ? html` placeholder="${extra}"` : ''} maxlength="255"></div>`;
  const sortField = f.sort.replace(/^-/, '');
  const descending = f.sort.startsWith('-');
  const sortHeader = (field: string, extraClass = '') => {
    const active = sortField === field;
    const next = active && !descending ? `-${field}` : field;
    return html`<th scope="col" class="sortable ${extraClass}"${active ? html` aria-sort="${descending ? 'descending' : 'ascending'}"` : ''}><a href="${href('/loads', { ...keep, sort: next })}">${SORT_LABELS[field]}${active ? (descending ? ' ▼' : ' ▲') : ''}</a></th>`;
  };
  const pages = pagination(pageNo, PAGE_SIZE, total);
  const pastEnd = total > 0 && loads.length === 0;
  return {
    body: html`<h1>Loads</h1>
<form class="inline filters" method="get" action="/loads" role="search">
  <div><label for="q">Search reference, description or customer</label><input id="q" name="q" type="search" value="${f.text}" maxlength="100"></div>
  ${select('status', 'Status', f.status, [['', 'All statuses'], [OPEN, 'Open (Active, Spot, Tendered, Tender rejected)'], ...LOAD_STATUSES.map((st): [string, string] => [st, label(st)])])}
  ${select('equipment', 'Equipment', f.equipment, [['', 'Any equipment'], ...EQUIPMENT_TYPES.map((e): [string, string] => [e, label(e)])])}
  ${input('customer', 'Customer reference', f.customer)}
  ${input('carrier', 'Carrier reference', f.carrier)}
  ${input('origin', 'Origin state', f.origin, 'text', 'US-TX')}
  ${input('destination', 'Destination state', f.destination, 'text', 'US-IL')}
  ${input('from', 'First pickup from', f.from, 'date')}
  ${input('to', 'First pickup to', f.to, 'date')}
  ${f.sort !== '-created_at' ? html`<input type="hidden" name="sort" value="${f.sort}">` : ''}
  <div><button type="submit">Search</button></div>
  ${filtered ? html`<div><a href="/loads">Clear</a></div>` : ''}
</form>
${
  pastEnd
    ? html`<p class="empty">Page ${pageNo} is past the end: there ${pages.total_pages === 1 ? 'is 1 page' : `are ${pages.total_pages} pages`} of loads${filtered ? ' matching these filters' : ''}. <a href="${href('/loads', { ...keep, sort: f.sort === '-created_at' ? undefined : f.sort })}">Go to the first page</a>.</p>`
    : loads.length === 0
      ? filtered
        ? html`<p class="empty">No loads match these filters. <a href="/loads">Clear the filters</a>.</p>`
        : emptyState('No loads yet.')
      : html`<div class="table-wrap"><table>
  <caption>Loads (times in UTC); select a column heading to sort</caption>
  <thead><tr>${sortHeader('external_reference_id')}${sortHeader('status')}<th scope="col">Customer</th><th scope="col">Carrier</th>
  <th scope="col">Equipment</th><th scope="col">Origin → destination</th>${sortHeader('pickup_at')}${sortHeader('created_at')}<th scope="col" class="num">Distance</th></tr></thead>
  <tbody>${loads.map((l) => {
    const ends = endsOf(l);
    return html`<tr><th scope="row"><a href="${loadPath(l.external_reference_id)}">${l.external_reference_id}</a></th>
    <td>${statusBadge(l.status)}</td><td><a href="${customerPath(l.customer_external_reference_id)}">${l.customer_name}</a></td><td>${l.carrier_name && l.carrier_external_reference_id ? html`<a href="${carrierPath(l.carrier_external_reference_id)}">${l.carrier_name}</a>` : html`<span class="muted">none</span>`}</td>
    <td>${label(l.equipment_type)} · ${l.transport_mode}</td><td>${ends.origin} → ${ends.destination}</td>
    <td class="nowrap">${utc(l.stops.find((st) => isPickup(st.stop_type))?.early_arrival)}</td><td class="nowrap">${utc(l.created_at)}</td><td class="num">${miles(l.total_distance)}</td></tr>`;
  })}</tbody>
</table></div>`
}
${pastEnd ? '' : pager('/loads', pages, { ...keep, sort: f.sort === '-created_at' ? undefined : f.sort }, 'loads')}`,
  };
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
  const placed = stops.flatMap((st) => {
    const loc = locations.get(st.location_id);
    return loc ? [{ st, loc }] : [];
  });
  const routeMap = placed.length
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
  return {
    title: `Load ${load.external_reference_id}`,
    body: html`<p><a href="/loads">← All loads</a></p>
<h1>Load ${load.external_reference_id} ${statusBadge(load.status)}</h1>
${load.description ? html`<p>${load.description}</p>` : ''}
<section class="card" aria-labelledby="summary-title">
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
</section>
<h2 id="stops-title">Stops</h2>
${routeMap}
<div class="table-wrap"><table aria-labelledby="stops-title">
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
</table></div>
${
  load.financial_rates.length
    ? html`<h2 id="rates-title">Financial rates</h2>
<div class="table-wrap"><table aria-labelledby="rates-title">
  <thead><tr><th scope="col">With</th><th scope="col">Type</th><th scope="col" class="num">Amount</th><th scope="col">Description</th></tr></thead>
  <tbody>${load.financial_rates.map(
    (r) =>
      html`<tr><td>${label(r.rate_entity)}</td><td>${label(r.rate_type)}</td><td class="num">${money(r.amount, r.currency)}</td><td>${r.description ?? ''}</td></tr>`,
  )}</tbody>
</table></div>`
    : ''
}
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

function locationRows(items: Location[]): SafeHtml {
  return html`${items.map(
    (
      l,
    ) => html`<tr><th scope="row"><a href="${locationPath(l.external_reference_id)}">${l.name}</a> <span class="muted">(${l.external_reference_id})</span></th>
  <td>${[l.address_line1, l.address_line2].filter(Boolean).join(', ')}${l.address_line1 ? html`<br>` : ''}${placeOf(l)}</td>
  <td>${l.timezone ?? '—'}</td><td class="nowrap">${hours(l.weekday_open_hours, l.weekday_close_hours)}</td>
  <td class="nowrap">${hours(l.weekend_open_hours, l.weekend_close_hours)}</td>
  <td>${l.phone_number ?? ''}${l.phone_number && l.email ? html`<br>` : ''}${l.email ?? ''}</td></tr>`,
  )}`;
}

function contactList(c: Carrier): SafeHtml {
  if (c.contacts.length === 0) return html`<span class="muted">none</span>`;
  return html`<ul class="plain">${c.contacts.map(
    (
      p,
    ) => html`<li>${[p.first_name, p.last_name].filter(Boolean).join(' ') || 'Unnamed'}${p.is_primary_contact ? html` <span class="badge">primary</span>` : ''}
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
    const [result, points] = await Promise.all([
      services.locations.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) }),
      services.insights.locationPoints(s.orgId),
    ]);
    const body = html`<h1>Locations</h1>
${
  points.length
    ? mapSvg({
        id: 'locations-map',
        title: 'Map of your locations',
        description: `${points.length === 500 ? 'The first 500' : count(points.length)} locations by name; select a point to open the location.`,
        // Names written beside the points only while they can be read (up to MAX_MAP_LABELS); every point has its title.
        points: points.map((l) => ({
          latitude: l.latitude,
          longitude: l.longitude,
          label: `${l.name} (${placeLabel(l)})`,
          href: locationPath(l.external_reference_id),
          ...(points.length <= MAX_MAP_LABELS ? { name: l.name } : {}),
        })),
      })
    : ''
}
${searchForm('/locations', 'Search by name', text)}
${
  result.items.length === 0
    ? text
      ? html`<p class="empty">No locations match.</p>`
      : emptyState('No locations yet.')
    : html`<div class="table-wrap"><table>
  <caption>Locations by name, with hours in each location’s local time</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Address</th><th scope="col">Time zone</th><th scope="col">Weekday hours</th>
  <th scope="col">Weekend hours</th><th scope="col">Contact</th></tr></thead>
  <tbody>${locationRows(result.items)}</tbody>
</table></div>`
}
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
${
  result.items.length === 0
    ? text
      ? html`<p class="empty">No carriers match.</p>`
      : emptyState('No carriers yet.')
    : html`<div class="table-wrap"><table>
  <caption>Carriers by name</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">DOT number</th><th scope="col">MC number</th><th scope="col">Phone</th>
  <th scope="col">Email</th><th scope="col">City</th><th scope="col">Contacts</th></tr></thead>
  <tbody>${result.items.map(
    (
      c,
    ) => html`<tr><th scope="row"><a href="${carrierPath(c.external_reference_id)}">${c.name}</a> <span class="muted">(${c.external_reference_id})</span></th><td>${c.dot_number ?? '—'}</td>
    <td>${c.mc_number ?? '—'}</td><td>${c.phone_number ?? ''}</td><td>${c.email ?? ''}</td>
    <td>${c.address ? [c.address.city, c.address.state].filter(Boolean).join(', ') : ''}</td><td>${contactList(c)}</td></tr>`,
  )}</tbody>
</table></div>`
}
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
${
  result.items.length === 0
    ? text
      ? html`<p class="empty">No customers match.</p>`
      : emptyState('No customers yet.')
    : html`<div class="table-wrap"><table>
  <caption>Customers by name</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Reference number</th><th scope="col">Type</th><th scope="col">Domain</th>
  <th scope="col">Phone</th><th scope="col">Active</th></tr></thead>
  <tbody>${result.items.map(
    (
      c,
    ) => html`<tr><th scope="row"><a href="${customerPath(c.external_reference_id)}">${c.name}</a> <span class="muted">(${c.external_reference_id})</span></th><td>${c.reference_number ?? ''}</td>
    <td>${c.customer_type ?? ''}</td><td>${c.domain ?? ''}</td><td>${c.phone ?? ''}</td>
    <td>${c.is_active ? 'Yes' : html`<span class="badge bad">No</span>`}</td></tr>`,
  )}</tbody>
</table></div>`
}
${pager('/customers', result.pagination, { q: text || undefined }, 'customers')}`;
    return sendPage(reply, page({ title: 'Customers', session: s, active: 'customers', body }));
  });

  app.get('/lanes', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const pageNo = pageNumber(req);
    const { rows, total, ends } = await ctx.services.insights.topLanes(s.orgId, pageNo, PAGE_SIZE);
    const radius = ctx.services.lanes.rules.radiusMiles;
    // Each end named by its grid cell's area (the lane key), whatever load was delivered last.
    const areas = rows.map((r) => ({ origin: cellArea(r.origin_cell), destination: cellArea(r.destination_cell) }));
    const area = (cell: number, a: ReturnType<typeof cellArea>) =>
      html`${a.phrase ? html`<span data-area>${a.phrase}</span><br>` : ''}<span class="muted">${cellBoxLabel(cell)}</span>`;
    const d7 = (i: number) => {
      const e = ends[i];
      const r = rows[i]!;
      return e?.origin && e.destination ? lanePath(e.origin.external_reference_id, e.destination.external_reference_id, r.equipment_type) : null;
    };
    const maxCount = Math.max(1, ...rows.map((r) => Number(r.load_count)));
    const equipmentOnPage = [...new Set(rows.map((r) => r.equipment_type))];
    const body = html`<h1>Lanes</h1>
<p>Lanes with the most delivered history first. For this list, history is grouped by equipment and by the 1-degree grid cells
(about 69 by 55 miles) of its origin and destination, and each end is named by its cell's area: the place with the most ZIP codes
in the cell (else its state or province). Recommendations use another definition: loads whose origins are within
${radius} miles of each other and whose destinations are within ${radius} miles. Each row links to that recommendation lane, centred on the
locations of the group's latest delivered load; two neighbouring groups (Dallas → Houston and Fort Worth → Houston) lead to overlapping
recommendation lanes that count each other's loads.</p>
${
  rows.length === 0
    ? emptyState('No lane history yet: it grows as loads with a carrier are delivered.')
    : html`${mapSvg({
        id: 'lanes-map',
        title: 'Map of the lanes on this page',
        description: `${rows.length} lane${rows.length === 1 ? '' : 's'} from origin to destination; line width by delivered loads, colour by equipment. Select a lane to open it.`,
        // Drawn between the ends' areas (as the rows name them), busiest first so their names are placed first.
        lines: rows.map((r, i) => {
          const a = areas[i]!;
          return {
            from: a.origin,
            to: a.destination,
            curved: true,
            kind: equipmentClass(r.equipment_type),
            width: 1.5 + (6 * Number(r.load_count)) / maxCount,
            label: `${a.origin.name} → ${a.destination.name}, ${label(r.equipment_type)}: ${count(Number(r.load_count))} delivered loads`,
            href: d7(i) ?? undefined,
            fromName: a.origin.name,
            toName: a.destination.name,
          };
        }),
      })}
<ul class="legend lines">${equipmentOnPage.map((e) => html`<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="${equipmentClass(e)}" width="10" height="10"></rect></svg>${label(e)}</li>`)}</ul>
<div class="table-wrap"><table>
  <caption>Lanes by delivered loads (times in UTC)</caption>
  <thead><tr><th scope="col">Equipment</th><th scope="col">Origin area</th><th scope="col">Destination area</th>
  <th scope="col" class="num">Delivered loads</th><th scope="col" class="num">Carriers</th><th scope="col">Last delivered</th><th scope="col">Recommendation lane</th></tr></thead>
  <tbody>${rows.map((r, i) => {
    const link = d7(i);
    const a = areas[i]!;
    const e = ends[i];
    return html`<tr><th scope="row">${label(r.equipment_type)}</th><td>${area(r.origin_cell, a.origin)}</td>
    <td>${area(r.destination_cell, a.destination)}</td><td class="num">${count(r.load_count)}</td>
    <td class="num">${count(r.carrier_count)}</td><td class="nowrap">${utc(r.last_delivered_at)}</td>
    <td>${link && e?.origin && e.destination ? html`<a href="${link}">${a.origin.name} → ${a.destination.name}</a><br><span class="muted">centred on ${e.origin.name} → ${e.destination.name}</span>` : '—'}</td></tr>`;
  })}</tbody>
</table></div>`
}
${pager('/lanes', pagination(pageNo, PAGE_SIZE, total), {}, 'lanes')}`;
    return sendPage(reply, page({ title: 'Lanes', session: s, active: 'lanes', body }));
  });
}
