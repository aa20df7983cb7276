import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RECORD_KINDS, type ReferencedRecordKind } from '../../domain/records.js';
import { EVENT_TYPES, type FeedEvent } from '../../modules/events/events.schema.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { label, utc } from '../format.js';
import { html, href, type SafeHtml } from '../html.js';
import { page } from '../layout.js';
import { carrierPath, customerPath, lanePath, loadPath, locationPath } from './records.js';

const PAGE_SIZE = 50;

function queryValue(req: FastifyRequest, name: string): string {
  const v = (req.query as Record<string, unknown>)[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first.trim().slice(0, 40) : '';
}

/** The kinds with a page per record, by the noun their event types start with (`load.updated` → loads). */
const KIND_BY_NOUN = new Map(
  (Object.keys(RECORD_KINDS) as (keyof typeof RECORD_KINDS)[])
    .filter((k): k is ReferencedRecordKind => k !== 'market_rates')
    .map((k) => [RECORD_KINDS[k].noun as string, k]),
);

type Subject =
  | { kind: ReferencedRecordKind; id: string; ref: string }
  | { kind: 'market_rate'; ref: string; origin: string | null; destination: string | null; equipment: string | null }
  | { kind: 'import'; ref: string }
  | { kind: 'other'; ref: string };

const RECORD_PAGE: Record<ReferencedRecordKind, (ref: string) => string> = {
  customers: customerPath,
  carriers: carrierPath,
  locations: locationPath,
  loads: loadPath,
};

const text = (v: unknown) => (typeof v === 'string' ? v : null);

/** What an event is about, read from its type and data (every record's data carries its id and reference: docs/events.md, "The events"). */
function subjectOf(e: FeedEvent): Subject {
  const data = e.data as Record<string, unknown>;
  const noun = e.type.slice(0, e.type.indexOf('.'));
  const ref = text(data.external_reference_id) ?? text(data.id) ?? '';
  const kind = KIND_BY_NOUN.get(noun);
  if (kind && text(data.id)) return { kind, id: text(data.id)!, ref };
  if (noun === 'market_rate') {
    const end = (v: unknown) => text((v as { location_external_reference_id?: unknown } | null)?.location_external_reference_id);
    return { kind: 'market_rate', ref, origin: end(data.origin), destination: end(data.destination), equipment: text(data.equipment_type) };
  }
  if (noun === 'import') return { kind: 'import', ref };
  return { kind: 'other', ref };
}

/**
 * The record's cell: a link to its page while the record exists (a deleted one, or one deleted since,
 * has none: its page would be a 404); a market rate links to the recommendation lane between its two
 * locations (whose page lists the lane's snapshots) when it was sent with both; an import to the
 * Imports page. The reference is shown either way.
 */
function recordCell(s: Subject, still: { ids: Map<ReferencedRecordKind, Map<string, string>>; locationRefs: Set<string> }): SafeHtml {
  if (s.kind === 'market_rate') {
    const linked = s.origin && s.destination && s.equipment && still.locationRefs.has(s.origin) && still.locationRefs.has(s.destination);
    return linked
      ? html`<a href="${lanePath(s.origin!, s.destination!, s.equipment!)}" data-record-link>${s.origin} → ${s.destination}, ${label(s.equipment!)}</a><br><span class="muted">${s.ref}</span>`
      : html`${s.ref}`;
  }
  if (s.kind === 'import') return html`<a href="/imports" data-record-link>${s.ref}</a>`;
  if (s.kind === 'other') return html`${s.ref}`;
  const current = still.ids.get(s.kind)?.get(s.id);
  if (current === undefined) return html`${s.ref} <span class="muted">(${RECORD_KINDS[s.kind].name.toLowerCase()} no longer exists)</span>`;
  return html`<a href="${RECORD_PAGE[s.kind](current)}" data-record-link>${current}</a>`;
}

/** The change feed for operations people: what changed and when, newest first, each event's data viewable. */
export function eventRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get('/events', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const typeParam = queryValue(req, 'type');
    const type = (EVENT_TYPES as readonly string[]).includes(typeParam) ? typeParam : '';
    const beforeParam = Number(queryValue(req, 'before'));
    const before = Number.isSafeInteger(beforeParam) && beforeParam > 0 ? beforeParam : null;
    // One more than a page: whether an older page exists.
    const events = await ctx.services.events.recent(s.orgId, { before, type: type || null, limit: PAGE_SIZE + 1 });
    const shown = events.slice(0, PAGE_SIZE);
    const older = events.length > PAGE_SIZE ? shown[shown.length - 1]!.sequence : null;
    // One lookup per kind for the whole page: which records still exist (to link) and their references.
    const subjects = shown.map(subjectOf);
    const ids: Partial<Record<ReferencedRecordKind, string[]>> = {};
    for (const subject of subjects) if ('id' in subject) (ids[subject.kind] ??= []).push(subject.id);
    const locationRefs = subjects.flatMap((s) => (s.kind === 'market_rate' ? [s.origin, s.destination].filter((r): r is string => r !== null) : []));
    const still = await ctx.services.insights.recordsStillThere(s.orgId, { ids, locationRefs });
    const typeSelect = html`<form class="inline" method="get" action="/events" role="search">
  <div><label for="type">Type</label><select id="type" name="type">
    <option value=""${type === '' ? html` selected` : ''}>All types</option>
    ${EVENT_TYPES.map((t) => html`<option value="${t}"${type === t ? html` selected` : ''}>${t}</option>`)}
  </select></div>
  <div><button type="submit">Show</button></div>
  ${type || before ? html`<div><a href="/events">Newest of every type</a></div>` : ''}
</form>`;
    const body = html`<h1>Events</h1>
<p>Every change committed to your data, newest first: what your integration reads from <code>GET /v2/tms-api/events</code>
(or receives by webhook), in the same order and with the same data. Events are kept ${ctx.services.events.retentionDays} days.</p>
${typeSelect}
${
  shown.length === 0
    ? html`<p>${before ? 'No older events.' : type ? 'No events of this type yet.' : 'No events yet: they appear as your TMS writes customers, carriers, locations, loads and market rates.'}</p>`
    : html`<div class="table-wrap"><table>
  <caption>Events, newest first (times in UTC)</caption>
  <thead><tr><th scope="col" class="num">Sequence</th><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Record</th><th scope="col">Data</th></tr></thead>
  <tbody>${shown.map((e, i) => {
    return html`<tr><td class="num">${e.sequence}</td><td class="nowrap">${utc(e.timestamp)}</td><td><code>${e.type}</code></td><td>${recordCell(subjects[i]!, still)}</td>
    <td><details><summary>View data</summary><pre class="event-data">${JSON.stringify(e.data, null, 2)}</pre></details></td></tr>`;
  })}</tbody>
</table></div>`
}
${older !== null ? html`<nav class="pager" aria-label="Pages of events"><a href="${href('/events', { type: type || undefined, before: older })}" rel="next">Older events →</a></nav>` : ''}`;
    return sendPage(reply, page({ title: 'Events', session: s, active: 'events', body }));
  });
}
