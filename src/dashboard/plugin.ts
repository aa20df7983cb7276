import fastifyCookie from '@fastify/cookie';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { DataStore } from '../lib/db/index.js';
import type { Clock } from '../lib/clock.js';
import { ApiError, DetailError, ServiceUnavailableError, ValidationError, classifyError } from '../lib/http/errors.js';
import { DEFAULT_SESSION_OPTIONS, sessionsService, type SessionOptions } from '../modules/accounts/sessions.js';
import { ASSETS } from './assets.js';
import {
  AdminOnlyError,
  CsrfError,
  SESSION_COOKIE,
  parseForm,
  sendPage,
  type CookieSecureMode,
  type DashboardContext,
  type DashboardServices,
} from './context.js';
import { html } from './html.js';
import { page } from './layout.js';
import { authRoutes } from './pages/auth.js';
import { apiKeyRoutes } from './pages/api-keys.js';
import { dataRoutes } from './pages/data.js';
import { detailRoutes } from './pages/details.js';
import { warmMaps } from './map.js';
import { eventRoutes } from './pages/events.js';
import { importPageRoutes } from './pages/imports.js';
import { integrationRoutes } from './pages/integrations.js';
import { recommendationSettingsRoutes } from './pages/recommendation-settings.js';
import { userRoutes } from './pages/users.js';
import { accountRoutes } from './pages/account.js';
import { auditRoutes } from './pages/audit.js';
import { webhookPageRoutes } from './pages/webhooks.js';
import type { WebhooksService } from '../modules/webhooks/webhooks.service.js';
import { cookieSecret } from './secret.js';
import { attemptLimit, signInThrottle, type ThrottleOptions } from './throttle.js';

export interface DashboardOptions {
  /** Secure cookies: `on` (always; behind a TLS-terminating proxy), `off`, or `auto` (when the request came over TLS). */
  cookieSecure: CookieSecureMode;
  /** Signs cookies; when absent a secret is made once and kept in the database. */
  cookieSecret?: string;
  signInThrottle?: Partial<ThrottleOptions>;
  sessions?: Partial<SessionOptions>;
}

/** A dashboard route that changes something (any method but GET), and whether members may use it. */
export interface DashboardWriteRoute {
  method: string;
  url: string;
  member: boolean;
}

/**
 * The changes a member may make (docs/dashboard.md, "Roles, the first run and the audit log"): signing
 * in and out, and their own password. Every other route that is not a GET is an admin's, refused 403
 * before its handler runs, so a new form cannot forget it.
 */
export const MEMBER_WRITES: ReadonlySet<string> = new Set(['POST /signin', 'POST /signout', 'POST /account/password']);

export interface DashboardDeps {
  /** Filled with every route that is not a GET (the role test walks it). */
  writeRoutes?: DashboardWriteRoute[];
  services: DashboardServices;
  store: DataStore;
  clock: Clock;
  options: DashboardOptions;
  /** Settings → Webhooks. */
  webhooks?: WebhooksService;
}

/**
 * Every dashboard page sends these. The policy allows this origin's stylesheet and script and nothing
 * else: no inline script or style, no frames, forms posting only here.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

const FORM_BODY_LIMIT = 64 * 1024;
/** Setup-code and own-password form posts per client address and minute (docs/dashboard.md). */
const FORM_ATTEMPTS_PER_MINUTE = 5;

/** The dashboard's context: services, clock, sessions, throttles and the cookie secret. */
function dashboardContext(deps: DashboardDeps): DashboardContext {
  const sessions = sessionsService(deps.store, deps.clock, { ...DEFAULT_SESSION_OPTIONS, ...deps.options.sessions });
  const secret = cookieSecret(() => sessions.storedCookieSecret(), deps.options.cookieSecret);
  const ctx: DashboardContext = {
    services: deps.services,
    clock: deps.clock,
    sessions,
    throttle: signInThrottle(deps.options.signInThrottle),
    formAttempts: attemptLimit(FORM_ATTEMPTS_PER_MINUTE, 60_000, () => deps.clock.now().getTime()),
    secret,
    cookieSecure: deps.options.cookieSecure,
  };
  return ctx;
}

/** Each request: the security headers, then its session (from the signed cookie), and members kept to their writes. */
async function readSession(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply) {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
  reply.header('cache-control', 'no-store');
  if (req.url.startsWith('/assets/')) return;
  await ctx.secret.ready();
  const raw = req.cookies[SESSION_COOKIE];
  if (!raw) return;
  const unsigned = req.unsignCookie(raw);
  const session = unsigned.valid && unsigned.value ? await ctx.sessions.find(unsigned.value) : null;
  if (session) {
    req.dashboardSession = session;
    req.dashboardToken = unsigned.value;
  } else {
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
  }
  // Roles are enforced here, on the server, for every route but a GET: hidden buttons are not enough.
  const method = req.method;
  if (session?.userRole === 'member' && method !== 'GET' && method !== 'HEAD' && !MEMBER_WRITES.has(`${method} ${req.routeOptions.url ?? ''}`)) {
    throw new AdminOnlyError();
  }
}

/** Errors as pages: the API's classification (lib/http/errors.ts) with a title and a sentence each. */
function errorPage(error: FastifyError | ApiError | CsrfError, req: FastifyRequest, reply: FastifyReply) {
  const session = req.dashboardSession ?? null;
  const show = (status: number, title: string, message: string) =>
    sendPage(reply, page({ title, session, body: html`<h1>${title}</h1><p>${message}</p><p><a href="/">Back to the overview</a></p>` }), status);
  if (error instanceof AdminOnlyError) {
    return show(
      403,
      'Admins only',
      'Only an admin of your organization can change users, API keys, webhooks, imports or settings. Ask an admin (listed on the Users page).',
    );
  }
  if (error instanceof CsrfError) {
    return show(403, 'Form expired', 'This form could not be verified: it is too old or did not come from this site. Go back, reload the page and try again.');
  }
  if (error instanceof ValidationError) return show(400, 'Bad request', error.message);
  if (error instanceof ApiError) {
    const detail = String(error.body().detail ?? error.message);
    return show(error.status, error.status === 404 ? 'Not found' : 'Request refused', detail);
  }
  // The API's classification (lib/http/errors.ts), shown as pages: 503, a client error, else 500.
  const known = classifyError(error, req.id, {
    unavailable: (err) => req.log.warn({ err }, 'database unavailable'),
    internal: (err) => req.log.error({ err }, 'dashboard error'),
  });
  if (known instanceof ServiceUnavailableError) return show(503, 'Temporarily unavailable', 'The database cannot be reached right now. Try again in a moment.');
  if (known.status >= 400 && known.status < 500) {
    return show(
      known.status,
      'Request refused',
      (error as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'The form was too large.' : 'The request could not be handled.',
    );
  }
  return show(500, 'Something went wrong', `The page could not be shown. Request id: ${req.id}`);
}

/** The dashboard's own routes: assets, then every page. */
function registerRoutes(app: FastifyInstance, ctx: DashboardContext, deps: DashboardDeps) {
  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, async (_req, reply) => {
      reply.header('cache-control', 'public, max-age=86400');
      return reply.type(asset.type).send(asset.body);
    });
  }

  authRoutes(app, ctx);
  integrationRoutes(app, ctx);
  recommendationSettingsRoutes(app, ctx);
  apiKeyRoutes(app, ctx);
  userRoutes(app, ctx);
  accountRoutes(app, ctx);
  auditRoutes(app, ctx);
  dataRoutes(app, ctx);
  detailRoutes(app, ctx);
  // The map polygons are read and simplified once per process, off the first page's time.
  setImmediate(warmMaps);
  eventRoutes(app, ctx);
  importPageRoutes(app, ctx);
  if (deps.webhooks) webhookPageRoutes(app, ctx, deps.webhooks);
}

/**
 * The web dashboard for organization users, server-rendered by the API's own process. Registered as
 * an encapsulated plugin: its form parser, cookies, hooks and HTML error pages apply to its routes
 * only, so nothing under /v2/tms-api changes.
 */
export function dashboardPlugin(deps: DashboardDeps): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const ctx = dashboardContext(deps);

    // Pages are not part of the API's OpenAPI document.
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
      for (const method of [route.method].flat()) {
        if (method !== 'GET' && method !== 'HEAD') deps.writeRoutes?.push({ method, url: route.url, member: MEMBER_WRITES.has(`${method} ${route.url}`) });
      }
    });
    await app.register(fastifyCookie, { secret: ctx.secret.signer });
    app.decorateRequest('dashboardSession', null);
    app.decorateRequest('dashboardToken', null);

    // HTML forms post urlencoded bodies; only the dashboard's routes accept them.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => {
      const form = parseForm(body as string);
      // PostgreSQL cannot store NUL; refusing it here keeps both engines alike (as the API does).
      const values = Object.entries(form).flatMap(([k, v]) => [k, ...[v].flat()]);
      if (values.some((v) => v.includes('\u0000'))) return done(new DetailError('bad_request', 'Form fields must not contain NUL characters'), undefined);
      done(null, form);
    });

    app.addHook('onRequest', (req, reply) => readSession(ctx, req, reply));
    app.setErrorHandler(errorPage);
    registerRoutes(app, ctx, deps);
  };
}
