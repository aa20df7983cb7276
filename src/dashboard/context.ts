import type { ImportsService } from '../modules/imports/imports.service.js';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../lib/clock.js';
import type { AccountsService } from '../modules/accounts/accounts.service.js';
import type { DashboardSession, SessionsService } from '../modules/accounts/sessions.js';
import type { CarriersService } from '../modules/carriers/carriers.service.js';
import type { CustomersService } from '../modules/customers/customers.service.js';
import type { LoadsService } from '../modules/loads/loads.service.js';
import type { LocationsService } from '../modules/locations/locations.service.js';
import type { InsightsService } from '../modules/insights/insights.service.js';
import type { LanesService } from '../modules/lanes/lanes.service.js';
import type { UsageRecorder } from '../modules/ops/usage.service.js';
import type { FeedEvent } from '../modules/events/events.schema.js';
import { userActor, type AuditActor, type AuditService } from '../modules/audit/audit.js';
import type { SafeHtml } from './html.js';
import type { CookieSecret } from './secret.js';
import type { AttemptLimit, SignInThrottle } from './throttle.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in dashboard user, when the session cookie names a live session. */
    dashboardSession: DashboardSession | null;
    /** The session cookie's token (to sign out), when it names a live session. */
    dashboardToken: string | null;
  }
}

export interface DashboardServices {
  accounts: AccountsService;
  customers: CustomersService;
  carriers: CarriersService;
  locations: LocationsService;
  loads: LoadsService;
  insights: InsightsService;
  /** Lanes: the lane pages rank carriers exactly as recommendations do. */
  lanes: LanesService;
  /** API usage and failed writes (src/modules/ops/usage.service.ts). */
  usage: UsageRecorder;
  /** The audit log. */
  audit: AuditService;
  /** The change feed, newest first (the Events page); `retentionDays`: how long events are kept (EVENT_RETENTION_DAYS). */
  events: { recent(orgId: string, q: { before: number | null; type: string | null; limit: number }): Promise<FeedEvent[]>; retentionDays: number };
  /** Imports (the Imports page). */
  imports?: ImportsService;
}

export type CookieSecureMode = 'auto' | 'on' | 'off';

export interface DashboardContext {
  services: DashboardServices;
  clock: Clock;
  sessions: SessionsService;
  throttle: SignInThrottle;
  /** The setup-code and own-password forms: 5 attempts a minute per client address (keys `form\naddress`). */
  formAttempts: AttemptLimit;
  secret: CookieSecret;
  cookieSecure: CookieSecureMode;
}

export const SESSION_COOKIE = 'lb_session';
/** Carries a random id for the forms shown before sign-in (sign-in, first run): their CSRF token derives from it. */
export const FORM_COOKIE = 'lb_form';

/** A member's change refused (docs/dashboard.md, "Roles, the first run and the audit log"): answered 403 before the route runs. */
export class AdminOnlyError extends Error {
  constructor() {
    super('Only an admin of your organization can do this');
  }
}

/** The audit actor of a dashboard request. */
export function actorOf(req: FastifyRequest, s: DashboardSession): AuditActor {
  return userActor(s, req.ip);
}

/** A form that did not come from this site's page, or whose page is too old: answered 403. */
export class CsrfError extends Error {
  constructor() {
    super('The form could not be verified');
  }
}

export function sendPage(reply: FastifyReply, body: SafeHtml, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(body.value);
}

/** Secure cookies: always, never, or when this request came over TLS (set `on` behind a TLS proxy). */
export function secureCookies(ctx: DashboardContext, req: FastifyRequest): boolean {
  if (ctx.cookieSecure === 'on') return true;
  if (ctx.cookieSecure === 'off') return false;
  return req.protocol === 'https';
}

export function cookieOptions(ctx: DashboardContext, req: FastifyRequest) {
  return { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: secureCookies(ctx, req), signed: true };
}

// ---- form bodies -------------------------------------------------------------------------------

export type FormBody = Record<string, string | string[]>;

/** The first value of a form field (a text input), or '' when absent or not text. */
export function formText(body: unknown, name: string): string {
  if (!body || typeof body !== 'object') return '';
  const v = (body as Record<string, unknown>)[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first : '';
}

/** Every value of a repeated form field (checkboxes). */
export function formList(body: unknown, name: string): string[] {
  if (!body || typeof body !== 'object') return [];
  const v = (body as Record<string, unknown>)[name];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

export function parseForm(text: string): FormBody {
  const out: FormBody = Object.create(null) as FormBody;
  for (const [k, v] of new URLSearchParams(text)) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

// ---- CSRF ----------------------------------------------------------------------------------------

function sameToken(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}

/** A request another site started (browsers say so in Sec-Fetch-Site): refused before any token check. */
function crossSite(req: FastifyRequest): boolean {
  return req.headers['sec-fetch-site'] === 'cross-site';
}

/** The synchronizer token of the signed-in session must come back with every POST. */
export function checkSessionCsrf(req: FastifyRequest): DashboardSession {
  const s = req.dashboardSession;
  if (!s || crossSite(req) || !sameToken(formText(req.body, '_csrf'), s.csrfToken)) throw new CsrfError();
  return s;
}

/**
 * Forms shown before sign-in have no session: their token is an HMAC of a random id kept in a signed
 * cookie, so it is tied to this browser and only this site can produce it.
 */
export function anonymousFormToken(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply): string {
  const existing = req.cookies[FORM_COOKIE];
  const unsigned = existing ? req.unsignCookie(existing) : null;
  let id = unsigned?.valid ? unsigned.value : null;
  if (!id) {
    id = randomBytes(24).toString('base64url');
    reply.setCookie(FORM_COOKIE, id, cookieOptions(ctx, req));
  }
  return ctx.secret.hmac('form', id);
}

export function checkAnonymousCsrf(ctx: DashboardContext, req: FastifyRequest): void {
  const existing = req.cookies[FORM_COOKIE];
  const unsigned = existing ? req.unsignCookie(existing) : null;
  if (!unsigned?.valid || !unsigned.value || crossSite(req)) throw new CsrfError();
  if (!sameToken(formText(req.body, '_csrf'), ctx.secret.hmac('form', unsigned.value))) throw new CsrfError();
}

/** Where to go after signing in: only a path on this site (never `//evil.example`). */
export function safeNext(value: string | undefined): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.includes('\\') || [...value].some((ch) => ch.charCodeAt(0) < 0x20)) return '/';
  return value;
}

/** Pages need a signed-in user; without one a GET goes to sign-in and comes back, anything else is sent there. */
export function requireSession(req: FastifyRequest, reply: FastifyReply): DashboardSession | null {
  if (req.dashboardSession) return req.dashboardSession;
  const next = req.method === 'GET' ? safeNext(req.url) : '/';
  void reply.redirect(next === '/' ? '/signin' : `/signin?next=${encodeURIComponent(next)}`, 303);
  return null;
}

export type SessionHandler = (req: FastifyRequest, reply: FastifyReply, s: DashboardSession) => Promise<unknown>;

/** A page handler for the signed-in user: without a session, requireSession's redirect instead. */
export function sessionPage(handler: SessionHandler) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const s = requireSession(req, reply);
    if (!s) return reply;
    return handler(req, reply, s);
  };
}

/** A form post of the signed-in user: its CSRF token is checked before the handler runs. */
export function sessionForm(handler: SessionHandler) {
  return sessionPage((req, reply, s) => {
    checkSessionCsrf(req);
    return handler(req, reply, s);
  });
}

/** The message of a `?done=…` redirect (after a form post), from a page's own list; undefined for any other value. */
export function doneMessage(req: FastifyRequest, messages: Record<string, string>): string | undefined {
  return messages[(req.query as Record<string, string | undefined>).done ?? ''];
}

/** The `:id` of a route's path. */
export const idParam = (params: unknown) => String((params as { id?: string }).id ?? '');
