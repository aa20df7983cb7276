import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConflictError, ValidationError } from '../../lib/http/errors.js';
import { MIN_PASSWORD_LENGTH, passwordProblem } from '../../modules/accounts/accounts.service.js';
import { SetupCodeError } from '../../modules/accounts/organizations.js';
import type { DashboardSession } from '../../modules/accounts/sessions.js';
import {
  FORM_COOKIE,
  SESSION_COOKIE,
  anonymousFormToken,
  checkAnonymousCsrf,
  checkSessionCsrf,
  cookieOptions,
  formText,
  safeNext,
  sendPage,
  type DashboardContext,
} from '../context.js';
import { count, utc } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, errorSummary, field, notice, page, type FieldErrors } from '../layout.js';
import { RECORD_KINDS } from '../../domain/records.js';
import { listPath } from './records.js';
import { integrationHealth } from './health.js';

/** A throttled form's answer (setup code, own password): how long to wait. */
export const tooManyAttempts = (seconds: number) => `Too many attempts from your address: wait ${seconds} second${seconds === 1 ? '' : 's'} and try again.`;

/** The one answer to every failed sign-in, whatever failed. */
export const SIGN_IN_FAILED = 'Email or password is incorrect.';

const FIRST_RUN_FIELDS: Record<string, string> = {
  setup_code: 'setup_code',
  organization_name: 'organization_name',
  name: 'name',
  email: 'email',
  password: 'password',
};

/** Field errors from a service's validation error (its `loc` names the field). */
export function fieldErrorsOf(err: ValidationError, fields: Record<string, string>): FieldErrors {
  const out: FieldErrors = {};
  for (const issue of err.issues) {
    const key = String(issue.loc[issue.loc.length - 1] ?? '');
    const target = fields[key] ?? Object.values(fields)[0]!;
    out[target] ??= issue.msg.replace(/^Value error, /, '');
  }
  return out;
}

async function startSession(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, user: { id: string; org_id: string }) {
  // A new session id at every sign-in (no fixation); the old one, if any, ends.
  if (req.dashboardToken) await ctx.sessions.destroy(req.dashboardToken);
  const session = await ctx.sessions.create(user);
  reply.setCookie(SESSION_COOKIE, session.token, { ...cookieOptions(ctx, req), maxAge: Math.floor(ctx.sessions.options.absoluteMs / 1000) });
  reply.clearCookie(FORM_COOKIE, { path: '/' });
}

function firstRunPage(token: string, values: Record<string, string> = {}, errors: FieldErrors = {}, message?: string): SafeHtml {
  return page({
    title: 'Create your organization',
    narrow: true,
    body: html`<h1>Create your organization</h1>
<p>Welcome to Lanebridge. Set up your organization and your own sign-in; you can add colleagues afterwards.</p>
${errorSummary(errors, message)}
<form class="stack" method="post" action="/" novalidate>
  ${csrfField(token)}
  ${field({ name: 'setup_code', label: 'Setup code', errors, required: true, autocomplete: 'off', maxlength: 64, hint: 'Printed by lanebridge serve when it starts (look in the server’s log), or run: bin/lanebridge setup-code' })}
  ${field({ name: 'organization_name', label: 'Organization name', value: values.organization_name, errors, required: true, autocomplete: 'organization', maxlength: 255 })}
  ${field({ name: 'name', label: 'Your name', value: values.name, errors, required: true, autocomplete: 'name', maxlength: 255 })}
  ${field({ name: 'email', label: 'Email', type: 'email', value: values.email, errors, required: true, autocomplete: 'email', maxlength: 255 })}
  ${field({ name: 'password', label: 'Password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: `At least ${MIN_PASSWORD_LENGTH} characters.` })}
  <div><button type="submit">Create organization</button></div>
</form>`,
  });
}

function signInPage(token: string, next: string, email = '', message?: SafeHtml | null): SafeHtml {
  return page({
    title: 'Sign in',
    narrow: true,
    body: html`<h1>Sign in</h1>
${message ?? ''}
<form class="stack" method="post" action="/signin">
  ${csrfField(token)}
  <input type="hidden" name="next" value="${next}">
  ${field({ name: 'email', label: 'Email', type: 'email', value: email, required: true, autocomplete: 'username', maxlength: 255 })}
  ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' })}
  <div><button type="submit">Sign in</button></div>
</form>`,
  });
}

async function overviewPage(ctx: DashboardContext, s: DashboardSession, query?: unknown): Promise<SafeHtml> {
  const [counts, integration, health] = await Promise.all([
    ctx.services.insights.overview(s.orgId),
    ctx.services.accounts.getIntegration(s.orgId),
    integrationHealth(ctx, s.orgId, query),
  ]);
  const stat = (value: number, label: string, path: string, extra?: string) =>
    html`<div class="card"><a href="${path}"><span class="stat">${count(value)}</span>${label}</a>${extra ? html`<div class="muted">${extra}</div>` : ''}</div>`;
  return page({
    title: 'Overview',
    session: s,
    active: 'home',
    body: html`<h1>${s.orgName}</h1>
${
  integration
    ? html`<p>TMS API integration connected ${utc(integration.connected_at)}. <a href="/settings/api-keys">Manage API keys</a>.</p>`
    : notice(
        'warn',
        html`<p><strong>Next step:</strong> connect the TMS API integration, then create an API key for your system.</p>
<p><a href="/settings/integrations">Go to Settings → TMS Integrations</a></p>`,
      )
}
<h2>Your data</h2>
<div class="grid">
  ${stat(counts.loads, RECORD_KINDS.loads.plural, listPath('loads'), `${count(counts.openLoads)} open`)}
  ${stat(counts.locations, RECORD_KINDS.locations.plural, listPath('locations'))}
  ${stat(counts.carriers, RECORD_KINDS.carriers.plural, listPath('carriers'))}
  ${stat(counts.customers, RECORD_KINDS.customers.plural, listPath('customers'))}
  ${stat(counts.lanes, 'Lanes with history', '/lanes')}
</div>
<h2>Workspace</h2>
<div class="grid">
  ${stat(counts.activeKeys, 'Active API keys', '/settings/api-keys')}
  ${stat(counts.users, 'Users', '/users')}
</div>
${health}`,
  });
}

async function home(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  const s = req.dashboardSession;
  if (s) return sendPage(reply, await overviewPage(ctx, s, req.query));
  if ((await ctx.services.accounts.countOrganizations()) > 0) return reply.redirect('/signin', 303);
  // Made here too when no `serve` printed it (tests, an app embedded elsewhere): the CLI prints it.
  await ctx.services.accounts.setupCode();
  return sendPage(reply, firstRunPage(anonymousFormToken(ctx, req, reply)));
}

/** First run: the first organization and its first user, then signed in. */
async function firstRun(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  checkAnonymousCsrf(ctx, req);
  if ((await ctx.services.accounts.countOrganizations()) > 0) return reply.redirect('/signin', 303);
  const values = {
    organization_name: formText(req.body, 'organization_name').trim(),
    name: formText(req.body, 'name').trim(),
    email: formText(req.body, 'email').trim(),
  };
  const password = formText(req.body, 'password');
  const setupCode = formText(req.body, 'setup_code');
  const token0 = anonymousFormToken(ctx, req, reply);
  // 5 tries a minute per address: the code cannot be guessed by trying
  // (docs/dashboard.md, "Throttled forms").
  const wait = ctx.formAttempts.take(`setup\n${req.ip}`);
  if (wait > 0) {
    reply.header('retry-after', String(wait));
    return sendPage(reply, firstRunPage(token0, values, { setup_code: tooManyAttempts(wait) }), 429);
  }
  // Without the code nothing else is looked at: whoever reaches the port first cannot claim it.
  if (!setupCode.trim())
    return sendPage(
      reply,
      firstRunPage(token0, values, { setup_code: 'Enter the setup code that lanebridge serve printed (or run bin/lanebridge setup-code).' }),
      403,
    );
  const errors: FieldErrors = {};
  if (!values.organization_name) errors.organization_name = 'Enter the organization name.';
  else if (values.organization_name.length > 255) errors.organization_name = 'Use at most 255 characters for the organization name.';
  if (!values.name) errors.name = 'Enter your name.';
  else if (values.name.length > 255) errors.name = 'Use at most 255 characters for your name.';
  if (!/^[^\s@]+@[^\s@]+$/.test(values.email) || values.email.length > 255) errors.email = 'Enter an email address, like name@example.com.';
  // The accounts service's rule, asked first so that its problem shows beside the others.
  const pw = passwordProblem(password);
  if (pw) errors.password = pw;
  const token = token0;
  if (Object.keys(errors).length) return sendPage(reply, firstRunPage(token, values, errors), 422);
  try {
    const { user } = await ctx.services.accounts.setUpFirstOrganization(
      { organizationName: values.organization_name, name: values.name, email: values.email, password, setupCode },
      req.ip,
    );
    await startSession(ctx, req, reply, user);
    return reply.redirect('/settings/integrations?done=welcome', 303);
  } catch (err) {
    if (err instanceof ConflictError) return reply.redirect('/signin', 303);
    if (err instanceof SetupCodeError)
      return sendPage(
        reply,
        firstRunPage(token, values, { setup_code: 'This setup code is not right. Copy it from the server’s log, or run bin/lanebridge setup-code.' }),
        403,
      );
    if (err instanceof ValidationError) return sendPage(reply, firstRunPage(token, values, fieldErrorsOf(err, FIRST_RUN_FIELDS)), 422);
    throw err;
  }
}

async function showSignIn(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  const q = req.query as Record<string, string | undefined>;
  const next = safeNext(q.next);
  if (req.dashboardSession) return reply.redirect(next, 303);
  if ((await ctx.services.accounts.countOrganizations()) === 0) return reply.redirect('/', 303);
  const message = q.done === 'signed-out' ? notice('ok', html`<p>You are signed out.</p>`) : null;
  return sendPage(reply, signInPage(anonymousFormToken(ctx, req, reply), next, '', message));
}

async function signIn(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  checkAnonymousCsrf(ctx, req);
  const email = formText(req.body, 'email').trim().slice(0, 255);
  const password = formText(req.body, 'password');
  const next = safeNext(formText(req.body, 'next'));
  const user =
    email !== '' && password !== '' ? await ctx.throttle.attempt(email, req.ip, () => ctx.services.accounts.verifyCredentials(email, password)) : null;
  if (!user) {
    const token = anonymousFormToken(ctx, req, reply);
    return sendPage(reply, signInPage(token, next, email, notice('error', html`<p>${SIGN_IN_FAILED}</p>`, 'alert')), 401);
  }
  await startSession(ctx, req, reply, user);
  return reply.redirect(next, 303);
}

async function showSignOut(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  const s = req.dashboardSession;
  if (!s) return reply.redirect('/signin', 303);
  return sendPage(
    reply,
    page({
      title: 'Sign out',
      session: s,
      narrow: true,
      body: html`<h1>Sign out</h1>
<p>You are signed in as ${s.userName} (${s.userEmail}).</p>
<form method="post" action="/signout">${csrfField(s.csrfToken)}<button type="submit">Sign out</button></form>`,
    }),
  );
}

async function signOut(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  if (!req.dashboardSession || !req.dashboardToken) return reply.redirect('/signin', 303);
  checkSessionCsrf(req);
  await ctx.sessions.destroy(req.dashboardToken);
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
  return reply.redirect('/signin?done=signed-out', 303);
}

/** The overview, the first run, signing in and out. */
export function authRoutes(app: FastifyInstance, ctx: DashboardContext) {
  app.get('/', (req, reply) => home(ctx, req, reply));
  app.post('/', (req, reply) => firstRun(ctx, req, reply));
  app.get('/signin', (req, reply) => showSignIn(ctx, req, reply));
  app.post('/signin', (req, reply) => signIn(ctx, req, reply));
  app.get('/signout', (req, reply) => showSignOut(ctx, req, reply));
  app.post('/signout', (req, reply) => signOut(ctx, req, reply));
}
