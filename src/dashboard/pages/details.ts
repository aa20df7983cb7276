import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OPEN_STATUSES } from '../../domain/enums.js';
import { RECORD_KINDS, type ReferencedRecordKind } from '../../domain/records.js';
import type { LocationsTable } from '../../lib/db/types.js';
import { utcMs } from '../../lib/time.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { lineChart, stackedBars } from '../charts.js';
import { cellArea, count, hours, label, money, nearCity, utc } from '../format.js';
import { cellOf } from '../../domain/grid.js';
import { html, segment, type SafeHtml } from '../html.js';
import { page, when } from '../layout.js';
import { mapSvg } from '../map.js';
import type { LoadLine, PrimaryContact } from '../../modules/insights/insights.service.js';
import type { Evidence } from '../../modules/lanes/lanes.schema.js';
import { THIN_EVIDENCE_BELOW } from '../../domain/evidence.js';

/** Detail pages (issue 19): a location, a carrier, a customer and a lane (docs/dashboard.md, "Lanes and recommendation lanes"). */

/** A kind's list page: its collection, as in the API's paths (src/domain/records.ts). */
export const listPath = (kind: ReferencedRecordKind) => `/${RECORD_KINDS[kind].collection}`;
/** A record's page, addressed by its external_reference_id. */
const recordPath = (kind: ReferencedRecordKind) => (ref: string) => `${listPath(kind)}/${segment(ref)}`;
export const locationPath = recordPath('locations');
export const carrierPath = recordPath('carriers');
export const customerPath = recordPath('customers');
export const loadPath = recordPath('loads');
/** A lane, anchored on two of the organization's locations and an equipment type. */
export const lanePath = (originRef: string, destinationRef: string, equipment: string) =>
  `/lanes/${segment(originRef)}/${segment(destinationRef)}/${segment(equipment)}`;

export const API_DOCS = '/docs';

const EQUIPMENT_CLASSES = 8;
const equipmentSeen: string[] = [];
/** A stable colour class per equipment type (`eq-0` … `eq-7`), the same on every map. */
export function equipmentClass(equipment: string): string {
  let i = equipmentSeen.indexOf(equipment);
  if (i < 0) {
    // Known types first, in a fixed order, so colours do not depend on which page was seen first.
    const known = ['DRY_VAN', 'REEFER', 'FLATBED', 'STEP_DECK', 'LOWBOY', 'POWER_ONLY', 'CONTAINER', 'TANKER'];
    i = known.indexOf(equipment);
    if (i < 0) {
      equipmentSeen.push(equipment);
      i = (equipmentSeen.length - 1 + known.length) % EQUIPMENT_CLASSES;
    }
  }
  return `eq-${i % EQUIPMENT_CLASSES}`;
}

/**
 * A location as a place: `Dallas, US-TX`; without a city, the nearest city to its coordinates
 * (`near Dallas, TX`), else its name and state.
 */
export function placeLabel(
  l: (Pick<LocationsTable, 'city' | 'state' | 'name'> & Partial<Pick<LocationsTable, 'latitude' | 'longitude' | 'country'>>) | undefined,
): string {
  if (!l) return '—';
  const near =
    !l.city && l.latitude !== undefined && l.longitude !== undefined
      ? nearCity({ city: l.city, latitude: l.latitude, longitude: l.longitude, country: l.country ?? null })
      : null;
  return near ?? [l.city ?? l.name, l.state].filter(Boolean).join(', ');
}

/** A lane by the areas of its two ends (their grid cells' main places): `Dallas, TX → Houston, TX`. */
export function laneAreas(origin: { latitude: number; longitude: number }, destination: { latitude: number; longitude: number }): string {
  return `${cellArea(cellOf(origin.latitude, origin.longitude)).name} → ${cellArea(cellOf(destination.latitude, destination.longitude)).name}`;
}

export function statusBadge(status: string): SafeHtml {
  const kind = OPEN_STATUSES.has(status) ? 'warn' : status === 'CANCELLED' || status === 'ON_HOLD' || status === 'INACTIVE' ? 'bad' : 'ok';
  return html`<span class="badge ${kind}">${label(status)}</span>`;
}

function loadTable(caption: string, loads: LoadLine[], cols: { customer?: boolean; carrier?: boolean } = {}): SafeHtml {
  return html`<div class="table-wrap"><table>
  <caption>${caption}</caption>
  <thead><tr><th scope="col">Reference</th><th scope="col">Status</th><th scope="col">Equipment</th>${cols.customer ? html`<th scope="col">Customer</th>` : ''}${
    cols.carrier ? html`<th scope="col">Carrier</th>` : ''
  }<th scope="col">First pickup</th></tr></thead>
  <tbody>${loads.map(
    (l) => html`<tr><th scope="row"><a href="${loadPath(l.external_reference_id)}">${l.external_reference_id}</a></th><td>${statusBadge(l.status)}</td>
    <td>${label(l.equipment_type)}</td>${cols.customer ? html`<td>${l.customer_name ?? '—'}</td>` : ''}${cols.carrier ? html`<td>${l.carrier_name ?? html`<span class="muted">none</span>`}</td>` : ''}
    <td class="nowrap">${utc(l.pickup_at)}</td></tr>`,
  )}</tbody>
</table></div>`;
}

export function emptyState(text: string): SafeHtml {
  return html`<p class="empty">${text} Records arrive through the API: see the <a href="${API_DOCS}">API documentation</a>.</p>`;
}

const DAY = 86_400_000;
/** Monday 00:00 UTC of the week of `ms`. */
const weekStart = (ms: number) => {
  const d = new Date(ms);
  const day = (d.getUTCDay() + 6) % 7;
  // utcMs, not Date.UTC: an arrival in year 0050 stays in year 50 (docs/api.md).
  return utcMs(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate() - day);
};
const shortDate = (ms: number) => new Date(ms).toISOString().slice(5, 10);

async function locationPage(ctx: DashboardContext, orgId: string, ref: string) {
  const { location: loc, loads } = await ctx.services.insights.locationActivity(orgId, ref);
  const near = nearCity(loc);
  const body = html`<p><a href="/locations">← All locations</a></p>
<h1>${loc.name} <span class="muted">(${loc.external_reference_id})</span></h1>
<div class="split">
<section class="card" aria-labelledby="loc-facts">
<h2 id="loc-facts">Details</h2>
<dl class="facts">
  <dt>Address</dt><dd>${[loc.address_line1, loc.address_line2].filter(Boolean).join(', ') || '—'}<br>${[loc.city, loc.state, loc.postal_code, loc.country].filter(Boolean).join(', ')}${
    near ? html`<br><span data-near-city>${near}</span> <span class="muted">(the nearest city to its coordinates; no city was sent)</span>` : ''
  }</dd>
  <dt>Coordinates</dt><dd>${loc.latitude.toFixed(5)}, ${loc.longitude.toFixed(5)} <span class="muted">(${loc.geocode_source === 'postal_code' ? 'from the postal code' : 'as sent'})</span></dd>
  <dt>Time zone</dt><dd>${loc.timezone ?? 'unknown'}</dd>
  <dt>Weekday hours</dt><dd>${hours(loc.weekday_open_hours, loc.weekday_close_hours)}</dd>
  <dt>Weekend hours</dt><dd>${hours(loc.weekend_open_hours, loc.weekend_close_hours)}</dd>
  <dt>Phone</dt><dd>${loc.phone_number ?? '—'}</dd>
  <dt>Email</dt><dd>${loc.email ?? '—'}</dd>
</dl>
</section>
${mapSvg({ id: 'location-map', title: `Map of ${loc.name}`, description: `${loc.name} at ${loc.latitude.toFixed(3)}, ${loc.longitude.toFixed(3)}.`, points: [{ latitude: loc.latitude, longitude: loc.longitude, label: loc.name, name: loc.name, kind: 'origin' }] })}
</div>
<h2 id="loc-loads">Loads through this location</h2>
${loads.length === 0 ? emptyState('No load stops here yet.') : loadTable(loads.length === 1 ? 'The load with a stop here (times in UTC)' : `The ${loads.length === 25 ? '25 newest' : count(loads.length)} loads with a stop here (times in UTC)`, loads, { customer: true, carrier: true })}`;
  return { title: loc.name, body };
}

async function carrierPage(ctx: DashboardContext, orgId: string, ref: string) {
  const carrier = await ctx.services.carriers.get(orgId, ref);
  const { loads, total, lanes, history, places, recommended, onTime, graceMinutes, price } = await ctx.services.insights.carrierActivity(orgId, carrier.id);
  const vsMarket = (p: { rate_vs_market: number | null; priced_loads: number } | undefined) =>
    p?.rate_vs_market != null ? html`${p.rate_vs_market.toFixed(2)}× <span class="muted">(${count(p.priced_loads)} priced)</span>` : '—';
  const months = onTime.slice(-12);
  const scoredAll = onTime.reduce((n, m) => n + m.scored, 0);
  const onTimeAll = onTime.reduce((n, m) => n + m.onTime, 0);
  const body = html`<p><a href="/carriers">← All carriers</a></p>
<h1>${carrier.name} <span class="muted">(${carrier.external_reference_id})</span></h1>
<section class="card" aria-labelledby="carrier-facts">
<h2 id="carrier-facts">Details</h2>
<dl class="facts">
  <dt>DOT number</dt><dd>${carrier.dot_number ?? '—'}</dd>
  <dt>MC number</dt><dd>${carrier.mc_number ?? '—'}</dd>
  <dt>Phone</dt><dd>${carrier.phone_number ? html`<a href="tel:${carrier.phone_number}">${carrier.phone_number}</a>` : '—'}</dd>
  <dt>Email</dt><dd>${carrier.email ? html`<a href="mailto:${carrier.email}">${carrier.email}</a>` : '—'}</dd>
  <dt>Address</dt><dd>${carrier.address ? [carrier.address.address_line1, carrier.address.city, carrier.address.state, carrier.address.postal_code].filter(Boolean).join(', ') : '—'}</dd>
  <dt>Loads</dt><dd>${count(total)}</dd>
</dl>
</section>
<h2 id="carrier-contacts">Contacts</h2>
${
  carrier.contacts.length === 0
    ? html`<p>No contacts.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="carrier-contacts">
  <thead><tr><th scope="col">Name</th><th scope="col">Phone</th><th scope="col">Email</th><th scope="col">Primary</th></tr></thead>
  <tbody>${carrier.contacts.map(
    (p) => html`<tr><th scope="row">${[p.first_name, p.last_name].filter(Boolean).join(' ') || 'Unnamed'}</th>
    <td>${p.primary_phone ? html`<a href="tel:${p.primary_phone}">${p.primary_phone}</a>` : '—'}</td>
    <td>${p.primary_email ? html`<a href="mailto:${p.primary_email}">${p.primary_email}</a>` : '—'}</td><td>${p.is_primary_contact ? html`<span class="badge">primary</span>` : ''}</td></tr>`,
  )}</tbody></table></div>`
}
<h2 id="carrier-lanes">Lanes it has run</h2>
${
  lanes.length === 0
    ? html`<p>No delivered loads yet: lanes appear as this carrier's loads are delivered.</p>`
    : html`${mapSvg({
        id: 'carrier-lanes-map',
        title: `Lanes run by ${carrier.name}`,
        description: `${lanes.length} lanes by origin and destination location; wider lines carried more loads.`,
        lines: lanes.flatMap((l) => {
          const o = places.get(l.origin_location_id);
          const d = places.get(l.destination_location_id);
          return o && d
            ? [
                {
                  from: o,
                  to: d,
                  curved: true,
                  kind: equipmentClass(l.equipment_type),
                  width: 1.5 + Math.min(6, Math.log2(1 + l.loads)),
                  label: `${placeLabel(o)} → ${placeLabel(d)}, ${label(l.equipment_type)}: ${l.loads} loads`,
                  href: lanePath(o.external_reference_id, d.external_reference_id, l.equipment_type),
                  fromName: placeLabel(o),
                  toName: placeLabel(d),
                },
              ]
            : [];
        }),
      })}
<div class="table-wrap"><table aria-labelledby="carrier-lanes">
  <caption>Delivered loads by origin, destination and equipment (the newest ${count(history)} history loads)</caption>
  <thead><tr><th scope="col">Lane</th><th scope="col">Equipment</th><th scope="col" class="num">Loads</th><th scope="col">Last delivered</th><th scope="col" class="num">Price vs market</th></tr></thead>
  <tbody>${lanes.map((l) => {
    const o = places.get(l.origin_location_id);
    const d = places.get(l.destination_location_id);
    return html`<tr><th scope="row">${o && d ? html`<a href="${lanePath(o.external_reference_id, d.external_reference_id, l.equipment_type)}">${o.name} → ${d.name}</a>` : '—'}</th>
    <td>${label(l.equipment_type)}</td><td class="num">${count(l.loads)}</td><td class="nowrap">${utc(l.last_delivered_at)}</td><td class="num nowrap" data-price-vs-market>${vsMarket(l.price)}</td></tr>`;
  })}</tbody></table></div>`
}
<h2 id="carrier-on-time">On-time delivery</h2>
${
  scoredAll === 0
    ? html`<p>No delivered load of this carrier has an actual arrival yet: send stop actuals or tracking events to see its on-time record.</p>`
    : html`<p data-on-time-summary>On time at ${count(onTimeAll)} of ${count(scoredAll)} deliveries with an actual arrival (${Math.round((onTimeAll / scoredAll) * 100)}%), arriving by the end of the window as it stood then plus ${graceMinutes} minutes’ grace; the newest ${count(history)} history loads.</p>
${lineChart({
  id: 'carrier-on-time-trend',
  title: 'On-time delivery by month',
  description: `Share of scored deliveries on time per month of delivery (UTC), the last ${months.length} months with history.`,
  labels: months.map((m) => m.month),
  series: [{ name: 'On time', cls: 's0', values: months.map((m) => (m.scored === 0 ? null : Math.round((m.onTime / m.scored) * 1000) / 10)) }],
  format: (v) => `${v.toFixed(0)}%`,
})}
<div class="table-wrap"><table aria-labelledby="carrier-on-time"><caption>Scored deliveries per month</caption>
  <thead><tr><th scope="col">Month</th><th scope="col" class="num">Scored</th><th scope="col" class="num">On time</th><th scope="col" class="num">Rate</th></tr></thead>
  <tbody>${months.map((m) => html`<tr><th scope="row">${m.month}</th><td class="num">${m.scored}</td><td class="num">${m.onTime}</td><td class="num">${m.scored ? `${Math.round((m.onTime / m.scored) * 100)}%` : '—'}</td></tr>`)}</tbody></table></div>`
}
<h2 id="carrier-price">Price against market</h2>
${
  price.rate_vs_market === null
    ? html`<p>No delivery of this carrier on the lanes above could be priced: that takes a carrier rate, a total distance and a market rate snapshot on the lane as of its delivery date, in the rate’s currency.</p>`
    : html`<p data-price-summary>${price.rate_vs_market.toFixed(2)}× the market: the median over ${count(price.priced_loads)} priced ${price.priced_loads === 1 ? 'delivery' : 'deliveries'} on the lanes above of the carrier total ÷ (the lane’s market rate per mile at the delivery date × miles)${
        price.rate_vs_market < 0.97
          ? `, ${Math.round((1 - price.rate_vs_market) * 100)}% under market`
          : price.rate_vs_market > 1.03
            ? `, ${Math.round((price.rate_vs_market - 1) * 100)}% over market`
            : ', about the market'
      }. Each lane’s figure is in the table above; its page ranks this carrier against the others.</p>`
}
<h2 id="carrier-recommended">Recommended for</h2>
${
  recommended.length === 0
    ? html`<p>No open load has this carrier among its recommendations right now.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="carrier-recommended">
  <caption>Open loads whose current recommendations include this carrier (the ${recommended.length === 25 ? '25 latest pickups' : 'latest pickups first'}; times in UTC)</caption>
  <thead><tr><th scope="col">Load</th><th scope="col">Status</th><th scope="col">Equipment</th><th scope="col">First pickup</th><th scope="col" class="num">Rank</th></tr></thead>
  <tbody>${recommended.map(
    (
      r,
    ) => html`<tr><th scope="row"><a href="${loadPath(r.external_reference_id)}">${r.external_reference_id}</a></th><td>${statusBadge(r.status)}</td><td>${label(r.equipment_type)}</td>
    <td class="nowrap">${utc(r.pickup_at)}</td><td class="num">${r.rank || '—'}</td></tr>`,
  )}</tbody></table></div>`
}
<h2 id="carrier-loads">Loads</h2>
${loads.length === 0 ? emptyState('No loads with this carrier yet.') : loadTable('Newest loads with this carrier (times in UTC)', loads, { customer: true })}`;
  return { title: carrier.name, body };
}

async function customerPage(ctx: DashboardContext, orgId: string, ref: string) {
  const customer = await ctx.services.customers.get(orgId, ref);
  const { loads, total } = await ctx.services.insights.customerActivity(orgId, customer.id);
  const body = html`<p><a href="/customers">← All customers</a></p>
<h1>${customer.name} <span class="muted">(${customer.external_reference_id})</span></h1>
<section class="card" aria-labelledby="customer-facts">
<h2 id="customer-facts">Details</h2>
<dl class="facts">
  <dt>Reference number</dt><dd>${customer.reference_number ?? '—'}</dd>
  <dt>Type</dt><dd>${customer.customer_type ?? '—'}</dd>
  <dt>Domain</dt><dd>${customer.domain ?? '—'}</dd>
  <dt>Phone</dt><dd>${customer.phone ?? '—'}</dd>
  <dt>Active</dt><dd>${customer.is_active ? 'Yes' : 'No'}</dd>
  <dt>Loads</dt><dd>${count(total)} <a href="/loads?customer=${customer.external_reference_id}">(filter the loads list)</a></dd>
</dl>
</section>
<h2 id="customer-loads">Loads</h2>
${loads.length === 0 ? emptyState('No loads for this customer yet.') : loadTable('Newest loads of this customer (times in UTC)', loads, { carrier: true })}`;
  return { title: customer.name, body };
}

const WEEKS = 26;

async function lanePage(
  ctx: DashboardContext,
  orgId: string,
  originRef: string,
  destinationRef: string,
  equipment: string,
  rankBy: 'history' | 'balanced' = 'history',
) {
  // Carriers ranked exactly as a load on this lane would be, with no carrier assigned.
  const {
    origin,
    destination,
    radiusMiles: radius,
    history,
    snapshots,
    carriers: recs,
    contacts,
  } = await ctx.services.insights.lane(orgId, originRef, destinationRef, equipment, rankBy);
  // Weekly series over the last 26 weeks (UTC weeks from Monday).
  const lastWeek = weekStart(ctx.clock.now().getTime());
  const weeks = Array.from({ length: WEEKS }, (_, i) => lastWeek - (WEEKS - 1 - i) * 7 * DAY);
  const index = (iso: string) => {
    const w = weekStart(Date.parse(iso));
    const i = Math.round((w - weeks[0]!) / (7 * DAY));
    return i >= 0 && i < WEEKS ? i : -1;
  };
  const delivered = weeks.map(() => 0);
  const rateSum = weeks.map(() => 0);
  const rateN = weeks.map(() => 0);
  for (const h of history) {
    const i = index(h.delivered_at);
    if (i < 0) continue;
    delivered[i]!++;
    if (h.carrier_rate_total !== null && h.total_distance) {
      rateSum[i]! += h.carrier_rate_total / h.total_distance;
      rateN[i]!++;
    }
  }
  const marketSum = weeks.map(() => 0);
  const marketN = weeks.map(() => 0);
  for (const s of snapshots) {
    const i = index(s.as_of);
    if (i < 0) continue;
    marketSum[i]! += Number(s.rate_per_mile);
    marketN[i]!++;
  }
  const labels = weeks.map(shortDate);
  // Named by the areas of its ends (as the Lanes list names them), not by the locations it is centred on.
  const title = `${laneAreas(origin, destination)} · ${label(equipment)}`;
  const body = html`<p><a href="/lanes">← All lanes</a></p>
<h1>${title}</h1>
<p>A lane as recommendations define it: delivered ${label(equipment).toLowerCase()} loads whose origin is within ${radius} miles of
<a href="${locationPath(origin.external_reference_id)}">${origin.name}</a> (${placeLabel(origin)}) and whose destination is within ${radius} miles of
<a href="${locationPath(destination.external_reference_id)}">${destination.name}</a> (${placeLabel(destination)}).</p>
${mapSvg({
  id: 'lane-map',
  title: `Map of the lane ${laneAreas(origin, destination)}`,
  description: `Centred on ${origin.name} (${placeLabel(origin)}) and ${destination.name} (${placeLabel(destination)}).`,
  points: [
    { ...origin, label: `Origin: ${origin.name}`, name: origin.name, kind: 'origin', href: locationPath(origin.external_reference_id) },
    {
      ...destination,
      label: `Destination: ${destination.name}`,
      name: destination.name,
      kind: 'destination',
      href: locationPath(destination.external_reference_id),
    },
  ],
  lines: [{ from: origin, to: destination, curved: true, kind: equipmentClass(equipment), width: 4, label: title }],
})}
<h2 id="lane-carriers">Carriers, ranked as recommendations rank them</h2>
<p class="ranking-switch">Ranked by ${rankBy === 'balanced' ? html`<strong>balanced score</strong> (history × on time × price × backhaul) · <a href="?">rank by lane history</a>` : html`<strong>lane history</strong> · <a href="?rank_by=balanced">rank by balanced score</a> (on time, price against market and backhaul weighed in)`}</p>
${recs.length === 0 ? html`<p>No carrier has delivered a load on this lane yet.</p>` : recommendationTable('lane-carriers', recs, contacts)}
<h2 id="lane-charts">Volume and rates</h2>
${stackedBars({ id: 'lane-volume', title: 'Delivered loads per week', description: `Delivered loads on the lane per week, the last ${WEEKS} weeks (weeks start Monday, UTC).`, labels, series: [{ name: 'Delivered loads', cls: 's0' }], values: [delivered] })}
${lineChart({
  id: 'lane-rates',
  title: 'Carrier rate per mile against market snapshots',
  description: 'Weekly mean carrier rate per mile (carrier rates ÷ total distance) of delivered loads, and the weekly mean market snapshot rate per mile.',
  labels,
  format: (v) => `$${v.toFixed(2)}`,
  series: [
    { name: 'Carrier rate per mile', cls: 's0', values: rateSum.map((s, i) => (rateN[i] ? s / rateN[i]! : null)) },
    { name: 'Market rate per mile', cls: 's1', values: marketSum.map((s, i) => (marketN[i] ? s / marketN[i]! : null)), dots: false },
  ],
})}
<h2 id="lane-snapshots">Market rate snapshots</h2>
${
  snapshots.length === 0
    ? emptyState('No market rate snapshot on this lane.')
    : html`<div class="table-wrap"><table aria-labelledby="lane-snapshots">
  <caption>Newest first (${count(snapshots.length)}${snapshots.length === 200 ? ', the newest 200' : ''})</caption>
  <thead><tr><th scope="col">As of</th><th scope="col" class="num">Rate per mile</th><th scope="col" class="num">Low</th><th scope="col" class="num">High</th><th scope="col">Source</th></tr></thead>
  <tbody>${snapshots.slice(0, 50).map(
    (s) => html`<tr><th scope="row" class="nowrap">${utc(s.as_of)}</th><td class="num">${money(Number(s.rate_per_mile), s.currency)}</td>
    <td class="num">${s.rate_per_mile_low === null ? '—' : money(Number(s.rate_per_mile_low), s.currency)}</td><td class="num">${s.rate_per_mile_high === null ? '—' : money(Number(s.rate_per_mile_high), s.currency)}</td><td>${s.source ?? '—'}</td></tr>`,
  )}</tbody></table></div>`
}
<h2 id="lane-history">History loads</h2>
${
  history.length === 0
    ? html`<p>No delivered load on this lane yet.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="lane-history">
  <caption>The newest 25 of ${count(history.length)} delivered loads${history.length >= 5000 ? ' (read at most 5,000)' : ''} (times in UTC)</caption>
  <thead><tr><th scope="col">Load</th><th scope="col">Carrier</th><th scope="col">Delivered</th><th scope="col" class="num">Carrier rate</th><th scope="col" class="num">Per mile</th></tr></thead>
  <tbody>${history.slice(0, 25).map(
    (h) => html`<tr><th scope="row"><a href="${loadPath(h.external_reference_id)}">${h.external_reference_id}</a></th>
    <td><a href="${carrierPath(h.carrier_external_reference_id)}">${h.carrier_external_reference_id}</a></td><td class="nowrap">${utc(h.delivered_at)}</td>
    <td class="num">${money(h.carrier_rate_total)}</td><td class="num">${h.carrier_rate_total !== null && h.total_distance ? money(h.carrier_rate_total / h.total_distance) : '—'}</td></tr>`,
  )}</tbody></table></div>`
}`;
  return { title, body };
}

export interface RankedCarrier {
  carrier_id: string;
  carrier_external_reference_id: string;
  carrier_name: string;
  dot_number: string | null;
  lane_load_count: number;
  last_delivered_at: string;
  score: number;
  average_carrier_rate: number | null;
  balanced_score?: number;
  evidence?: Evidence;
  reasons?: string[];
}

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${Math.round(x * 100)}%`);

/** Each number of a recommendation's evidence (docs/dashboard.md, "Recommendation evidence") with the formula it came from, in words. */
function howCalculated(r: RankedCarrier): SafeHtml {
  const e = r.evidence!;
  const d = e.on_time.delivery;
  const p = e.on_time.pickup;
  const rvm = e.price.rate_vs_market;
  return html`<details class="how"><summary>How this was calculated</summary>
<ul>
  <li>Score ${r.score.toFixed(3)} = Σ over its ${r.lane_load_count} loads on the lane of proximity weight (1.0 within 25 mi, 0.7 within 50, 0.4 within 100) × ½^(age in days ÷ 90); each load's product is its weight w.</li>
  <li>Effective loads ${e.effective_loads.toFixed(2)} = (Σw)² ÷ Σw²: how many equally weighted loads the evidence is worth.</li>
  <li>On time at delivery ${pct(d.rate)} = Σw of on-time stops ÷ Σw of scored stops (${d.scored} scored; coverage ${pct(d.coverage)} of the weight has an actual arrival). At pickup ${pct(p.rate)} (${p.scored} scored, coverage ${pct(p.coverage)}). On time means arriving by the end of the window as it stood then + ${e.on_time.grace_minutes} min grace.</li>
  <li>Price ${rvm === null ? 'not compared: no load with a carrier rate had a market snapshot on the lane at its delivery date' : html`${rvm.toFixed(3)} × market = weighted median over ${e.price.priced_loads} priced loads of carrier total ÷ (market $/mi at the delivery date × miles)`}.</li>
  <li>Backhaul: ${e.backhaul ? html`load ${e.backhaul.load_external_reference_id} delivers ${e.backhaul.miles_to_origin} mi from this pickup ${e.backhaul.hours_before_pickup} h before it` : 'none (no load of this carrier on its way delivers within 100 mi of this pickup 0–48 h before it)'}.</li>
  <li>Confidence ${e.confidence} = round(50 + 50 × (1 − e^(−effective loads ÷ 4)) × 1 ÷ (1 + variation of its $/mi) × (0.5 + 0.5 × mean coverage)); below 63 the evidence is thin.</li>
  ${r.balanced_score !== undefined ? html`<li>Balanced score ${r.balanced_score.toFixed(4)} = score × (0.5 + 0.5 × on-time estimate) × (1 ÷ price vs market, kept within 0.8–1.2) × 1.25 with a backhaul.</li>` : ''}
</ul></details>`;
}

/** Ranked carriers with a link to each, its primary contact's phone and email, and the evidence behind its rank. */
export function recommendationTable(labelledBy: string, recs: RankedCarrier[], contacts: Map<string, PrimaryContact>): SafeHtml {
  const balanced = recs.some((r) => r.balanced_score !== undefined);
  return html`<div class="table-wrap"><table aria-labelledby="${labelledBy}">
  <caption>${balanced ? 'Best first by balanced score: lane history weighed with on-time delivery, price against market and backhaul' : 'Best first: score = Σ proximity weight × ½^(age in days ÷ 90)'}</caption>
  <thead><tr><th scope="col" class="num">Rank</th><th scope="col">Carrier</th><th scope="col">Primary contact</th><th scope="col">DOT number</th><th scope="col" class="num">Loads on lane</th>
  <th scope="col">Last delivered</th><th scope="col" class="num">Score</th>${balanced ? html`<th scope="col" class="num">Balanced</th>` : ''}<th scope="col" class="num">Average carrier rate</th>
  <th scope="col" class="num">On time (deliveries)</th><th scope="col" class="num">vs market</th><th scope="col" class="num">Confidence</th><th scope="col">Why</th></tr></thead>
  <tbody>${recs.map((r, i) => {
    const c = contacts.get(r.carrier_id);
    const e = r.evidence;
    return html`<tr data-carrier="${r.carrier_external_reference_id}"><td class="num">${i + 1}</td><th scope="row"><a href="${carrierPath(r.carrier_external_reference_id)}">${r.carrier_name}</a> <span class="muted">(${r.carrier_external_reference_id})</span></th>
    <td class="contact">${c?.name ? html`${c.name}<br>` : ''}${c?.phone ? html`<a href="tel:${c.phone}">${c.phone}</a>` : html`<span class="muted">no phone</span>`}<br>${
      c?.email ? html`<a href="mailto:${c.email}">${c.email}</a>` : html`<span class="muted">no email</span>`
    }</td>
    <td>${r.dot_number ?? '—'}</td><td class="num">${r.lane_load_count}</td><td>${when(r.last_delivered_at)}</td>
    <td class="num">${r.score.toFixed(3)}</td>${balanced ? html`<td class="num">${(r.balanced_score ?? 0).toFixed(4)}</td>` : ''}<td class="num">${money(r.average_carrier_rate)}</td>
    <td class="num">${e ? html`${pct(e.on_time.delivery.rate)} <span class="muted">(${e.on_time.delivery.scored} scored)</span>` : '—'}</td>
    <td class="num">${e?.price.rate_vs_market != null ? `${e.price.rate_vs_market.toFixed(2)}×` : '—'}</td>
    <td class="num">${e ? html`${e.confidence}${e.confidence < THIN_EVIDENCE_BELOW ? html`<br><span class="flag" data-thin-evidence>thin evidence: get more bids</span>` : ''}` : '—'}</td>
    <td>${r.reasons && r.reasons.length > 0 ? html`<ul class="reasons">${r.reasons.map((x) => html`<li>${x}</li>`)}</ul>` : ''}${e ? howCalculated(r) : ''}</td></tr>`;
  })}</tbody>
</table></div>`;
}

export function detailRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const show =
    (
      active: 'locations' | 'carriers' | 'customers' | 'lanes',
      build: (orgId: string, params: Record<string, string>) => Promise<{ title: string; body: SafeHtml }>,
    ) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      const s = requireSession(req, reply);
      if (!s) return reply;
      const { title, body } = await build(s.orgId, { ...(req.query as Record<string, string>), ...(req.params as Record<string, string>) });
      return sendPage(reply, page({ title, session: s, active, body }));
    };
  app.get(
    `${listPath('locations')}/:ref`,
    show('locations', (orgId, p) => locationPage(ctx, orgId, p.ref!)),
  );
  app.get(
    `${listPath('carriers')}/:ref`,
    show('carriers', (orgId, p) => carrierPage(ctx, orgId, p.ref!)),
  );
  app.get(
    `${listPath('customers')}/:ref`,
    show('customers', (orgId, p) => customerPage(ctx, orgId, p.ref!)),
  );
  app.get(
    '/lanes/:origin/:destination/:equipment',
    show('lanes', (orgId, p) => lanePage(ctx, orgId, p.origin!, p.destination!, p.equipment!.toUpperCase(), p.rank_by === 'balanced' ? 'balanced' : 'history')),
  );
}
