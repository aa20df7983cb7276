import type { DashboardContext } from '../context.js';
import { stackedBars } from '../charts.js';
import { count, utc } from '../format.js';
import { href, html, type SafeHtml } from '../html.js';
import type { FailedWriteCursor, UsageRecorder } from '../../modules/ops/usage.service.js';
import { API_DOCS } from './records.js';

/**
 * Integration health on the Overview (issue 19): requests and errors per day, the last request of
 * each key, requests per hour per key (2xx / 4xx / 5xx / 429) over 7 days, and the failed writes of
 * the last 7 days with their reference, status and detail.
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const DAYS = 7;
/** Failed writes a page of the Overview (newest first; older and newer pages by keyset). */
export const FAILED_SHOWN = 10;
const IGNORED_SHOWN = 100;

function detailSummary(detail: string): string {
  try {
    const parsed = JSON.parse(detail) as unknown;
    if (Array.isArray(parsed)) {
      return parsed.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg ?? ''}`).join('; ');
    }
    return typeof parsed === 'string' ? parsed : detail;
  } catch {
    return detail;
  }
}

/** `2026-11-27T04:00:00.000Z~<id>`: a failed write's place, as the Overview's page links carry it. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z)~([A-Za-z0-9_-]{1,64})$/;
const cursorText = (c: FailedWriteCursor) => `${c.occurred_at}~${c.id}`;

function cursorParam(query: unknown, name: string): FailedWriteCursor | undefined {
  const v = (query as Record<string, unknown> | undefined)?.[name];
  const first = Array.isArray(v) ? v[0] : v;
  const m = typeof first === 'string' ? CURSOR.exec(first.trim()) : null;
  return m ? { occurred_at: m[1]!, id: m[2]! } : undefined;
}

/** The Overview's query (`failed_before` / `failed_after`): which page of failed writes; anything malformed is the newest. */
export function failedWritesPage(query: unknown): { before?: FailedWriteCursor; after?: FailedWriteCursor } {
  const after = cursorParam(query, 'failed_after');
  if (after) return { after };
  const before = cursorParam(query, 'failed_before');
  return before ? { before } : {};
}

/** Newer and older pages of failed writes, by the first and last row shown (stable while new failures arrive). */
function failedPager(failed: { rows: FailedWriteCursor[]; total: number; newer: number }): SafeHtml | string {
  const first = failed.rows[0];
  const last = failed.rows[failed.rows.length - 1];
  const hasOlder = failed.newer + failed.rows.length < failed.total;
  if (!first || !last || (failed.newer === 0 && !hasOlder)) return '';
  const link = (q: Record<string, string>) => `${href('/', q)}#failed-writes-title`;
  return html`<nav class="pager" aria-label="Pages of failed writes">
  ${failed.newer > FAILED_SHOWN ? html`<a href="/#failed-writes-title">« Newest</a>` : ''}
  ${failed.newer > 0 ? html`<a href="${link({ failed_after: cursorText(first) })}" rel="prev">← Newer failed writes</a>` : ''}
  <span>${count(failed.newer + 1)}–${count(failed.newer + failed.rows.length)} of ${count(failed.total)}</span>
  ${hasOlder ? html`<a href="${link({ failed_before: cursorText(last) })}" rel="next">Older failed writes →</a>` : ''}
</nav>`;
}

type Hourly = Awaited<ReturnType<UsageRecorder['hourly']>>;
type FailedWrites = Awaited<ReturnType<UsageRecorder['failedWrites']>>;
type IgnoredFields = Awaited<ReturnType<UsageRecorder['ignoredFields']>>;
type UsageKey = Awaited<ReturnType<DashboardContext['services']['insights']['usageKeys']>>[number];
type KeyUsage = { last: string; series: number[][]; total: number };
type DayTotals = { ok: number; client: number; server: number; limited: number };

/** The hourly counts summed per day, and per key and hour by outcome (2xx / 4xx / 5xx / 429). */
function tally(hourly: Hourly, firstDay: number, firstHour: number) {
  const days = Array.from({ length: DAYS }, (_, i) => firstDay + i * DAY);
  const perDay = days.map(() => ({ ok: 0, client: 0, server: 0, limited: 0 }));
  const byKey = new Map<string, KeyUsage>();
  for (const h of hourly) {
    const t = Date.parse(h.hour);
    const d = Math.floor((t - firstDay) / DAY);
    if (d >= 0 && d < DAYS) {
      perDay[d]!.ok += Number(h.ok);
      perDay[d]!.client += Number(h.client_errors);
      perDay[d]!.server += Number(h.server_errors);
      perDay[d]!.limited += Number(h.rate_limited);
    }
    let k = byKey.get(h.key_id);
    if (!k) {
      k = { last: h.last_request_at, series: [0, 1, 2, 3].map(() => Array<number>(DAYS * 24).fill(0)), total: 0 };
      byKey.set(h.key_id, k);
    }
    if (h.last_request_at > k.last) k.last = h.last_request_at;
    const i = Math.round((t - firstHour) / HOUR);
    if (i >= 0 && i < DAYS * 24) {
      k.series[0]![i]! += Number(h.ok);
      k.series[1]![i]! += Number(h.client_errors);
      k.series[2]![i]! += Number(h.server_errors);
      k.series[3]![i]! += Number(h.rate_limited);
    }
    k.total += Number(h.ok) + Number(h.client_errors) + Number(h.server_errors) + Number(h.rate_limited);
  }
  return { days, perDay, byKey };
}

function requestsPerDay(days: number[], perDay: DayTotals[]): SafeHtml {
  const dayLabel = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return html`<div class="table-wrap"><table aria-labelledby="health-title" id="requests-per-day">
  <caption>Requests and errors per day</caption>
  <thead><tr><th scope="col">Day</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Succeeded (2xx)</th><th scope="col" class="num">Client errors (4xx)</th><th scope="col" class="num">Server errors (5xx)</th><th scope="col" class="num">Rate limited (429)</th></tr></thead>
  <tbody>${days.map((d, i) => {
    const p = perDay[i]!;
    return html`<tr><th scope="row">${dayLabel(d)}</th><td class="num">${count(p.ok + p.client + p.server + p.limited)}</td><td class="num">${count(p.ok)}</td><td class="num">${count(p.client)}</td><td class="num">${count(p.server)}</td><td class="num">${count(p.limited)}</td></tr>`;
  })}</tbody>
</table></div>`;
}

function keysUsage(shownKeys: UsageKey[], byKey: Map<string, KeyUsage>, firstHour: number): SafeHtml {
  const hourLabels = Array.from({ length: DAYS * 24 }, (_, i) => {
    const iso = new Date(firstHour + i * HOUR).toISOString();
    return `${iso.slice(5, 10)} ${iso.slice(11, 13)}h`;
  });
  return shownKeys.length === 0
    ? html`<p class="empty">No API key yet: create one in <a href="/settings/api-keys">Settings → API Keys</a>, then see the <a href="${API_DOCS}">API documentation</a>.</p>`
    : html`<div class="table-wrap"><table aria-labelledby="keys-usage-title" id="keys-usage">
  <thead><tr><th scope="col">Key</th><th scope="col">System</th><th scope="col" class="num">Requests (${DAYS} days)</th><th scope="col">Last request</th></tr></thead>
  <tbody>${shownKeys.map((k) => {
    const u = byKey.get(k.id);
    return html`<tr><th scope="row">${k.name} <span class="muted mono">${k.key_prefix}…</span>${k.revoked_at ? html` <span class="badge bad">revoked</span>` : ''}</th><td>${k.external_system}</td>
    <td class="num">${count(u?.total ?? 0)}</td><td class="nowrap">${utc(u?.last ?? k.last_used_at)}</td></tr>`;
  })}</tbody></table></div>
${shownKeys
  .filter((k) => byKey.has(k.id))
  .map((k) =>
    stackedBars({
      id: `usage-${k.id}`,
      title: `Requests per hour: ${k.name}`,
      description: `Requests per hour of the key ${k.name} over the last ${DAYS} days (UTC), split by outcome.`,
      labels: hourLabels,
      labelEvery: 24,
      series: [
        { name: '2xx', cls: 's0' },
        { name: '4xx', cls: 's1' },
        { name: '5xx', cls: 's2' },
        { name: '429', cls: 's3' },
      ],
      values: byKey.get(k.id)!.series,
    }),
  )}`;
}

function failedWritesSection(failed: FailedWrites): SafeHtml {
  return failed.total === 0
    ? html`<p>No failed write in the last ${DAYS} days.</p>`
    : failed.rows.length === 0
      ? html`<p>No older failed writes in the last ${DAYS} days. <a href="/#failed-writes-title">Show the newest</a>.</p>`
      : html`<div class="table-wrap"><table aria-labelledby="failed-writes-title" id="failed-writes">
  <caption>${count(failed.total)} failed ${failed.total === 1 ? 'write' : 'writes'} (single requests and batch items) in the last ${DAYS} days, newest first${
    failed.total > failed.rows.length ? `; ${count(failed.newer + 1)}–${count(failed.newer + failed.rows.length)} shown` : ''
  }; fix the record in the TMS and send it again</caption>
  <thead><tr><th scope="col">When</th><th scope="col">Record</th><th scope="col">Operation</th><th scope="col" class="num">Status</th><th scope="col">Detail</th><th scope="col">Request</th></tr></thead>
  <tbody>${failed.rows.map(
    (
      f,
    ) => html`<tr><td class="nowrap">${utc(f.occurred_at)}</td><th scope="row">${f.resource}: ${f.reference ?? html`<span class="muted">no reference</span>`}${f.batch_index !== null ? html`<br><span class="muted">batch item ${f.batch_index}</span>` : ''}</th>
    <td>${f.method} ${f.operation}</td><td class="num">${f.status}</td><td>${detailSummary(f.detail)}</td><td class="mono">${f.request_id ?? ''}</td></tr>`,
  )}</tbody></table></div>
${failedPager(failed)}`;
}

function ignoredFieldsSection(ignored: IgnoredFields, keyName: Map<string, UsageKey>): SafeHtml {
  return ignored.length === 0
    ? html`<p>No request of the last ${DAYS} days sent a field the API does not know.</p>`
    : html`<p class="muted">Fields the API ignored (unknown names, often a misspelling or another service's name): the data in them was not stored. Each answer names them in its <code>Lanebridge-Ignored-Fields</code> header; send <code>Prefer: handling=strict</code>, or make the key strict, to have them refused instead.</p>
<div class="table-wrap"><table aria-labelledby="ignored-fields-title" id="ignored-fields">
  <thead><tr><th scope="col">Key</th><th scope="col">Request</th><th scope="col">Field</th><th scope="col" class="num">Requests</th><th scope="col">Last seen</th></tr></thead>
  <tbody>${ignored.map((f) => {
    const k = keyName.get(f.key_id);
    return html`<tr><td>${k ? k.name : f.key_id}</td><td class="mono">${f.route}</td><th scope="row" class="mono">${f.field}</th><td class="num">${count(Number(f.count))}</td><td class="nowrap">${utc(f.last_seen_at)}</td></tr>`;
  })}</tbody></table></div>`;
}

export async function integrationHealth(ctx: DashboardContext, orgId: string, query?: unknown): Promise<SafeHtml> {
  const { usage, insights } = ctx.services;
  // This instance's counts are written first, so the page shows them.
  await usage.flush();
  const now = ctx.clock.now().getTime();
  const firstHour = Math.floor(now / HOUR) * HOUR - (DAYS * 24 - 1) * HOUR;
  const since = new Date(firstHour).toISOString();
  const [hourly, failed, keys, ignored] = await Promise.all([
    usage.hourly(orgId, since),
    usage.failedWrites(orgId, new Date(now - DAYS * DAY).toISOString(), FAILED_SHOWN, failedWritesPage(query)),
    insights.usageKeys(orgId),
    usage.ignoredFields(orgId, new Date(now - DAYS * DAY).toISOString(), IGNORED_SHOWN),
  ]);
  const keyName = new Map(keys.map((k) => [k.id, k]));
  const { days, perDay, byKey } = tally(hourly, Math.floor(now / DAY) * DAY - (DAYS - 1) * DAY, firstHour);
  const shownKeys = keys.filter((k) => !k.revoked_at || byKey.has(k.id));
  return html`<h2 id="health-title">Integration health</h2>
<p class="muted">API requests with a key over the last ${DAYS} days (UTC), counted by this service; a 401 names no key and is not counted.</p>
${requestsPerDay(days, perDay)}
<h3 id="keys-usage-title">Requests per key</h3>
${keysUsage(shownKeys, byKey, firstHour)}
<h3 id="failed-writes-title">Failed writes</h3>
${failedWritesSection(failed)}
<h3 id="ignored-fields-title">Ignored fields</h3>
${ignoredFieldsSection(ignored, keyName)}`;
}
