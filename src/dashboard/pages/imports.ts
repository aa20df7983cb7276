import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { FINISHED, type Import } from '../../modules/imports/imports.schema.js';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { count, utc } from '../format.js';
import { html } from '../html.js';
import { page, when } from '../layout.js';

const seconds = (s: number | null) =>
  s === null ? '—' : s >= 3600 ? `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min` : s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;

function progress(i: Import) {
  if (i.rows_total === null)
    return html`<span>${i.status === 'awaiting_upload' ? 'waiting for the upload' : i.status === 'queued' ? 'queued' : 'counting rows…'}</span>`;
  return html`<progress max="${String(i.rows_total)}" value="${String(i.rows_processed)}" aria-label="Rows processed of ${i.id}">${String(i.percent ?? 0)}%</progress> ${String(i.percent ?? 0)}%`;
}

/**
 * The Imports page (docs/imports.md): every import of the organization, newest first, with a live
 * progress bar (the page reloads every 2 seconds while one runs), its counts, rows per second and ETA,
 * and its refused rows to download (the same NDJSON as GET /v2/tms-api/imports/{id}/errors).
 */
export function importPageRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get('/imports', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const service = ctx.services.imports;
    const { items } = service ? await service.list(s.orgId, { page: 1, page_size: 50, sort: '-created_at' }) : { items: [] as Import[] };
    const live = items.some((i) => i.status === 'running' || i.status === 'queued');
    const body = html`<h1>Imports</h1>
<p>Years of history in one job: your integration uploads an NDJSON or CSV file to <code>/v2/tms-api/imports</code>
(or you run <code>bin/lanebridge import</code>), and it runs here in the background, a chunk at a time, without an event or
webhook per row. ${live ? 'This page follows the running import (it reloads every 2 seconds).' : ''}</p>
${
  items.length === 0
    ? html`<p>No imports yet.</p>`
    : html`<div class="table-wrap"><table>
  <caption>Imports, newest first (times in UTC)</caption>
  <thead><tr><th scope="col">Import</th><th scope="col">Records</th><th scope="col">Status</th><th scope="col">Progress</th>
  <th scope="col" class="num">Rows</th><th scope="col" class="num">Written</th><th scope="col" class="num">Refused</th>
  <th scope="col" class="num">Rows/s</th><th scope="col">ETA</th><th scope="col">Started</th><th scope="col">Refused rows</th></tr></thead>
  <tbody>${items.map(
    (i) => html`<tr><td><code>${i.id}</code><br><small>${i.format}, ${i.operation}, events: ${i.emit_events}</small></td><td>${i.resource}</td>
    <td>${i.status.replaceAll('_', ' ')}${i.error ? html`<br><small>${i.error}</small>` : ''}</td>
    <td class="nowrap">${progress(i)}</td>
    <td class="num">${i.rows_total === null ? '—' : count(i.rows_total)}</td><td class="num">${count(i.rows_succeeded)}</td><td class="num">${count(i.rows_failed)}</td>
    <td class="num">${i.rows_per_second === null ? '—' : count(Math.round(i.rows_per_second))}</td>
    <td>${FINISHED.has(i.status) ? (i.finished_at ? html`done ${utc(i.finished_at)}` : '') : seconds(i.eta_seconds)}</td>
    <td>${i.started_at ? when(i.started_at) : '—'}</td>
    <td>${i.rows_failed > 0 ? html`<a href="/imports/${i.id}/errors" download="${i.id}-errors.ndjson">Download ${count(i.rows_failed)} (NDJSON)</a>` : '—'}</td></tr>`,
  )}</tbody>
</table></div>`
}`;
    return sendPage(reply, page({ title: 'Imports', session: s, active: 'imports', body, ...(live ? { refreshSeconds: 2 } : {}) }));
  });

  app.get('/imports/:id/errors', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const { id } = req.params as { id: string };
    const lines = await ctx.services.imports!.errorLines(s.orgId, id);
    return reply
      .type('application/x-ndjson; charset=utf-8')
      .header('content-disposition', `attachment; filename="${id.replace(/[^A-Za-z0-9_-]/g, '')}-errors.ndjson"`)
      .send(Readable.from(lines));
  });
}
