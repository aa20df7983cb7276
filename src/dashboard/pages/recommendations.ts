import { money } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { when } from '../layout.js';
import type { PrimaryContact } from '../../modules/insights/insights.service.js';
import type { Evidence } from '../../modules/lanes/lanes.schema.js';
import { THIN_EVIDENCE_BELOW } from '../../domain/evidence.js';
import { carrierPath } from './records.js';

/** Recommended carriers as a table, on a load's page and a lane's (docs/dashboard.md, "Recommendation evidence"). */

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
