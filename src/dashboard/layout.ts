import { RECORD_KINDS, type ReferencedRecordKind } from '../domain/records.js';
import type { DashboardSession } from '../modules/accounts/sessions.js';
import { cssHref, jsHref } from './assets.js';
import { utc } from './format.js';
import { html, href, type SafeHtml } from './html.js';

export type NavKey = 'home' | 'loads' | 'locations' | 'carriers' | 'customers' | 'lanes' | 'events' | 'imports' | 'users' | 'settings';

/** A record kind's menu entry: its list page, headed by its plural (src/domain/records.ts). */
const recordNav = (kind: ReferencedRecordKind): [NavKey, string, string] => [kind, `/${RECORD_KINDS[kind].collection}`, RECORD_KINDS[kind].plural];

const NAV: [NavKey, string, string][] = [
  ['home', '/', 'Overview'],
  recordNav('loads'),
  recordNav('locations'),
  recordNav('carriers'),
  recordNav('customers'),
  ['lanes', '/lanes', 'Lanes'],
  ['events', '/events', 'Events'],
  ['imports', '/imports', 'Imports'],
  ['users', '/users', 'Users'],
  ['settings', '/settings/integrations', 'Settings'],
];

export interface PageOptions {
  title: string;
  body: SafeHtml;
  session?: DashboardSession | null;
  active?: NavKey;
  /** Forms on their own (sign-in, first run) read better in a narrow column. */
  narrow?: boolean;
  /** Reload the page every this many seconds (a page following a running job: the Imports page). */
  refreshSeconds?: number;
}

export function page(o: PageOptions): SafeHtml {
  const s = o.session ?? null;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Lanebridge</title>
${o.refreshSeconds ? html`<meta http-equiv="refresh" content="${String(o.refreshSeconds)}">` : ''}
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${cssHref}">
<script src="${jsHref}" defer></script>
</head>
<body>
<a class="skip-link" href="#content">Skip to content</a>
<header class="site">
  <div class="bar">
    <a class="brand" href="/">Lanebridge${s ? html` <span class="visually-hidden">dashboard of</span> · ${s.orgName}` : ''}</a>
    ${
      s
        ? html`<span class="who">Signed in as ${s.userName} (${s.userRole}) · <a href="/account/password">Your password</a></span>
    <form method="post" action="/signout">${csrfField(s.csrfToken)}<button type="submit">Sign out</button></form>`
        : ''
    }
  </div>
</header>
${
  s
    ? html`<nav class="main" aria-label="Main">
  <ul>${NAV.map(([key, path, label]) => html`<li><a href="${path}"${key === o.active ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul>
</nav>`
    : ''
}
<main id="content" tabindex="-1"${o.narrow ? html` class="narrow"` : ''}>
${o.body}
</main>
</body>
</html>
`;
}

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

export type FieldErrors = Record<string, string>;

export interface FieldOptions {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password' | 'number' | 'search';
  value?: string | number | null;
  hint?: string;
  errors?: FieldErrors;
  required?: boolean;
  autocomplete?: string;
  min?: number;
  max?: number;
  maxlength?: number;
}

/** A labelled input; its hint and error are tied to it with aria-describedby. */
export function field(o: FieldOptions): SafeHtml {
  const id = `f-${o.name}`;
  const error = o.errors?.[o.name];
  const described = [o.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div>
  <label for="${id}">${o.label}</label>
  ${o.hint ? html`<span class="hint" id="${id}-hint">${o.hint}</span>` : ''}
  ${error ? html`<span class="field-error" id="${id}-error">${error}</span>` : ''}
  <input id="${id}" name="${o.name}" type="${o.type ?? 'text'}"${o.value !== undefined && o.value !== null ? html` value="${String(o.value)}"` : ''}${
    o.required ? html` required` : ''
  }${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${o.min !== undefined ? html` min="${o.min}"` : ''}${
    o.max !== undefined ? html` max="${o.max}"` : ''
  }${o.maxlength !== undefined ? html` maxlength="${o.maxlength}"` : ''}${described ? html` aria-describedby="${described}"` : ''}${
    error ? html` aria-invalid="true"` : ''
  }>
</div>`;
}

/** The problems of a submitted form, each linking to its field (read first by screen readers). */
export function errorSummary(errors: FieldErrors | undefined, message?: string): SafeHtml {
  const entries = Object.entries(errors ?? {});
  if (entries.length === 0 && !message) return html``;
  return html`<div class="notice error" role="alert">
  <p><strong>${message ?? 'Please correct the following:'}</strong></p>
  ${entries.length ? html`<ul>${entries.map(([name, msg]) => html`<li><a href="#f-${name}">${msg}</a></li>`)}</ul>` : ''}
</div>`;
}

export function notice(kind: 'ok' | 'warn' | 'error' | 'info', body: SafeHtml | string, role: 'status' | 'alert' = 'status'): SafeHtml {
  return html`<div class="notice ${kind === 'info' ? '' : kind}" role="${role}">${body}</div>`;
}

export interface PageInfo {
  page: number;
  total_pages: number;
  total: number;
}

/** Previous / next links that keep the list's filters. */
export function pager(path: string, p: PageInfo, query: Record<string, string | undefined>, noun: string): SafeHtml {
  if (p.total === 0) return html``;
  const link = (n: number) => href(path, { ...query, page: n === 1 ? undefined : n });
  return html`<nav class="pager" aria-label="Pages of ${noun}">
  ${p.page > 1 ? html`<a href="${link(p.page - 1)}" rel="prev">← Previous page</a>` : ''}
  <span>Page ${p.page} of ${Math.max(p.total_pages, 1)} · ${p.total} ${p.total === 1 ? noun.replace(/s$/, '') : noun}</span>
  ${p.page < p.total_pages ? html`<a href="${link(p.page + 1)}" rel="next">Next page →</a>` : ''}
</nav>`;
}

export function settingsTabs(active: 'integrations' | 'api-keys' | 'webhooks' | 'recommendations' | 'audit-log'): SafeHtml {
  const tab = (key: string, path: string, label: string) => html`<li><a href="${path}"${key === active ? html` aria-current="page"` : ''}>${label}</a></li>`;
  return html`<nav class="tabs" aria-label="Settings"><ul>
  ${tab('integrations', '/settings/integrations', 'TMS Integrations')}
  ${tab('api-keys', '/settings/api-keys', 'API Keys')}
  ${tab('webhooks', '/settings/webhooks', 'Webhooks')}
  ${tab('recommendations', '/settings/recommendations', 'Recommendations')}
  ${tab('audit-log', '/settings/audit-log', 'Audit log')}
</ul></nav>`;
}

/** What a member sees in place of an admin's form: the server refuses the change anyway. */
export function adminOnlyNote(what: string): SafeHtml {
  return notice('info', html`<p>Only an admin of your organization can ${what}. You are a member: you can read everything here.</p>`);
}

/** A UTC time that wraps between date and time only (narrow table columns). */
export function when(iso: string | null | undefined): SafeHtml {
  const text = utc(iso);
  const cut = text.indexOf(' ');
  if (cut < 0) return html`${text}`;
  return html`<span class="nowrap">${text.slice(0, cut)}</span> <span class="nowrap">${text.slice(cut + 1)}</span>`;
}

/** The top of a Settings tab: its heading, the tabs, and what the last form post did or refused. */
export function settingsHeader(tab: Parameters<typeof settingsTabs>[0], o: { done?: string; refused?: string }): SafeHtml {
  return html`<h1>Settings</h1>
${settingsTabs(tab)}
${o.done ? notice('ok', html`<p>${o.done}</p>`) : ''}
${o.refused ? notice('error', html`<p>${o.refused}</p>`, 'alert') : ''}`;
}
