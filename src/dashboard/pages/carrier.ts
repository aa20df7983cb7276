import { lineChart } from '../charts.js';
import type { DashboardContext } from '../context.js';
import { count, label, utc } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { mapSvg } from '../map.js';
import type { Carrier } from '../../modules/carriers/carriers.schema.js';
import { emptyState, equipmentClass, lanePath, loadPath, loadTable, placeLabel, statusBadge } from './records.js';

/** A carrier's page: its details and contacts, the lanes it has run, its on-time record and price against the market. */

type CarrierActivity = Awaited<ReturnType<DashboardContext['services']['insights']['carrierActivity']>>;

const vsMarket = (p: { rate_vs_market: number | null; priced_loads: number } | undefined) =>
  p?.rate_vs_market != null ? html`${p.rate_vs_market.toFixed(2)}× <span class="muted">(${count(p.priced_loads)} priced)</span>` : '—';

function facts(carrier: Carrier, total: number): SafeHtml {
  return html`<section class="card" aria-labelledby="carrier-facts">
<h2 id="carrier-facts">Details</h2>
<dl class="facts">
  <dt>DOT number</dt><dd>${carrier.dot_number ?? '—'}</dd>
  <dt>MC number</dt><dd>${carrier.mc_number ?? '—'}</dd>
  <dt>Phone</dt><dd>${carrier.phone_number ? html`<a href="tel:${carrier.phone_number}">${carrier.phone_number}</a>` : '—'}</dd>
  <dt>Email</dt><dd>${carrier.email ? html`<a href="mailto:${carrier.email}">${carrier.email}</a>` : '—'}</dd>
  <dt>Address</dt><dd>${carrier.address ? [carrier.address.address_line1, carrier.address.city, carrier.address.state, carrier.address.postal_code].filter(Boolean).join(', ') : '—'}</dd>
  <dt>Loads</dt><dd>${count(total)}</dd>
</dl>
</section>`;
}

/** Its contacts, with phone and email links. */
function contactsSection(carrier: Carrier): SafeHtml {
  return carrier.contacts.length === 0
    ? html`<p>No contacts.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="carrier-contacts">
  <thead><tr><th scope="col">Name</th><th scope="col">Phone</th><th scope="col">Email</th><th scope="col">Primary</th></tr></thead>
  <tbody>${carrier.contacts.map(
    (p) => html`<tr><th scope="row">${[p.first_name, p.last_name].filter(Boolean).join(' ') || 'Unnamed'}</th>
    <td>${p.primary_phone ? html`<a href="tel:${p.primary_phone}">${p.primary_phone}</a>` : '—'}</td>
    <td>${p.primary_email ? html`<a href="mailto:${p.primary_email}">${p.primary_email}</a>` : '—'}</td><td>${p.is_primary_contact ? html`<span class="badge">primary</span>` : ''}</td></tr>`,
  )}</tbody></table></div>`;
}

/** The lanes it has run: a map, and a table with each lane’s price against the market. */
function lanesSection(carrier: Carrier, c: CarrierActivity): SafeHtml {
  const { lanes, places, history } = c;
  return lanes.length === 0
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
  })}</tbody></table></div>`;
}

/** Its on-time record: overall, and by month as a chart and a table. */
function onTimeSection(c: CarrierActivity): SafeHtml {
  const { onTime, graceMinutes, history } = c;
  const months = onTime.slice(-12);
  const scoredAll = onTime.reduce((n, m) => n + m.scored, 0);
  const onTimeAll = onTime.reduce((n, m) => n + m.onTime, 0);
  return scoredAll === 0
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
  <tbody>${months.map((m) => html`<tr><th scope="row">${m.month}</th><td class="num">${m.scored}</td><td class="num">${m.onTime}</td><td class="num">${m.scored ? `${Math.round((m.onTime / m.scored) * 100)}%` : '—'}</td></tr>`)}</tbody></table></div>`;
}

/** Its price against the market over the lanes above. */
function priceSection(c: CarrierActivity): SafeHtml {
  const { price } = c;
  return price.rate_vs_market === null
    ? html`<p>No delivery of this carrier on the lanes above could be priced: that takes a carrier rate, a total distance and a market rate snapshot on the lane as of its delivery date, in the rate’s currency.</p>`
    : html`<p data-price-summary>${price.rate_vs_market.toFixed(2)}× the market: the median over ${count(price.priced_loads)} priced ${price.priced_loads === 1 ? 'delivery' : 'deliveries'} on the lanes above of the carrier total ÷ (the lane’s market rate per mile at the delivery date × miles)${
        price.rate_vs_market < 0.97
          ? `, ${Math.round((1 - price.rate_vs_market) * 100)}% under market`
          : price.rate_vs_market > 1.03
            ? `, ${Math.round((price.rate_vs_market - 1) * 100)}% over market`
            : ', about the market'
      }. Each lane’s figure is in the table above; its page ranks this carrier against the others.</p>`;
}

/** The open loads whose recommendations include it. */
function recommendedSection(c: CarrierActivity): SafeHtml {
  const { recommended } = c;
  return recommended.length === 0
    ? html`<p>No open load has this carrier among its recommendations right now.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="carrier-recommended">
  <caption>Open loads whose current recommendations include this carrier (the ${recommended.length === 25 ? '25 latest pickups' : 'latest pickups first'}; times in UTC)</caption>
  <thead><tr><th scope="col">Load</th><th scope="col">Status</th><th scope="col">Equipment</th><th scope="col">First pickup</th><th scope="col" class="num">Rank</th></tr></thead>
  <tbody>${recommended.map(
    (
      r,
    ) => html`<tr><th scope="row"><a href="${loadPath(r.external_reference_id)}">${r.external_reference_id}</a></th><td>${statusBadge(r.status)}</td><td>${label(r.equipment_type)}</td>
    <td class="nowrap">${utc(r.pickup_at)}</td><td class="num">${r.rank || '—'}</td></tr>`,
  )}</tbody></table></div>`;
}

export async function carrierPage(ctx: DashboardContext, orgId: string, ref: string) {
  const carrier = await ctx.services.carriers.get(orgId, ref);
  const c = await ctx.services.insights.carrierActivity(orgId, carrier.id);
  const { loads, total } = c;
  const body = html`<p><a href="/carriers">← All carriers</a></p>
<h1>${carrier.name} <span class="muted">(${carrier.external_reference_id})</span></h1>
${facts(carrier, total)}
<h2 id="carrier-contacts">Contacts</h2>
${contactsSection(carrier)}
<h2 id="carrier-lanes">Lanes it has run</h2>
${lanesSection(carrier, c)}
<h2 id="carrier-on-time">On-time delivery</h2>
${onTimeSection(c)}
<h2 id="carrier-price">Price against market</h2>
${priceSection(c)}
<h2 id="carrier-recommended">Recommended for</h2>
${recommendedSection(c)}
<h2 id="carrier-loads">Loads</h2>
${loads.length === 0 ? emptyState('No loads with this carrier yet.') : loadTable('Newest loads with this carrier (times in UTC)', loads, { customer: true })}`;
  return { title: carrier.name, body };
}
