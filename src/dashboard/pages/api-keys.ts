import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConflictError, ValidationError } from '../../lib/http/errors.js';
import { MAX_GRACE_HOURS, MAX_LIMIT, parseExpiry } from '../../modules/accounts/accounts.service.js';
import { SCOPES, isScope } from '../../modules/accounts/scopes.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import { actorOf, doneMessage, formList, formText, idParam, sendPage, sessionForm, sessionPage, type DashboardContext } from '../context.js';
import { count, utc } from '../format.js';
import { html } from '../html.js';
import type { FieldErrors } from '../layout.js';
import { fieldErrorsOf } from './auth.js';
import { confirmPage, keysPage, limitsPage, newKeyPage, type KeyForm } from './api-keys-pages.js';

const DONE: Record<string, string> = {
  connected: 'The TMS API integration is connected. You can now create API keys.',
  revoked: 'The key is revoked. Requests that use it are refused from now on.',
  limits: 'The limits are saved. They apply from the key’s next request.',
};

function parseLimit(text: string, field: string, label: string, errors: FieldErrors): number {
  const t = text.trim();
  const n = /^\d{1,10}$/.test(t) ? Number(t) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) errors[field] = `${label} must be a whole number from 1 to ${count(MAX_LIMIT)}.`;
  return n;
}

function keyFormOf(body: unknown): KeyForm {
  return {
    name: formText(body, 'name').trim(),
    external_system: formText(body, 'external_system').trim(),
    scopes: formList(body, 'scopes'),
    per_minute: formText(body, 'per_minute'),
    per_day: formText(body, 'per_day'),
    expires_at: formText(body, 'expires_at').trim(),
    strict: formText(body, 'strict') === 'on',
  };
}

/** The new key form checked field by field: its errors, and the values the service is given when there are none. */
function checkKeyForm(values: KeyForm, now: Date) {
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
      expiresAt = parseExpiry(values.expires_at, now);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      errors.expires_at = `${err.issues[0]?.msg ?? 'Enter a date in the future'}.`;
    }
  }
  return { errors, scopes, perMinute, perDay, expiresAt };
}

async function showKeys(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  return sendPage(reply, await keysPage(ctx, s, { done: doneMessage(req, DONE) }));
}

async function createKey(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const { accounts } = ctx.services;
  const values = keyFormOf(req.body);
  const { errors, scopes, perMinute, perDay, expiresAt } = checkKeyForm(values, ctx.clock.now());
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
}

async function revokeKey(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  await ctx.services.accounts.revokeKey(s.orgId, idParam(req.params), actorOf(req, s));
  return reply.redirect('/settings/api-keys?done=revoked', 303);
}

async function rotateKey(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const { accounts } = ctx.services;
  const old = await accounts.getKey(s.orgId, idParam(req.params));
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
}

async function showLimits(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const k = await ctx.services.accounts.getKey(s.orgId, idParam(req.params));
  if (k.status !== 'active') return reply.redirect('/settings/api-keys', 303);
  return sendPage(reply, limitsPage(s, k, { per_minute: String(k.per_minute), per_day: String(k.per_day), strict: k.strict }));
}

async function saveLimits(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, s: DashboardSession) {
  const { accounts } = ctx.services;
  const k = await accounts.getKey(s.orgId, idParam(req.params));
  const values = { per_minute: formText(req.body, 'per_minute'), per_day: formText(req.body, 'per_day'), strict: formText(req.body, 'strict') === 'on' };
  const errors: FieldErrors = {};
  const perMinute = parseLimit(values.per_minute, 'per_minute', 'Requests per minute', errors);
  const perDay = parseLimit(values.per_day, 'per_day', 'Requests per day', errors);
  if (Object.keys(errors).length) return sendPage(reply, limitsPage(s, k, values, errors), 422);
  await accounts.updateKeyLimits(s.orgId, k.id, { perMinute, perDay }, actorOf(req, s));
  if (values.strict !== k.strict) await accounts.setKeyStrict(s.orgId, k.id, values.strict, actorOf(req, s));
  return reply.redirect('/settings/api-keys?done=limits', 303);
}

/** Settings → API Keys: create, rotate and revoke the integration's keys and change their limits. */
export function apiKeyRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get(
    '/settings/api-keys',
    sessionPage((req, reply, s) => showKeys(ctx, req, reply, s)),
  );
  app.post(
    '/settings/api-keys',
    sessionForm((req, reply, s) => createKey(ctx, req, reply, s)),
  );
  for (const action of ['rotate', 'revoke'] as const) {
    app.get(
      `/settings/api-keys/:id/${action}`,
      sessionPage(async (req, reply, s) => {
        const k = await ctx.services.accounts.getKey(s.orgId, idParam(req.params));
        if (k.status !== 'active') return reply.redirect('/settings/api-keys', 303);
        return sendPage(reply, confirmPage(s, k, { action }));
      }),
    );
  }
  app.post(
    '/settings/api-keys/:id/revoke',
    sessionForm((req, reply, s) => revokeKey(ctx, req, reply, s)),
  );
  app.post(
    '/settings/api-keys/:id/rotate',
    sessionForm((req, reply, s) => rotateKey(ctx, req, reply, s)),
  );
  app.get(
    '/settings/api-keys/:id/limits',
    sessionPage((req, reply, s) => showLimits(ctx, req, reply, s)),
  );
  app.post(
    '/settings/api-keys/:id/limits',
    sessionForm((req, reply, s) => saveLimits(ctx, req, reply, s)),
  );
}
