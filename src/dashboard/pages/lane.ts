import { utcMs } from '../../lib/time.js';
import type { DashboardContext } from '../context.js';
import { lineChart, stackedBars } from '../charts.js';
import { count, label, money, utc } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { mapSvg } from '../map.js';
import { carrierPath, emptyState, equipmentClass, laneAreas, loadPath, locationPath, placeLabel } from './records.js';
import { recommendationTable } from './recommendations.js';

/** A lane's page (docs/dashboard.md, "Lanes and recommendation lanes"): its carriers as ranked, weekly volume and rates, snapshots and history. */

type Lane = Awaited<ReturnType<DashboardContext['services']['insights']['lane']>>;
type LaneEnd = Lane['origin'];

const DAY = 86_400_000;
/** Monday 00:00 UTC of the week of `ms`. */
const weekStart = (ms: number) => {
  const d = new Date(ms);
  const day = (d.getUTCDay() + 6) % 7;
  // utcMs, not Date.UTC: an arrival in year 0050 stays in year 50 (docs/api.md).
  return utcMs(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate() - day);
};
const shortDate = (ms: number) => new Date(ms).toISOString().slice(5, 10);

const WEEKS = 26;

/** Weekly series over the last 26 weeks (UTC weeks from Monday): delivered loads, and carrier and market rates per mile. */
function weeklySeries(now: number, history: Lane['history'], snapshots: Lane['snapshots']) {
  const lastWeek = weekStart(now);
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
  return { labels: weeks.map(shortDate), delivered, rateSum, rateN, marketSum, marketN };
}

function laneMap(origin: LaneEnd, destination: LaneEnd, equipment: string, title: string): SafeHtml {
  return mapSvg({
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
  });
}

function charts(w: ReturnType<typeof weeklySeries>): SafeHtml {
  const { labels, delivered, rateSum, rateN, marketSum, marketN } = w;
  return html`${stackedBars({ id: 'lane-volume', title: 'Delivered loads per week', description: `Delivered loads on the lane per week, the last ${WEEKS} weeks (weeks start Monday, UTC).`, labels, series: [{ name: 'Delivered loads', cls: 's0' }], values: [delivered] })}
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
})}`;
}

function snapshotsTable(snapshots: Lane['snapshots']): SafeHtml {
  return snapshots.length === 0
    ? emptyState('No market rate snapshot on this lane.')
    : html`<div class="table-wrap"><table aria-labelledby="lane-snapshots">
  <caption>Newest first (${count(snapshots.length)}${snapshots.length === 200 ? ', the newest 200' : ''})</caption>
  <thead><tr><th scope="col">As of</th><th scope="col" class="num">Rate per mile</th><th scope="col" class="num">Low</th><th scope="col" class="num">High</th><th scope="col">Source</th></tr></thead>
  <tbody>${snapshots.slice(0, 50).map(
    (s) => html`<tr><th scope="row" class="nowrap">${utc(s.as_of)}</th><td class="num">${money(Number(s.rate_per_mile), s.currency)}</td>
    <td class="num">${s.rate_per_mile_low === null ? '—' : money(Number(s.rate_per_mile_low), s.currency)}</td><td class="num">${s.rate_per_mile_high === null ? '—' : money(Number(s.rate_per_mile_high), s.currency)}</td><td>${s.source ?? '—'}</td></tr>`,
  )}</tbody></table></div>`;
}

function historyTable(history: Lane['history']): SafeHtml {
  return history.length === 0
    ? html`<p>No delivered load on this lane yet.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="lane-history">
  <caption>The newest 25 of ${count(history.length)} delivered loads${history.length >= 5000 ? ' (read at most 5,000)' : ''} (times in UTC)</caption>
  <thead><tr><th scope="col">Load</th><th scope="col">Carrier</th><th scope="col">Delivered</th><th scope="col" class="num">Carrier rate</th><th scope="col" class="num">Per mile</th></tr></thead>
  <tbody>${history.slice(0, 25).map(
    (h) => html`<tr><th scope="row"><a href="${loadPath(h.external_reference_id)}">${h.external_reference_id}</a></th>
    <td><a href="${carrierPath(h.carrier_external_reference_id)}">${h.carrier_external_reference_id}</a></td><td class="nowrap">${utc(h.delivered_at)}</td>
    <td class="num">${money(h.carrier_rate_total)}</td><td class="num">${h.carrier_rate_total !== null && h.total_distance ? money(h.carrier_rate_total / h.total_distance) : '—'}</td></tr>`,
  )}</tbody></table></div>`;
}

export async function lanePage(
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
  const series = weeklySeries(ctx.clock.now().getTime(), history, snapshots);
  // Named by the areas of its ends (as the Lanes list names them), not by the locations it is centred on.
  const title = `${laneAreas(origin, destination)} · ${label(equipment)}`;
  const body = html`<p><a href="/lanes">← All lanes</a></p>
<h1>${title}</h1>
<p>A lane as recommendations define it: delivered ${label(equipment).toLowerCase()} loads whose origin is within ${radius} miles of
<a href="${locationPath(origin.external_reference_id)}">${origin.name}</a> (${placeLabel(origin)}) and whose destination is within ${radius} miles of
<a href="${locationPath(destination.external_reference_id)}">${destination.name}</a> (${placeLabel(destination)}).</p>
${laneMap(origin, destination, equipment, title)}
<h2 id="lane-carriers">Carriers, ranked as recommendations rank them</h2>
<p class="ranking-switch">Ranked by ${rankBy === 'balanced' ? html`<strong>balanced score</strong> (history × on time × price × backhaul) · <a href="?">rank by lane history</a>` : html`<strong>lane history</strong> · <a href="?rank_by=balanced">rank by balanced score</a> (on time, price against market and backhaul weighed in)`}</p>
${recs.length === 0 ? html`<p>No carrier has delivered a load on this lane yet.</p>` : recommendationTable('lane-carriers', recs, contacts)}
<h2 id="lane-charts">Volume and rates</h2>
${charts(series)}
<h2 id="lane-snapshots">Market rate snapshots</h2>
${snapshotsTable(snapshots)}
<h2 id="lane-history">History loads</h2>
${historyTable(history)}`;
  return { title, body };
}
