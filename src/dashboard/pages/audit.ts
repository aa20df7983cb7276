import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES } from '../../modules/audit/audit.schema.js';
import { sendPage, sessionPage, type DashboardContext } from '../context.js';
import { utc } from '../format.js';
import { href, html, type SafeHtml } from '../html.js';
import { notice, page, pager, settingsTabs } from '../layout.js';
import { queryText } from './list-query.js';

const PAGE_SIZE = 50;
const KINDS = [...new Set(AUDIT_ACTIONS.map((a) => `${a.split('.')[0]}.`))];

const queryValue = (req: FastifyRequest, name: string, max = 64) => queryText(req, name, max);

/** A date (YYYY-MM-DD) as the start of that UTC day, or undefined. */
function dayStart(text: string, plusDays = 0): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const ms = Date.parse(`${text}T00:00:00Z`);
  // A day that does not exist (February 30th) is not one, though Date.parse rolls it over.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text) return undefined;
  return new Date(ms + plusDays * 86_400_000).toISOString();
}

/** The log's filters as asked (the parameters) and as applied (what of them is valid). */
function auditFilters(req: FastifyRequest) {
  const actionParam = queryValue(req, 'action');
  const action = (AUDIT_ACTIONS as readonly string[]).includes(actionParam) || KINDS.includes(actionParam) ? actionParam : '';
  const actorParam = queryValue(req, 'actor_type');
  const actorType = (AUDIT_ACTOR_TYPES as readonly string[]).includes(actorParam) ? (actorParam as (typeof AUDIT_ACTOR_TYPES)[number]) : undefined;
  const actorId = queryValue(req, 'actor_id');
  const from = queryValue(req, 'from', 10);
  const to = queryValue(req, 'to', 10);
  const pageNo = Math.max(1, Math.min(1_000_000, Number.parseInt(queryValue(req, 'page', 9), 10) || 1));
  return { actionParam, action, actorParam, actorType, actorId, from, to, pageNo, since: dayStart(from), before: dayStart(to, 1) };
}

type AuditFilters = ReturnType<typeof auditFilters>;
type AuditEntries = Awaited<ReturnType<DashboardContext['services']['audit']['list']>>;
type OrgUsers = Awaited<ReturnType<DashboardContext['services']['accounts']['listUsers']>>;

/** A filter the page cannot apply is said, not silently dropped (the list shows without it). */
function notAppliedNotice(f: AuditFilters): SafeHtml | string {
  const { actionParam, action, actorParam, actorType, from, since, to, before } = f;
  const notApplied = [
    ...(actionParam && !action ? [html`Action “${actionParam}” is not one of the actions listed`] : []),
    ...(actorParam && !actorType ? [html`Done by “${actorParam}” is not user, key or cli`] : []),
    ...(from && !since ? [html`From “${from}” is not a day (YYYY-MM-DD)`] : []),
    ...(to && !before ? [html`To “${to}” is not a day (YYYY-MM-DD)`] : []),
  ];
  return notApplied.length ? notice('error', html`<p>Not applied:</p><ul>${notApplied.map((n) => html`<li>${n}</li>`)}</ul>`, 'alert') : '';
}

function filterForm(f: AuditFilters, users: OrgUsers, filtered: boolean): SafeHtml {
  const { action, actorType, actorId, from, since, to, before } = f;
  return html`<form class="inline" method="get" action="/settings/audit-log" role="search">
  <div><label for="action">Action</label><select id="action" name="action">
    <option value=""${action === '' ? html` selected` : ''}>Every action</option>
    ${KINDS.map((k) => html`<option value="${k}"${action === k ? html` selected` : ''}>Every ${k.slice(0, -1).replace('_', ' ')} action</option>`)}
    ${AUDIT_ACTIONS.map((a) => html`<option value="${a}"${action === a ? html` selected` : ''}>${a}</option>`)}
  </select></div>
  <div><label for="actor_type">Done by</label><select id="actor_type" name="actor_type">
    <option value=""${!actorType ? html` selected` : ''}>Anyone</option>
    <option value="user"${actorType === 'user' ? html` selected` : ''}>A dashboard user</option>
    <option value="key"${actorType === 'key' ? html` selected` : ''}>An API key</option>
    <option value="cli"${actorType === 'cli' ? html` selected` : ''}>The command line</option>
  </select></div>
  <div><label for="actor_id">User</label><select id="actor_id" name="actor_id">
    <option value=""${!actorId ? html` selected` : ''}>Any user</option>
    ${users.map((u) => html`<option value="${u.id}"${actorId === u.id ? html` selected` : ''}>${u.name}</option>`)}
  </select></div>
  <div><label for="from">From (UTC day)</label><input id="from" name="from" type="date" value="${since ? from : ''}"></div>
  <div><label for="to">To (UTC day)</label><input id="to" name="to" type="date" value="${before ? to : ''}"></div>
  <div><button type="submit">Show</button></div>
  ${filtered ? html`<div><a href="/settings/audit-log">Every entry</a></div>` : ''}
</form>`;
}

function entriesTable(result: AuditEntries, filtered: boolean): SafeHtml {
  return result.items.length === 0
    ? html`<p>${filtered ? 'No entries match these filters.' : 'No entries yet.'}</p>`
    : html`<div class="table-wrap"><table>
  <caption>Audit log, newest first (times in UTC)</caption>
  <thead><tr><th scope="col">Time</th><th scope="col">Action</th><th scope="col">By</th><th scope="col">Target</th><th scope="col">Address</th></tr></thead>
  <tbody>${result.items.map(
    (e) => html`<tr><td class="nowrap">${utc(e.at)}</td><td><code>${e.action}</code></td>
    <td>${e.actor.name} <span class="muted">(${e.actor.type}${e.actor.id ? html` <code>${e.actor.id}</code>` : ''})</span></td>
    <td>${e.target.type} <code>${e.target.id}</code>${e.target.name ? html` ${e.target.name}` : ''}</td><td>${e.ip ?? '—'}</td></tr>`,
  )}</tbody>
</table></div>`;
}

async function showAuditLog(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const f = auditFilters(req);
  const { action, actorType, actorId, from, to, pageNo, since, before } = f;
  const result = await ctx.services.audit.list(s.orgId, {
    page: pageNo,
    page_size: PAGE_SIZE,
    ...(action ? { action } : {}),
    ...(actorType ? { actor_type: actorType } : {}),
    ...(actorId ? { actor_id: actorId } : {}),
    ...(since ? { created_since: since } : {}),
    ...(before ? { created_before: before } : {}),
  });
  const users = await ctx.services.accounts.listUsers(s.orgId);
  const query = {
    action: action || undefined,
    actor_type: actorType,
    actor_id: actorId || undefined,
    from: since ? from : undefined,
    to: before ? to : undefined,
  };
  // Past the last page (an old link, a typed number): the last page, with the same filters.
  if (result.items.length === 0 && pageNo > 1 && result.pagination.total_pages >= 1) {
    return reply.redirect(
      href('/settings/audit-log', { ...query, page: result.pagination.total_pages === 1 ? undefined : result.pagination.total_pages }),
      303,
    );
  }
  const filtered = Object.values(query).some((v) => v !== undefined);
  const body = html`<h1>Settings</h1>
${settingsTabs('audit-log')}
<h2>Audit log</h2>
<p>Every change to users, API keys, webhook endpoints, imports and settings, newest first, with who made it and from which
address. Entries are kept 400 days. Integrations read the same log from <code>GET /v2/tms-api/audit-log</code> (scope <code>read:audit</code>).</p>
${notAppliedNotice(f)}
${filterForm(f, users, filtered)}
${entriesTable(result, filtered)}
${pager('/settings/audit-log', result.pagination, { ...query, actor_type: actorType }, 'entries')}`;
  return sendPage(reply, page({ title: 'Audit log', session: s, active: 'settings', body }));
}

/** Settings → Audit log (docs/dashboard.md, "Roles, the first run and the audit log"): who changed users, keys, webhooks, imports and settings, newest first. */
export function auditRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get(
    '/settings/audit-log',
    sessionPage((req, reply, s) => showAuditLog(ctx, req, reply, s)),
  );
}
