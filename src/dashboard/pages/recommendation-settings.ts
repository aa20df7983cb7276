import type { FastifyInstance } from 'fastify';
import { graceMinutesFor } from '../../domain/evidence.js';
import { MAX_GRACE_MINUTES } from '../../modules/accounts/organizations.js';
import { ValidationError } from '../../lib/http/errors.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { actorOf, checkSessionCsrf, formText, requireSession, sendPage, type DashboardContext } from '../context.js';
import { html } from '../html.js';
import { adminOnlyNote, csrfField, errorSummary, field, notice, page, settingsTabs, type FieldErrors } from '../layout.js';

/** The organization's on-time grace (docs/dashboard.md, "Recommendation evidence"), which the recommendations' evidence counts with. */
export function recommendationSettingsRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const { accounts, lanes } = ctx.services;
  const serverDefault = () => graceMinutesFor(null, lanes.rules.graceMinutes);

  const view = async (s: DashboardSession, o: { value?: string; errors?: FieldErrors; done?: boolean } = {}) => {
    const org = await accounts.getOrganization(s.orgId);
    const own = org?.on_time_grace_minutes ?? null;
    const admin = s.userRole === 'admin';
    return page({
      title: 'Recommendations',
      session: s,
      active: 'settings',
      body: html`<h1>Settings</h1>
${settingsTabs('recommendations')}
${o.done ? notice('ok', html`<p>Saved. Recommendations count on time with ${own ?? serverDefault()} minutes’ grace from now on.</p>`) : ''}
${errorSummary(o.errors)}
<h2>Recommendations</h2>
<section class="card" aria-labelledby="grace-title">
  <h3 id="grace-title">On-time grace</h3>
  <p>A stop counts as on time in a carrier’s evidence when it arrived by the end of its window (or its start,
  when it has no end) plus this many minutes. Now: <strong data-grace>${own ?? serverDefault()} minutes</strong>
  ${own === null ? html`(the server’s default, <code>ON_TIME_GRACE_MINUTES</code>)` : html`(this organization’s own)`}.</p>
  ${
    admin
      ? html`<form class="stack" method="post" action="/settings/recommendations" novalidate>
    ${csrfField(s.csrfToken)}
    ${field({ name: 'on_time_grace_minutes', label: 'Grace (minutes)', type: 'number', min: 0, max: MAX_GRACE_MINUTES, value: o.value ?? (own === null ? '' : String(own)), hint: `0 to ${MAX_GRACE_MINUTES}; empty: the server’s default (${serverDefault()}).`, ...(o.errors ? { errors: o.errors } : {}) })}
    <div><button type="submit">Save</button></div>
  </form>`
      : adminOnlyNote('change the grace')
  }
</section>`,
    });
  };

  app.get('/settings/recommendations', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    return sendPage(reply, await view(s, { done: (req.query as Record<string, string | undefined>).done === 'saved' }));
  });

  app.post('/settings/recommendations', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    const text = formText(req.body, 'on_time_grace_minutes').trim();
    // The rule and its message are the service's (one place); text that is not digits is NaN and refused there.
    const minutes = text === '' ? null : /^\d{1,9}$/.test(text) ? Number(text) : NaN;
    try {
      await accounts.setOnTimeGrace(s.orgId, minutes, actorOf(req, s));
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      return sendPage(reply, await view(s, { value: text, errors: { on_time_grace_minutes: err.issues[0]?.msg ?? 'Not a grace in minutes' } }), 422);
    }
    return reply.redirect('/settings/recommendations?done=saved', 303);
  });
}
