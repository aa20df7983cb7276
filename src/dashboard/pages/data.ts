import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import type { Carrier } from '../../modules/carriers/carriers.schema.js';
import type { Location } from '../../modules/locations/locations.schema.js';
import { sendPage, sessionPage, type DashboardContext } from '../context.js';
import { cellArea, cellBoxLabel, count, hours, label, utc } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { page, pager } from '../layout.js';
import { pagination } from '../../lib/http/pagination.js';
import { MAX_MAP_LABELS, mapSvg } from '../map.js';
import { carrierPath, customerPath, emptyState, equipmentClass, lanePath, locationPath, placeLabel } from './records.js';
import { pageNumber, queryText } from './list-query.js';
import { showLoads } from './loads-list.js';
import { showLoad } from './load.js';
import { placeOf } from './load.js';

/** The lists of the data pages: loads (loads-list.ts), locations, carriers, customers and lanes. */

const PAGE_SIZE = 25;

function searchForm(path: string, labelText: string, value: string, extra: SafeHtml | string = ''): SafeHtml {
  return html`<form class="inline" method="get" action="${path}" role="search">
  <div><label for="q">${labelText}</label><input id="q" name="q" type="search" value="${value}" maxlength="100"></div>
  ${extra}
  <div><button type="submit">Search</button></div>
  ${value || extra ? html`<div><a href="${path}">Clear</a></div>` : ''}
</form>`;
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

async function showLocations(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const text = queryText(req, 'q');
  const pageNo = pageNumber(req);
  const [result, points] = await Promise.all([
    ctx.services.locations.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) }),
    ctx.services.insights.locationPoints(s.orgId),
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
}

async function showCarriers(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const text = queryText(req, 'q');
  const pageNo = pageNumber(req);
  const result = await ctx.services.carriers.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) });
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
}

async function showCustomers(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const text = queryText(req, 'q');
  const pageNo = pageNumber(req);
  const result = await ctx.services.customers.list(s.orgId, { page: pageNo, page_size: PAGE_SIZE, sort: 'name', ...(text ? { name_contains: text } : {}) });
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
}

async function showLanes(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
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
}

export function dataRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get(
    '/loads',
    sessionPage((req, reply, s) => showLoads(ctx, req, reply, s)),
  );
  app.get(
    '/loads/:ref',
    sessionPage((req, reply, s) => showLoad(ctx, req, reply, s)),
  );
  app.get(
    '/locations',
    sessionPage((req, reply, s) => showLocations(ctx, req, reply, s)),
  );
  app.get(
    '/carriers',
    sessionPage((req, reply, s) => showCarriers(ctx, req, reply, s)),
  );
  app.get(
    '/customers',
    sessionPage((req, reply, s) => showCustomers(ctx, req, reply, s)),
  );
  app.get(
    '/lanes',
    sessionPage((req, reply, s) => showLanes(ctx, req, reply, s)),
  );
}
