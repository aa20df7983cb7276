import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { EVENT_TYPES } from '../../modules/events/events.schema.js';
import type { DeliveryWithAttempts, EndpointOverview, WebhooksService } from '../../modules/webhooks/webhooks.service.js';
import type { WebhookAttempt, WebhookDelivery } from '../../modules/webhooks/webhooks.schema.js';
import { count, utc } from '../format.js';
import { html, segment, type SafeHtml } from '../html.js';
import { adminOnlyNote, csrfField, errorSummary, field, notice, page, pager, settingsHeader, when, type FieldErrors } from '../layout.js';

/** The pages of Settings → Webhooks; webhookPageRoutes (webhooks.ts) reads the forms and answers with them. */

const REASON: Record<string, string> = {
  gone: 'The receiver answered 410 Gone, so Lanebridge disabled this endpoint automatically.',
  failing: 'Every delivery attempt to this endpoint failed for 5 days, so Lanebridge disabled it automatically.',
};

export interface EndpointForm {
  url: string;
  event_types: string[];
  description: string;
}

function statusBadge(e: EndpointOverview): SafeHtml {
  if (e.status === 'enabled') return html`<span class="badge ok">Enabled</span>`;
  return e.disabled_reason && e.disabled_reason !== 'manual'
    ? html`<span class="badge bad">Disabled automatically</span>`
    : html`<span class="badge warn">Disabled</span>`;
}

function outcome(d: WebhookDelivery | null): SafeHtml {
  if (!d) return html`<span class="hint">No deliveries yet</span>`;
  const code = d.response_status !== null ? html` (HTTP ${d.response_status})` : '';
  if (d.status === 'delivered') return html`<span class="badge ok">Delivered</span>${code}<br>${when(d.created_at)}`;
  if (d.status === 'failed') return html`<span class="badge bad">Failed</span>${code}<br>${when(d.created_at)}`;
  return d.attempt === 0 ? html`<span class="badge">Pending</span>` : html`<span class="badge warn">Retrying</span>${code}`;
}

function typesText(types: readonly string[]): string {
  return types.length === EVENT_TYPES.length ? 'All event types' : types.join(', ');
}

function endpointFormFields(values: EndpointForm, errors: FieldErrors): SafeHtml {
  const typeError = errors.event_types;
  return html`${field({ name: 'url', label: 'Endpoint URL', hint: 'An https address of your system that receives the events as POST requests.', value: values.url, errors, required: true, maxlength: 2048 })}
  <fieldset id="f-event_types"${typeError ? html` aria-describedby="f-event_types-error"` : ''}>
    <legend>Event types</legend>
    <span class="hint">Leave all unticked to receive every type, including types added later.</span>
    ${typeError ? html`<span class="field-error" id="f-event_types-error">${typeError}</span>` : ''}
    <div class="checks">
    ${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="event_types" value="${t}"${values.event_types.includes(t) ? html` checked` : ''}> <code>${t}</code></label>`)}
    </div>
  </fieldset>
  ${field({ name: 'description', label: 'Description', hint: 'Optional: what the endpoint is for.', value: values.description, errors, maxlength: 500 })}`;
}

export async function listPage(
  ctx: { webhooks: WebhooksService },
  s: DashboardSession,
  o: { values?: EndpointForm; errors?: FieldErrors; done?: string; refused?: string } = {},
) {
  const endpoints = await ctx.webhooks.overview(s.orgId);
  const values = o.values ?? { url: '', event_types: [], description: '' };
  const errors = o.errors ?? {};
  const autoDisabled = endpoints.filter((e) => e.disabled_reason === 'gone' || e.disabled_reason === 'failing');
  return page({
    title: 'Webhooks',
    session: s,
    active: 'settings',
    body: html`${settingsHeader('webhooks', o)}
${
  autoDisabled.length
    ? notice(
        'error',
        html`<p><strong>${autoDisabled.length === 1 ? 'An endpoint was' : `${autoDisabled.length} endpoints were`} disabled automatically.</strong></p>
<ul>${autoDisabled.map((e) => html`<li><a href="/settings/webhooks/${segment(e.id)}">${e.url}</a>: ${REASON[e.disabled_reason!]}</li>`)}</ul>`,
        'alert',
      )
    : ''
}
<h2>Webhook endpoints</h2>
<p>Every change to your customers, carriers, locations, loads and market rates is sent to these endpoints as it commits, signed
(Standard Webhooks), retried for about three days when the receiver fails.</p>
${
  s.userRole === 'admin'
    ? html`<section class="card" aria-labelledby="add-endpoint-title">
  <h3 id="add-endpoint-title">Add an endpoint</h3>
  ${errorSummary(errors)}
  <form class="stack" method="post" action="/settings/webhooks" novalidate>
    ${csrfField(s.csrfToken)}
    ${endpointFormFields(values, errors)}
    <div><button type="submit">Add endpoint</button></div>
  </form>
</section>`
    : adminOnlyNote('add, test, disable, replay, rotate or delete webhook endpoints')
}
<h3>Endpoints</h3>
${
  endpoints.length
    ? html`<div class="table-wrap"><table>
  <caption>${endpoints.length} endpoint${endpoints.length === 1 ? '' : 's'}</caption>
  <thead><tr><th scope="col">URL</th><th scope="col">Event types</th><th scope="col">Status</th><th scope="col">Last delivery</th><th scope="col">Created</th></tr></thead>
  <tbody>${endpoints.map(
    (e) => html`<tr>
  <th scope="row" class="url"><a href="/settings/webhooks/${segment(e.id)}">${e.url}</a>${e.description ? html`<br><span class="hint">${e.description}</span>` : ''}</th>
  <td>${typesText(e.event_types)}</td>
  <td>${statusBadge(e)}</td>
  <td>${outcome(e.last_delivery)}</td>
  <td>${when(e.created_at)}</td>
</tr>`,
  )}</tbody>
</table></div>`
    : html`<p>No endpoints yet.</p>`
}`,
  });
}

/** The only time a secret is visible: right after the endpoint was added or its secret rotated. */
export function secretPage(s: DashboardSession, o: { title: string; secret: string; endpoint: { id: string; url: string }; intro: SafeHtml }): SafeHtml {
  return page({
    title: o.title,
    session: s,
    active: 'settings',
    body: html`<h1>${o.title}</h1>
${o.intro}
${notice('warn', html`<p><strong>Copy this signing secret now. It will not be shown again.</strong> If it is lost, rotate it.</p>`, 'alert')}
<div class="card">
  <label for="new-secret">Signing secret for ${o.endpoint.url}</label>
  <div class="key-box">
    <input id="new-secret" type="text" readonly value="${o.secret}" aria-describedby="copy-status" spellcheck="false" autocomplete="off">
    <button type="button" data-copy-target="new-secret" data-copy-status="copy-status">Copy secret</button>
  </div>
  <p id="copy-status" role="status" aria-live="polite"></p>
  <p>Verify the <code>webhook-signature</code> header of every request with it (docs/webhooks.md shows how, in Node and Python).</p>
</div>
<p><a class="button" href="/settings/webhooks/${segment(o.endpoint.id)}">I have copied the secret</a></p>`,
  });
}

function attemptRow(a: WebhookAttempt): SafeHtml {
  return html`<tr>
  <td class="num">${String(a.attempt)}</td>
  <td>${when(a.created_at)}</td>
  <td>${a.status === 'delivered' ? html`<span class="badge ok">Delivered</span>` : html`<span class="badge bad">Failed</span>`}</td>
  <td class="num">${a.response_status === null ? '—' : String(a.response_status)}</td>
  <td class="num">${a.duration_ms === null ? '—' : `${count(a.duration_ms)} ms`}</td>
  <td>${a.error ?? ''}</td>
  <td>${a.response_body ? html`<pre class="event-data">${a.response_body}</pre>` : '—'}</td>
  <td>${a.next_attempt_at ? when(a.next_attempt_at) : '—'}</td>
</tr>`;
}

/** Under a delivery's row: every attempt it took, newest first (folded away until opened). */
function attemptsRow(d: DeliveryWithAttempts): SafeHtml {
  if (d.attempts.length === 0) return html``;
  const n = d.attempts.length;
  return html`<tr class="attempts-row"><td colspan="9"><details><summary>${n === 1 ? '1 attempt' : `${n} attempts`}: each answer</summary>
  <table>
  <caption>Attempts to send <code>${d.event_id}</code>, newest first</caption>
  <thead><tr><th scope="col" class="num">Attempt</th><th scope="col">Started</th><th scope="col">Result</th><th scope="col" class="num">Response</th><th scope="col" class="num">Duration</th>
  <th scope="col">Error</th><th scope="col">Answer (first 2 KiB)</th><th scope="col">Retry at</th></tr></thead>
  <tbody>${d.attempts.map(attemptRow)}</tbody>
  </table></details></td></tr>`;
}

function deliveryRow(d: WebhookDelivery): SafeHtml {
  const badge =
    d.status === 'delivered'
      ? html`<span class="badge ok">Delivered</span>`
      : d.status === 'failed'
        ? html`<span class="badge bad">Failed</span>`
        : html`<span class="badge">Pending</span>`;
  return html`<tr>
  <td>${when(d.created_at)}</td>
  <td><code>${d.event_type}</code><br><span class="hint"><code>${d.event_id}</code></span></td>
  <td class="num">${d.sequence === 0 ? '—' : String(d.sequence)}</td>
  <td>${badge}</td>
  <td class="num">${String(d.attempt)}</td>
  <td class="num">${d.response_status === null ? '—' : String(d.response_status)}</td>
  <td class="num">${d.duration_ms === null ? '—' : `${count(d.duration_ms)} ms`}</td>
  <td>${d.error ?? ''}</td>
  <td>${d.next_attempt_at ? when(d.next_attempt_at) : '—'}</td>
</tr>`;
}

export async function endpointPage(
  ctx: { webhooks: WebhooksService },
  s: DashboardSession,
  id: string,
  o: { page?: number; done?: SafeHtml; replayError?: string; replayValue?: string } = {},
) {
  const e = await ctx.webhooks.detail(s.orgId, id);
  const log = await ctx.webhooks.deliveryLog(s.orgId, id, { page: o.page ?? 1, page_size: 25 });
  const path = `/settings/webhooks/${segment(e.id)}`;
  const replayErrors: FieldErrors = o.replayError ? { after_sequence: o.replayError } : {};
  return page({
    title: `Webhook endpoint ${e.url}`,
    session: s,
    active: 'settings',
    body: html`<h1>Webhook endpoint</h1>
<p><a href="/settings/webhooks">← All webhook endpoints</a></p>
${o.done ? notice('ok', o.done) : ''}
${e.disabled_reason === 'gone' || e.disabled_reason === 'failing' ? notice('error', html`<p><strong>Disabled automatically.</strong> ${REASON[e.disabled_reason]} (${utc(e.disabled_at)})</p><p>Fix the receiver, enable the endpoint, then replay what it missed.</p>`, 'alert') : ''}
<dl class="facts">
  <dt>URL</dt><dd><code>${e.url}</code></dd>
  <dt>Status</dt><dd>${statusBadge(e)}</dd>
  <dt>Event types</dt><dd>${typesText(e.event_types)}</dd>
  <dt>Description</dt><dd>${e.description || '—'}</dd>
  <dt>Created</dt><dd>${utc(e.created_at)}</dd>
  <dt>Signing secret</dt><dd>${e.previous_secret_until ? `Rotated: the previous secret also signs until ${utc(e.previous_secret_until)}` : 'One secret (shown only when it was made)'}</dd>
</dl>
${
  s.userRole === 'admin'
    ? html`<h2>Actions</h2>
<div class="actions">
  <form method="post" action="${path}/test">${csrfField(s.csrfToken)}<button type="submit">Send test event</button></form>
  <form method="post" action="${path}/status">${csrfField(s.csrfToken)}<input type="hidden" name="status" value="${e.status === 'enabled' ? 'disabled' : 'enabled'}"><button type="submit" class="secondary">${e.status === 'enabled' ? 'Disable' : 'Enable'}</button></form>
  <a class="button secondary" href="${path}/rotate">Rotate secret…</a>
  <a class="button secondary" href="${path}/delete">Delete…</a>
</div>
<p class="hint">The test event is a <code>webhook.test</code> envelope (sequence 0) signed like every delivery and sent once, without retries.</p>
<section class="card" aria-labelledby="replay-title">
  <h3 id="replay-title">Replay from sequence</h3>
  ${errorSummary(replayErrors)}
  <form class="stack" method="post" action="${path}/replay" novalidate>
    ${csrfField(s.csrfToken)}
    ${field({ name: 'after_sequence', label: 'Send again every event after sequence', hint: 'Events this endpoint was already sent (at most 10,000 per replay), oldest first, with their original webhook-id.', type: 'number', value: o.replayValue ?? '', errors: replayErrors, required: true, min: 0 })}
    <div><button type="submit">Replay events</button></div>
  </form>
</section>`
    : adminOnlyNote('test, disable, replay, rotate or delete this endpoint')
}
<h2>Delivery log</h2>
<p class="hint">One row per event sent (a replay adds one), newest first; every attempt it took is kept beneath it, with the receiver's answer. Kept as long as the events (EVENT_RETENTION_DAYS, 30 days by default).</p>
${
  log.items.length
    ? html`<div class="table-wrap"><table>
  <caption>Deliveries, newest first</caption>
  <thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col" class="num">Sequence</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th>
  <th scope="col" class="num">Response</th><th scope="col" class="num">Duration</th><th scope="col">Error</th><th scope="col">Next attempt</th></tr></thead>
  <tbody>${log.items.map((d) => html`${deliveryRow(d)}${attemptsRow(d)}`)}</tbody>
</table></div>
${pager(path, log.pagination, {}, 'deliveries')}`
    : html`<p>No deliveries yet.</p>`
}`,
  });
}

export function confirmPage(s: DashboardSession, e: EndpointOverview, action: 'rotate' | 'delete'): SafeHtml {
  const rotate = action === 'rotate';
  return page({
    title: rotate ? 'Rotate signing secret' : 'Delete endpoint',
    session: s,
    active: 'settings',
    narrow: true,
    body: html`<h1>${rotate ? 'Rotate the signing secret?' : 'Delete this endpoint?'}</h1>
<p><code>${e.url}</code></p>
${
  rotate
    ? html`<p>A new secret is made and shown once. For 24 hours every delivery carries two signatures, one with each secret, so your receiver can switch without losing events.</p>`
    : html`<p>No more events are sent to it, and its delivery log is deleted. This cannot be undone.</p>`
}
${
  s.userRole === 'admin'
    ? html`<form method="post" action="/settings/webhooks/${segment(e.id)}/${action}" class="actions">
  ${csrfField(s.csrfToken)}
  <button type="submit"${rotate ? '' : html` class="danger"`}>${rotate ? 'Rotate secret' : 'Delete endpoint'}</button>
  <a class="button secondary" href="/settings/webhooks/${segment(e.id)}">Cancel</a>
</form>`
    : html`${adminOnlyNote(rotate ? 'rotate an endpoint’s signing secret' : 'delete an endpoint')}<p><a href="/settings/webhooks/${segment(e.id)}">← Back to the endpoint</a></p>`
}`,
  });
}
