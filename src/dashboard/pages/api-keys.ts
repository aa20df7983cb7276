import type { FastifyInstance } from 'fastify';
import { ConflictError, ValidationError } from '../../lib/http/errors.js';
import { DEFAULT_PER_DAY, DEFAULT_PER_MINUTE, MAX_GRACE_HOURS, MAX_LIMIT, parseExpiry, type KeySummary } from '../../modules/accounts/accounts.service.js';
import { SCOPES, isScope, type Scope } from '../../modules/accounts/scopes.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { actorOf, checkSessionCsrf, formList, formText, requireSession, sendPage, type DashboardContext } from '../context.js';
import { count, utc } from '../format.js';
import { html, segment, type SafeHtml } from '../html.js';
import { adminOnlyNote, csrfField, errorSummary, field, notice, page, settingsTabs, when, type FieldErrors } from '../layout.js';
import { fieldErrorsOf } from './auth.js';

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

const DONE: Record<string, string> = {
  connected: 'The TMS API integration is connected. You can now create API keys.',
  revoked: 'The key is revoked. Requests that use it are refused from now on.',
  limits: 'The limits are saved. They apply from the key’s next request.',
};

interface KeyForm {
  name: string;
  external_system: string;
  scopes: string[];
  per_minute: string;
  per_day: string;
  expires_at: string;
  strict?: boolean;
}

function parseLimit(text: string, field: string, label: string, errors: FieldErrors): number {
  const t = text.trim();
  const n = /^\d{1,10}$/.test(t) ? Number(t) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) errors[field] = `${label} must be a whole number from 1 to ${count(MAX_LIMIT)}.`;
  return n;
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

async function keysPage(
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
    body: html`<h1>Settings</h1>
${settingsTabs('api-keys')}
${o.done ? notice('ok', html`<p>${o.done}</p>`) : ''}
${o.refused ? notice('error', html`<p>${o.refused}</p>`, 'alert') : ''}
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
function newKeyPage(s: DashboardSession, o: { title: string; key: string; summary: KeySummary; intro: SafeHtml }): SafeHtml {
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

function confirmPage(s: DashboardSession, k: KeySummary, o: { action: 'rotate' | 'revoke'; graceHours?: string; error?: string }): SafeHtml {
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

function limitsPage(s: DashboardSession, k: KeySummary, values: { per_minute: string; per_day: string; strict: boolean }, errors: FieldErrors = {}): SafeHtml {
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

const keyIdOf = (params: unknown) => String((params as { id?: string }).id ?? '');

export function apiKeyRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const { accounts } = ctx.services;

  app.get('/settings/api-keys', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    return sendPage(reply, await keysPage(ctx, s, { done: DONE[(req.query as Record<string, string | undefined>).done ?? ''] }));
  });

  app.post('/settings/api-keys', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    const values: KeyForm = {
      name: formText(req.body, 'name').trim(),
      external_system: formText(req.body, 'external_system').trim(),
      scopes: formList(req.body, 'scopes'),
      per_minute: formText(req.body, 'per_minute'),
      per_day: formText(req.body, 'per_day'),
      expires_at: formText(req.body, 'expires_at').trim(),
      strict: formText(req.body, 'strict') === 'on',
    };
    const errors: FieldErrors = {};
    if (!values.name) errors.name = 'Enter a name for the key.';
    else if (values.name.length > 255) errors.name = 'Use at most 255 characters for the name.';
    if (!values.external_system) errors.external_system = 'Enter the external system’s name.';
    else if (values.external_system.length > 255) errors.external_system = 'Use at most 255 characters for the system name.';
    const scopes = [...new Set(values.scopes)].filter(isScope);
    if (scopes.length === 0 || scopes.length !== new Set(values.scopes).size) errors.scopes = 'Choose at least one scope.';
    const perMinute = parseLimit(values.per_minute, 'per_minute', 'Requests per minute', errors);
    const perDay = parseLimit(values.per_day, 'per_day', 'Requests per day', errors);
    let expiresAt: string | undefined;
    if (values.expires_at) {
      try {
        expiresAt = parseExpiry(values.expires_at, ctx.clock.now());
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        errors.expires_at = `${err.issues[0]?.msg ?? 'Enter a date in the future'}.`;
      }
    }
    if (Object.keys(errors).length) return sendPage(reply, await keysPage(ctx, s, { values, errors }), 422);
    try {
      const created = await accounts.createKey(
        s.orgId,
        {
          name: values.name,
          externalSystem: values.external_system,
          scopes: SCOPES.filter((sc) => scopes.includes(sc)),
          perMinute,
          perDay,
          strict: values.strict === true,
          ...(expiresAt ? { expiresAt } : {}),
        },
        { connectIntegration: false },
        actorOf(req, s),
      );
      const summary = await accounts.getKey(s.orgId, created.id);
      return sendPage(
        reply,
        newKeyPage(s, { title: 'API key created', key: created.key, summary, intro: html`<p>The key “${summary.name}” is active now.</p>` }),
      );
    } catch (err) {
      if (err instanceof ConflictError) return sendPage(reply, await keysPage(ctx, s, { values, message: err.detail }), 409);
      if (err instanceof ValidationError) {
        return sendPage(
          reply,
          await keysPage(ctx, s, {
            values,
            errors: fieldErrorsOf(err, {
              name: 'name',
              external_system: 'external_system',
              per_minute: 'per_minute',
              per_day: 'per_day',
              expires_at: 'expires_at',
            }),
          }),
          422,
        );
      }
      throw err;
    }
  });

  for (const action of ['rotate', 'revoke'] as const) {
    app.get(`/settings/api-keys/:id/${action}`, async (req, reply) => {
      const s = requireSession(req, reply);
      if (!s) return reply;
      const k = await accounts.getKey(s.orgId, keyIdOf(req.params));
      if (k.status !== 'active') return reply.redirect('/settings/api-keys', 303);
      return sendPage(reply, confirmPage(s, k, { action }));
    });
  }

  app.post('/settings/api-keys/:id/revoke', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    await accounts.revokeKey(s.orgId, keyIdOf(req.params), actorOf(req, s));
    return reply.redirect('/settings/api-keys?done=revoked', 303);
  });

  app.post('/settings/api-keys/:id/rotate', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    const old = await accounts.getKey(s.orgId, keyIdOf(req.params));
    // Sent twice (a second tab, the back button): said, as the command line says it.
    if (old.replaced_by_key_id)
      return sendPage(
        reply,
        await keysPage(ctx, s, { refused: `Key “${old.name}” (${old.key_prefix}…) was rotated already: rotate its replacement instead.` }),
        409,
      );
    if (old.status !== 'active')
      return sendPage(
        reply,
        await keysPage(ctx, s, { refused: `Key “${old.name}” (${old.key_prefix}…) is ${old.status}: only an active key can be rotated.` }),
        409,
      );
    const graceText = formText(req.body, 'grace_hours').trim() || '0';
    const graceHours = /^\d{1,4}$/.test(graceText) ? Number(graceText) : NaN;
    if (!Number.isInteger(graceHours) || graceHours > MAX_GRACE_HOURS) {
      return sendPage(
        reply,
        confirmPage(s, old, {
          action: 'rotate',
          graceHours: graceText,
          error: `The grace period must be a whole number of hours from 0 to ${MAX_GRACE_HOURS}.`,
        }),
        422,
      );
    }
    const rotated = await accounts.rotateKey(s.orgId, old.id, { graceHours }, actorOf(req, s));
    const summary = await accounts.getKey(s.orgId, rotated.id);
    return sendPage(
      reply,
      newKeyPage(s, {
        title: 'API key rotated',
        key: rotated.key,
        summary,
        intro: rotated.old_key.works_until
          ? html`<p>The old key (<code>${old.key_prefix}…</code>) keeps working until ${utc(rotated.old_key.works_until)}, then it is refused. Its replacement is below.</p>`
          : html`<p>The old key (<code>${old.key_prefix}…</code>) is revoked. Its replacement is below.</p>`,
      }),
    );
  });

  app.get('/settings/api-keys/:id/limits', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const k = await accounts.getKey(s.orgId, keyIdOf(req.params));
    if (k.status !== 'active') return reply.redirect('/settings/api-keys', 303);
    return sendPage(reply, limitsPage(s, k, { per_minute: String(k.per_minute), per_day: String(k.per_day), strict: k.strict }));
  });

  app.post('/settings/api-keys/:id/limits', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    const k = await accounts.getKey(s.orgId, keyIdOf(req.params));
    const values = { per_minute: formText(req.body, 'per_minute'), per_day: formText(req.body, 'per_day'), strict: formText(req.body, 'strict') === 'on' };
    const errors: FieldErrors = {};
    const perMinute = parseLimit(values.per_minute, 'per_minute', 'Requests per minute', errors);
    const perDay = parseLimit(values.per_day, 'per_day', 'Requests per day', errors);
    if (Object.keys(errors).length) return sendPage(reply, limitsPage(s, k, values, errors), 422);
    await accounts.updateKeyLimits(s.orgId, k.id, { perMinute, perDay }, actorOf(req, s));
    if (values.strict !== k.strict) await accounts.setKeyStrict(s.orgId, k.id, values.strict, actorOf(req, s));
    return reply.redirect('/settings/api-keys?done=limits', 303);
  });
}
