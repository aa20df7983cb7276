import type { FastifyInstance } from 'fastify';
import { actorOf, checkSessionCsrf, requireSession, sendPage, type DashboardContext } from '../context.js';
import { utc } from '../format.js';
import { html } from '../html.js';
import { csrfField, notice, page, settingsTabs } from '../layout.js';

const DONE: Record<string, string> = {
  welcome: 'Welcome! Your organization is set up and you are signed in. Next, connect the TMS API integration.',
};

export function integrationRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const { accounts } = ctx.services;

  app.get('/settings', async (req, reply) => {
    if (!requireSession(req, reply)) return reply;
    return reply.redirect('/settings/integrations', 303);
  });

  app.get('/settings/integrations', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    const done = DONE[(req.query as Record<string, string | undefined>).done ?? ''];
    const integration = await accounts.getIntegration(s.orgId);
    return sendPage(
      reply,
      page({
        title: 'TMS Integrations',
        session: s,
        active: 'settings',
        body: html`<h1>Settings</h1>
${settingsTabs('integrations')}
${done ? notice('ok', html`<p>${done}</p>`) : ''}
<h2>TMS Integrations</h2>
<section class="card" aria-labelledby="tms-api-title">
  <h3 id="tms-api-title">TMS API
    ${integration ? html`<span class="badge ok">Connected</span>` : html`<span class="badge warn">Not connected</span>`}</h3>
  <p>Lets your transportation management system send customers, carriers, locations and loads to Lanebridge
  over the REST API under <code>/v2/tms-api</code>, authenticated with API keys you create for it.</p>
  ${
    integration
      ? html`<p>Connected ${utc(integration.connected_at)}.</p>
  <p><a class="button" href="/settings/api-keys">Manage API keys</a></p>`
      : html`<p>Connect it to create API keys.</p>
  <form method="post" action="/settings/integrations">
    ${csrfField(s.csrfToken)}
    <button type="submit">Add Integration</button>
  </form>`
  }
</section>`,
      }),
    );
  });

  app.post('/settings/integrations', async (req, reply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    checkSessionCsrf(req);
    await accounts.connectIntegration(s.orgId, actorOf(req, s));
    return reply.redirect('/settings/api-keys?done=connected', 303);
  });
}
