import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../../lib/http/errors.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { EVENT_TYPES } from '../../modules/events/events.schema.js';
import { ReplayRunningError, WebhookEndpointLimitError, type WebhooksService } from '../../modules/webhooks/webhooks.service.js';
import { actorOf, doneMessage, formList, formText, idParam, sendPage, sessionForm, sessionPage, type DashboardContext } from '../context.js';
import { count } from '../format.js';
import { html, segment } from '../html.js';
import type { FieldErrors } from '../layout.js';
import { confirmPage, endpointPage, listPage, secretPage, type EndpointForm } from './webhooks-pages.js';

const DONE: Record<string, string> = {
  deleted: 'The endpoint is deleted, with its delivery log.',
  disabled: 'The endpoint is disabled. Its pending deliveries failed; nothing is sent until it is enabled.',
  enabled: 'The endpoint is enabled. Events committed from now on are sent to it; replay what it missed.',
};

/** What the handlers use: the webhooks service (the pages' own context). */
interface WebhookPages {
  webhooks: WebhooksService;
}

async function showEndpoints(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  return sendPage(reply, await listPage(ctx, s, { done: doneMessage(req, DONE) }));
}

async function addEndpoint(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const values: EndpointForm = {
    url: formText(req.body, 'url').trim(),
    event_types: formList(req.body, 'event_types'),
    description: formText(req.body, 'description').trim(),
  };
  const errors: FieldErrors = {};
  if (!values.url) errors.url = 'Enter the endpoint’s URL.';
  else if (values.url.length > 2048) errors.url = 'Use at most 2048 characters for the URL.';
  const types = EVENT_TYPES.filter((t) => values.event_types.includes(t));
  if (types.length !== new Set(values.event_types).size) errors.event_types = 'Choose event types from the list.';
  if (values.description.length > 500) errors.description = 'Use at most 500 characters for the description.';
  if (Object.keys(errors).length) return sendPage(reply, await listPage(ctx, s, { values, errors }), 422);
  try {
    const created = await ctx.webhooks.create(
      s.orgId,
      { url: values.url, ...(types.length ? { event_types: types } : {}), ...(values.description ? { description: values.description } : {}) },
      actorOf(req, s),
    );
    return sendPage(
      reply,
      secretPage(s, {
        title: 'Webhook endpoint added',
        secret: created.secret,
        endpoint: created,
        intro: html`<p>Events committed from now on are sent to <code>${created.url}</code>.</p>`,
      }),
    );
  } catch (err) {
    if (err instanceof ValidationError) {
      return sendPage(reply, await listPage(ctx, s, { values, errors: { url: err.issues[0]?.msg ?? 'This URL cannot be used.' } }), 422);
    }
    if (err instanceof WebhookEndpointLimitError) return sendPage(reply, await listPage(ctx, s, { values, refused: err.detail }), 409);
    throw err;
  }
}

async function showEndpoint(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const q = req.query as Record<string, string | undefined>;
  const n = Number(q.page ?? '1');
  const doneText = DONE[q.done ?? ''];
  return sendPage(
    reply,
    await endpointPage(ctx, s, idParam(req.params), {
      page: Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : 1,
      ...(doneText ? { done: html`<p>${doneText}</p>` } : {}),
    }),
  );
}

async function sendTest(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const d = await ctx.webhooks.sendTestEvent(s.orgId, idParam(req.params));
  const done =
    d.status === 'delivered'
      ? html`<p>Test event <code>${d.event_id}</code> delivered: HTTP ${String(d.response_status)} in ${count(d.duration_ms ?? 0)} ms.</p>`
      : html`<p>Test event <code>${d.event_id}</code> failed: ${d.error ?? 'no answer'}.</p>`;
  return sendPage(reply, await endpointPage(ctx, s, idParam(req.params), { done }));
}

async function replay(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const text = formText(req.body, 'after_sequence').trim();
  if (!/^\d{1,15}$/.test(text)) {
    return sendPage(reply, await endpointPage(ctx, s, idParam(req.params), { replayError: 'Enter a sequence number: 0 or more.', replayValue: text }), 422);
  }
  let queued: number;
  try {
    ({ queued } = await ctx.webhooks.replay(s.orgId, idParam(req.params), { after_sequence: Number(text) }, actorOf(req, s)));
  } catch (err) {
    if (err instanceof ReplayRunningError)
      return sendPage(reply, await endpointPage(ctx, s, idParam(req.params), { replayError: err.detail, replayValue: text }), 409);
    throw err;
  }
  return sendPage(
    reply,
    await endpointPage(ctx, s, idParam(req.params), { done: html`<p>${count(queued)} event${queued === 1 ? '' : 's'} queued for delivery again.</p>` }),
  );
}

async function setStatus(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const status = formText(req.body, 'status') === 'enabled' ? 'enabled' : 'disabled';
  await ctx.webhooks.update(s.orgId, idParam(req.params), { status }, actorOf(req, s));
  return reply.redirect(`/settings/webhooks/${segment(idParam(req.params))}?done=${status}`, 303);
}

async function rotateSecret(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const e = await ctx.webhooks.detail(s.orgId, idParam(req.params));
  const { secret } = await ctx.webhooks.rotateSecret(s.orgId, e.id, actorOf(req, s));
  return sendPage(
    reply,
    secretPage(s, {
      title: 'Signing secret rotated',
      secret,
      endpoint: e,
      intro: html`<p>For the next 24 hours deliveries are signed with both the previous secret and this one.</p>`,
    }),
  );
}

async function deleteEndpoint(ctx: WebhookPages, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  await ctx.webhooks.remove(s.orgId, idParam(req.params), actorOf(req, s));
  return reply.redirect('/settings/webhooks?done=deleted', 303);
}

/** Settings → Webhooks (docs/webhooks.md): endpoints, their secrets, delivery logs, test events and replays. */
export function webhookPageRoutes(app: FastifyInstance, _ctx: DashboardContext, webhooks: WebhooksService) {
  const ctx: WebhookPages = { webhooks };
  app.get(
    '/settings/webhooks',
    sessionPage((req, reply, s) => showEndpoints(ctx, req, reply, s)),
  );
  app.post(
    '/settings/webhooks',
    sessionForm((req, reply, s) => addEndpoint(ctx, req, reply, s)),
  );
  app.get(
    '/settings/webhooks/:id',
    sessionPage((req, reply, s) => showEndpoint(ctx, req, reply, s)),
  );
  app.post(
    '/settings/webhooks/:id/test',
    sessionForm((req, reply, s) => sendTest(ctx, req, reply, s)),
  );
  app.post(
    '/settings/webhooks/:id/replay',
    sessionForm((req, reply, s) => replay(ctx, req, reply, s)),
  );
  app.post(
    '/settings/webhooks/:id/status',
    sessionForm((req, reply, s) => setStatus(ctx, req, reply, s)),
  );
  for (const action of ['rotate', 'delete'] as const) {
    app.get(
      `/settings/webhooks/:id/${action}`,
      sessionPage(async (req, reply, s) => sendPage(reply, confirmPage(s, await webhooks.detail(s.orgId, idParam(req.params)), action))),
    );
  }
  app.post(
    '/settings/webhooks/:id/rotate',
    sessionForm((req, reply, s) => rotateSecret(ctx, req, reply, s)),
  );
  app.post(
    '/settings/webhooks/:id/delete',
    sessionForm((req, reply, s) => deleteEndpoint(ctx, req, reply, s)),
  );
}
