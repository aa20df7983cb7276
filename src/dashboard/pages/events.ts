import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EVENT_TYPES } from '../../modules/events/events.schema.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { utc } from '../format.js';
import { html, href } from '../html.js';
import { page } from '../layout.js';

const PAGE_SIZE = 50;

function queryValue(req: FastifyRequest, name: string): string {
  const v = (req.query as Record<string, unknown>)[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first.trim().slice(0, 40) : '';
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
(or receives by webhook), in the same order and with the same data. Events are kept 30 days.</p>
${typeSelect}
${shown.length === 0
  ? html`<p>${before ? 'No older events.' : type ? 'No events of this type yet.' : 'No events yet: they appear as your TMS writes customers, carriers, locations, loads and market rates.'}</p>`
  : html`<div class="table-wrap"><table>
  <caption>Events, newest first (times in UTC)</caption>
  <thead><tr><th scope="col" class="num">Sequence</th><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Record</th><th scope="col">Data</th></tr></thead>
  <tbody>${shown.map((e) => {
    const data = e.data as { id?: unknown; external_reference_id?: unknown };
    const ref = typeof data.external_reference_id === 'string' ? data.external_reference_id : typeof data.id === 'string' ? data.id : '';
    return html`<tr><td class="num">${e.sequence}</td><td class="nowrap">${utc(e.timestamp)}</td><td><code>${e.type}</code></td><td>${ref}</td>
    <td><details><summary>View data</summary><pre class="event-data">${JSON.stringify(e.data, null, 2)}</pre></details></td></tr>`;
  })}</tbody>
</table></div>`}
${older !== null ? html`<nav class="pager" aria-label="Pages of events"><a href="${href('/events', { type: type || undefined, before: older })}" rel="next">Older events →</a></nav>` : ''}`;
    return sendPage(reply, page({ title: 'Events', session: s, active: 'events', body }));
  });
}
