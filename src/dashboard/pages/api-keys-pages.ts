import { DEFAULT_PER_DAY, DEFAULT_PER_MINUTE, MAX_GRACE_HOURS, MAX_LIMIT, type KeySummary } from '../../modules/accounts/accounts.service.js';
import { SCOPES, type Scope } from '../../modules/accounts/scopes.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { type DashboardContext } from '../context.js';
import { count, utc } from '../format.js';
import { html, segment, type SafeHtml } from '../html.js';
import { adminOnlyNote, csrfField, errorSummary, field, notice, page, settingsHeader, when, type FieldErrors } from '../layout.js';

/** The pages of Settings → API Keys; apiKeyRoutes (api-keys.ts) reads the forms and answers with them. */
const SCOPE_TEXT: Record<Scope, string> = {
  'read:locations': 'read locations',
  'write:locations': 'create and update locations',
  'read:loads': 'read loads',
  'write:loads': 'create and update loads',
  'read:carriers': 'read carriers',
  'write:carriers': 'create and update carriers',
  'read:customers': 'read customers',
  'write:customers': 'create and update customers',
  'write:rates': 'create market rate snapshots',
  'write:webhooks': 'manage webhook endpoints and their deliveries',
  'write:imports': 'run imports of history files and read their progress and errors',
  'read:audit': 'read the audit log',
};

export interface KeyForm {
  name: string;
  external_system: string;
  scopes: string[];
  per_minute: string;
  per_day: string;
  expires_at: string;
  strict?: boolean;
}

function scopeList(scopes: readonly string[]): SafeHtml {
  return html`<ul class="chips">${scopes.map((sc) => html`<li><code>${sc}</code></li>`)}</ul>`;
}

const strictCheckbox = (checked: boolean) => html`<div class="checks"><label><input type="checkbox" name="strict" value="on"${checked ? html` checked` : ''}>
    <span>Strict handling <span class="hint">Refuse requests that send a field the API does not know (422 naming it) instead of ignoring it, as <code>Prefer: handling=strict</code> does.</span></span></label></div>`;

function keyFormFields(values: KeyForm, errors: FieldErrors): SafeHtml {
  const scopeError = errors.scopes;
  return html`${field({ name: 'name', label: 'Name', hint: 'What the key is for, e.g. “Production TMS sync”.', value: values.name, errors, required: true, maxlength: 255 })}
  ${field({ name: 'external_system', label: 'External system', hint: 'The system that will use the key, e.g. “McLeod LoadMaster”.', value: values.external_system, errors, required: true, maxlength: 255 })}
  <fieldset id="f-scopes"${scopeError ? html` aria-describedby="f-scopes-error"` : ''}>
    <legend>Scopes</legend>
    ${scopeError ? html`<span class="field-error" id="f-scopes-error">${scopeError}</span>` : ''}
    <div class="checks">
    ${SCOPES.map(
      (sc) => html`<label><input type="checkbox" name="scopes" value="${sc}"${values.scopes.includes(sc) ? html` checked` : ''}>
      <span><code>${sc}</code> <span class="hint">${SCOPE_TEXT[sc]}</span></span></label>`,
    )}
    </div>
  </fieldset>
  <div class="two">
    ${field({ name: 'per_minute', label: 'Requests per minute', type: 'number', value: values.per_minute, errors, required: true, min: 1, max: MAX_LIMIT })}
    ${field({ name: 'per_day', label: 'Requests per day', type: 'number', value: values.per_day, errors, required: true, min: 1, max: MAX_LIMIT })}
  </div>
  ${strictCheckbox(values.strict === true)}
  ${field({ name: 'expires_at', label: 'Expires (optional)', value: values.expires_at, errors, maxlength: 40, hint: 'A UTC date (2027-01-31) or time (2027-01-31T17:00:00Z) after which the key is refused (401, saying it expired). Empty: it never expires.' })}`;
}

function keyStatus(k: KeySummary): SafeHtml {
  if (k.status === 'revoked') return html`<span class="badge bad">Revoked</span><br>${when(k.revoked_at)}`;
  if (k.status === 'expired') return html`<span class="badge bad">${k.replaced_by_key_id ? 'Rotated' : 'Expired'}</span><br>${when(k.expires_at)}`;
  if (k.replaced_by_key_id) return html`<span class="badge warn">Rotated: works until</span><br>${when(k.expires_at)}`;
  return html`<span class="badge ok">Active</span>${k.expires_at ? html`<br>expires ${when(k.expires_at)}` : ''}`;
}

function keyRow(k: KeySummary, withActions: boolean): SafeHtml {
  const path = `/settings/api-keys/${segment(k.id)}`;
  const hidden = html`<span class="visually-hidden"> key ${k.name}</span>`;
  return html`<tr>
  <th scope="row">${k.name}</th>
  <td>${k.external_system}</td>
  <td><code>${k.key_prefix}…</code></td>
  <td>${scopeList(k.scopes)}</td>
  <td class="num nowrap">${count(k.per_minute)} / min<br>${count(k.per_day)} / day${k.strict ? html`<br><span class="badge">strict</span>` : ''}</td>
  <td>${when(k.created_at)}</td>
  <td>${k.last_used_at ? when(k.last_used_at) : 'never'}</td>
  <td>${keyStatus(k)}</td>
  ${
    withActions
      ? html`<td><div class="actions column">
    <a class="button small secondary" href="${path}/limits">Edit limits${hidden}</a>
    ${k.replaced_by_key_id ? '' : html`<a class="button small secondary" href="${path}/rotate">Rotate…${hidden}</a>`}
    <a class="button small secondary" href="${path}/revoke">Revoke…${hidden}</a></div></td>`
      : ''
  }
</tr>`;
}

function keysTable(keys: KeySummary[], caption: string, withActions: boolean): SafeHtml {
  return html`<div class="table-wrap"><table>
  <caption>${caption}</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">System</th><th scope="col">Key prefix</th><th scope="col">Scopes</th>
  <th scope="col" class="num">Limits</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th>${withActions ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
  <tbody>${keys.map((k) => keyRow(k, withActions))}</tbody>
</table></div>`;
}

export async function keysPage(
  ctx: DashboardContext,
  s: DashboardSession,
  o: { values?: KeyForm; errors?: FieldErrors; done?: string; message?: string; refused?: string } = {},
) {
  const { accounts } = ctx.services;
  const [connected, keys] = await Promise.all([accounts.isIntegrationConnected(s.orgId), accounts.listKeys(s.orgId)]);
  const active = keys.filter((k) => k.status === 'active').reverse();
  const revoked = keys.filter((k) => k.status !== 'active').reverse();
  const admin = s.userRole === 'admin';
  const values: KeyForm = o.values ?? {
    name: '',
    external_system: '',
    scopes: [],
    per_minute: String(DEFAULT_PER_MINUTE),
    per_day: String(DEFAULT_PER_DAY),
    expires_at: '',
  };
  const errors = o.errors ?? {};
  return page({
    title: 'API Keys',
    session: s,
    active: 'settings',
    body: html`${settingsHeader('api-keys', o)}
<h2>API Keys of the TMS API integration</h2>
${
  !admin
    ? adminOnlyNote('create, rotate or revoke API keys or change their limits')
    : connected
      ? html`<section class="card" aria-labelledby="create-key-title">
  <h3 id="create-key-title">Create an API key</h3>
  ${errorSummary(errors, o.message)}
  <form class="stack" method="post" action="/settings/api-keys" novalidate>
    ${csrfField(s.csrfToken)}
    ${keyFormFields(values, errors)}
    <div><button type="submit">Create key</button></div>
  </form>
</section>`
      : html`${o.message ? notice('error', html`<p>${o.message}.</p>`, 'alert') : ''}${notice(
          'warn',
          html`<p>API keys can be created once the TMS API integration is connected.</p>
<p><a href="/settings/integrations">Go to TMS Integrations and add the integration</a></p>`,
        )}`
}
<h3>Active keys</h3>
${active.length ? keysTable(active, `${active.length} active key${active.length === 1 ? '' : 's'}`, admin) : html`<p>No active keys yet.</p>`}
${revoked.length ? html`<h3>Revoked keys</h3>${keysTable(revoked, `${revoked.length} revoked or expired key${revoked.length === 1 ? '' : 's'}`, false)}` : ''}`,
  });
}

/** The only time a key is visible: right after it was created or rotated. */
export function newKeyPage(s: DashboardSession, o: { title: string; key: string; summary: KeySummary; intro: SafeHtml }): SafeHtml {
  return page({
    title: o.title,
    session: s,
    active: 'settings',
    body: html`<h1>${o.title}</h1>
${o.intro}
${notice('warn', html`<p><strong>Copy this key now. It will not be shown again.</strong> Lanebridge keeps only a hash of it; if it is lost, rotate the key.</p>`, 'alert')}
<div class="card">
  <label for="new-key">API key “${o.summary.name}”</label>
  <div class="key-box">
    <input id="new-key" type="text" readonly value="${o.key}" aria-describedby="copy-status" spellcheck="false" autocomplete="off">
    <button type="button" data-copy-target="new-key" data-copy-status="copy-status">Copy key</button>
  </div>
  <p id="copy-status" role="status" aria-live="polite"></p>
  <p>Send it in the <code>X-API-Key</code> header of every request to <code>/v2/tms-api</code>.</p>
  <dl class="facts">
    <dt>External system</dt><dd>${o.summary.external_system}</dd>
    <dt>Scopes</dt><dd>${o.summary.scopes.join(', ')}</dd>
    <dt>Limits</dt><dd>${count(o.summary.per_minute)} requests per minute, ${count(o.summary.per_day)} per day</dd>
  </dl>
</div>
<p><a class="button" href="/settings/api-keys">I have copied the key</a></p>`,
  });
}

export function confirmPage(s: DashboardSession, k: KeySummary, o: { action: 'rotate' | 'revoke'; graceHours?: string; error?: string }): SafeHtml {
  const rotate = o.action === 'rotate';
  const title = rotate ? `Rotate key “${k.name}”?` : `Revoke key “${k.name}”?`;
  return page({
    title: rotate ? 'Rotate key' : 'Revoke key',
    session: s,
    active: 'settings',
    narrow: true,
    body: html`<h1>${title}</h1>
<dl class="facts">
  <dt>External system</dt><dd>${k.external_system}</dd>
  <dt>Key prefix</dt><dd><code>${k.key_prefix}…</code></dd>
  <dt>Last used</dt><dd>${k.last_used_at ? utc(k.last_used_at) : 'never'}</dd>
</dl>
${
  rotate
    ? html`<p>A new key with the same name, system, scopes, limits and expiry is created and shown once.
  The current key stops working after the grace period below: with 0 hours, <strong>immediately</strong>; give your system that long to switch to the new key.</p>`
    : html`<p>Requests that use this key are refused (401) from the next request on. This cannot be undone.</p>`
}
${o.error ? notice('error', html`<p>${o.error}</p>`, 'alert') : ''}
${
  s.userRole !== 'admin'
    ? html`${adminOnlyNote(rotate ? 'rotate an API key' : 'revoke an API key')}<p><a href="/settings/api-keys">← All API keys</a></p>`
    : html`<form method="post" action="/settings/api-keys/${segment(k.id)}/${o.action}" class="${rotate ? 'stack' : 'actions'}">
  ${csrfField(s.csrfToken)}
  ${rotate ? field({ name: 'grace_hours', label: 'Grace period (hours)', type: 'number', value: o.graceHours ?? '0', min: 0, max: MAX_GRACE_HOURS, hint: `How long the current key keeps working beside the new one, 0 to ${MAX_GRACE_HOURS} hours.` }) : ''}
  <button type="submit"${rotate ? '' : html` class="danger"`}>${rotate ? 'Rotate key' : 'Revoke key'}</button>
  <a class="button secondary" href="/settings/api-keys">Cancel</a>
</form>`
}`,
  });
}

export function limitsPage(
  s: DashboardSession,
  k: KeySummary,
  values: { per_minute: string; per_day: string; strict: boolean },
  errors: FieldErrors = {},
): SafeHtml {
  return page({
    title: 'Edit limits',
    session: s,
    active: 'settings',
    narrow: true,
    body: html`<h1>Limits of key “${k.name}”</h1>
${
  s.userRole !== 'admin'
    ? html`${adminOnlyNote('change an API key’s limits or handling')}<dl class="facts"><dt>Requests per minute</dt><dd>${values.per_minute}</dd><dt>Requests per day</dt><dd>${values.per_day}</dd><dt>Strict handling</dt><dd>${values.strict ? 'on' : 'off'}</dd></dl><p><a href="/settings/api-keys">← All API keys</a></p>`
    : html`${errorSummary(errors)}
<form class="stack" method="post" action="/settings/api-keys/${segment(k.id)}/limits" novalidate>
  ${csrfField(s.csrfToken)}
  ${field({ name: 'per_minute', label: 'Requests per minute', type: 'number', value: values.per_minute, errors, required: true, min: 1, max: MAX_LIMIT })}
  ${field({ name: 'per_day', label: 'Requests per day', type: 'number', value: values.per_day, errors, required: true, min: 1, max: MAX_LIMIT })}
  ${strictCheckbox(values.strict)}
  <div class="actions"><button type="submit">Save limits</button><a class="button secondary" href="/settings/api-keys">Cancel</a></div>
</form>`
}`,
  });
}
