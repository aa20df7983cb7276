import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { EQUIPMENT_TYPES, LOAD_STATUSES, OPEN_STATUSES, isPickup } from '../../domain/enums.js';
import { laneEnds } from '../../domain/lane.js';
import { pagination, type Pagination } from '../../lib/http/pagination.js';
import type { Load } from '../../modules/loads/loads.schema.js';
import { normalizeSubdivision } from '../../geo/index.js';
import { LOAD_SORTS } from '../../modules/insights/insights.service.js';
import { sendPage, type DashboardContext } from '../context.js';
import { label, miles, utc } from '../format.js';
import { href, html, type SafeHtml } from '../html.js';
import { page, pager } from '../layout.js';
import { pageNumber, queryText } from './list-query.js';
import { carrierPath, customerPath, emptyState, loadPath, statusBadge } from './records.js';

/** The Loads list: filters, sortable columns and pages (docs/dashboard.md). */

const PAGE_SIZE = 25;
const OPEN = 'open';
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SORT_LABELS: Record<string, string> = {
  created_at: 'Created',
  updated_at: 'Updated',
  status: 'Status',
  external_reference_id: 'Reference',
  pickup_at: 'First pickup',
};

function endsOf(load: Load): { origin: string; destination: string } {
  const { origin, destination } = laneEnds(load.stops);
  return { origin: origin?.location_name ?? '—', destination: destination?.location_name ?? '—' };
}

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

type LoadFilters = ReturnType<typeof loadFilters>;

/** What the list's sections share: the filters, the query that keeps them in links, and the page shown. */
interface LoadsView {
  f: LoadFilters;
  keep: Record<string, string | undefined>;
  filtered: boolean;
  pageNo: number;
  pages: Pagination;
  loads: Load[];
}

async function searchLoads(ctx: DashboardContext, orgId: string, f: LoadFilters, pageNo: number) {
  const statuses = f.status === OPEN ? [...OPEN_STATUSES] : f.status ? [f.status] : undefined;
  return ctx.services.insights.searchLoads(
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
}

/** The filters as query parameters: the ones set, to keep in the list's links. */
function keptQuery(f: LoadFilters) {
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
  return { keep, filtered: Object.values(query).some(Boolean) };
}

function filterForm(f: LoadFilters, filtered: boolean): SafeHtml {
  const select = (name: string, text: string, value: string, options: [string, string][]) =>
    html`<div><label for="f-${name}">${text}</label><select id="f-${name}" name="${name}">${options.map(([v, l]) => html`<option value="${v}"${v === value ? html` selected` : ''}>${l}</option>`)}</select></div>`;
  const input = (name: string, text: string, value: string, type = 'text', extra = '') =>
    html`<div><label for="f-${name}">${text}</label><input id="f-${name}" name="${name}" type="${type}" value="${value}"${extra ? html` placeholder="${extra}"` : ''} maxlength="255"></div>`;
  return html`<form class="inline filters" method="get" action="/loads" role="search">
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
</form>`;
}

function loadsTable(v: LoadsView): SafeHtml {
  const { f, keep, loads } = v;
  const sortField = f.sort.replace(/^-/, '');
  const descending = f.sort.startsWith('-');
  const sortHeader = (field: string, extraClass = '') => {
    const active = sortField === field;
    const next = active && !descending ? `-${field}` : field;
    return html`<th scope="col" class="sortable ${extraClass}"${active ? html` aria-sort="${descending ? 'descending' : 'ascending'}"` : ''}><a href="${href('/loads', { ...keep, sort: next })}">${SORT_LABELS[field]}${active ? (descending ? ' ▼' : ' ▲') : ''}</a></th>`;
  };
  return html`<div class="table-wrap"><table>
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
</table></div>`;
}

/** The table, or why there is none: a page past the end, no load matching, or no load yet. */
function loadsResults(v: LoadsView, pastEnd: boolean): SafeHtml {
  const { f, keep, filtered, pageNo, pages } = v;
  return pastEnd
    ? html`<p class="empty">Page ${pageNo} is past the end: there ${pages.total_pages === 1 ? 'is 1 page' : `are ${pages.total_pages} pages`} of loads${filtered ? ' matching these filters' : ''}. <a href="${href('/loads', { ...keep, sort: f.sort === '-created_at' ? undefined : f.sort })}">Go to the first page</a>.</p>`
    : v.loads.length === 0
      ? filtered
        ? html`<p class="empty">No loads match these filters. <a href="/loads">Clear the filters</a>.</p>`
        : emptyState('No loads yet.')
      : loadsTable(v);
}

async function loadsList(ctx: DashboardContext, req: FastifyRequest, orgId: string) {
  const f = loadFilters(req);
  const pageNo = pageNumber(req);
  const { loads, total } = await searchLoads(ctx, orgId, f, pageNo);
  const { keep, filtered } = keptQuery(f);
  const pages = pagination(pageNo, PAGE_SIZE, total);
  const pastEnd = total > 0 && loads.length === 0;
  const v: LoadsView = { f, keep, filtered, pageNo, pages, loads };
  return {
    body: html`<h1>Loads</h1>
${filterForm(f, filtered)}
${loadsResults(v, pastEnd)}
${pastEnd ? '' : pager('/loads', pages, { ...keep, sort: f.sort === '-created_at' ? undefined : f.sort }, 'loads')}`,
  };
}

export async function showLoads(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const { body } = await loadsList(ctx, req, s.orgId);
  return sendPage(reply, page({ title: 'Loads', session: s, active: 'loads', body }));
}
