import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataSnapshot, DataStore } from '../db/index.js';
import type { KeyGuard, Principal } from './principal.js';
import type { Scope } from './scopes.js';
import { ForbiddenError, RateLimitedError, UnauthorizedError } from './errors.js';
import type { RateLimiter, RateLimitResult } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope an API route needs; every route under the API prefix must declare one. */
    scope?: Scope;
    /** Any one of these scopes lets a key in instead (the 403 names `scope`): the event feed's read scopes. */
    anyScope?: readonly Scope[];
    /**
     * The route's handler checks the key inside its one data statement (req.keyGuard): on PostgreSQL a
     * key already found valid on this instance then costs no round trip of its own.
     */
    foldsKeyCheck?: boolean;
  }
  interface FastifyRequest {
    principal?: Principal;
    /** The database as this request arrived, for the answers kept in memory (null: nothing kept). */
    dataSnapshot?: DataSnapshot | null;
    /** Set when the route's data statement must check the key (foldsKeyCheck); the route settles it. */
    keyGuard?: KeyGuard | null;
  }
}

export const API_PREFIX = '/v2/tms-api';

/** Resolves a presented key to its caller; `snapshot` lets it reuse a key checked under unchanged data. */
export interface KeyChecker {
  authenticate(presented: string | undefined, snapshot: DataSnapshot | null): Promise<Principal | null>;
  /** The key for a route that checks it in its own data statement (see FastifyContextConfig.foldsKeyCheck). */
  authenticateFolded?(presented: string | undefined): Promise<{ principal: Principal; guard: KeyGuard | null } | null>;
}

export interface ApiRouteEntry {
  method: string;
  url: string;
  scope: Scope;
  /** Any one of these lets a key in instead (the 403 names `scope`). */
  anyScope?: readonly Scope[];
}

/**
 * Runs a route's read with the request's key guard (foldsKeyCheck routes): the read passes the guard to
 * its statement, which settles it. A read that ends without settling it (an error before its statement,
 * a path without one) has the key read now, so a revoked key never gets another answer than 401.
 */
export async function guardedRead<T>(req: FastifyRequest, read: (guard: KeyGuard | null) => Promise<T>): Promise<T> {
  const guard = req.keyGuard ?? null;
  let out: T;
  try {
    out = await read(guard);
  } catch (err) {
    if (guard && !guard.settled) await guard.confirm();
    throw err;
  }
  if (guard && !guard.settled) await guard.confirm();
  return out;
}

/** The authenticated caller of an API route (the route's onRequest hook has already checked it). */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new UnauthorizedError();
  return req.principal;
}

/**
 * Registers authentication and rate limiting for every route that declares a scope, and records the
 * route table that the security test walks. A route under the API prefix without a scope is a
 * programming error at boot.
 *
 * Order: the key is resolved (401 spends nothing: there is no key to charge), then the request is
 * counted against the key's budget (429 when spent), then the scope is checked (a 403 has been
 * counted: the key is known and the request cost a lookup). Every response after the key is resolved
 * carries the X-RateLimit-* headers, errors included.
 */
export function installAuth(
  app: FastifyInstance,
  store: Pick<DataStore, 'snapshot'>,
  keys: KeyChecker,
  publicApiPaths: ReadonlySet<string>,
  limiter: RateLimiter | null = null,
): ApiRouteEntry[] {
  const table: ApiRouteEntry[] = [];
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX) || publicApiPaths.has(route.url)) return;
    const scope = route.config?.scope;
    if (!scope) throw new Error(`Route ${String(route.method)} ${route.url} declares no scope`);
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD') table.push({ method, url: route.url, scope, ...(route.config?.anyScope ? { anyScope: route.config.anyScope } : {}) });
    }
  });
  const counting = limiter && limiter.mode !== 'off' ? limiter : null;
  app.addHook('onRequest', async (req, reply) => {
    const scope = req.routeOptions.config?.scope;
    if (!scope) return;
    const header = req.headers['x-api-key'];
    const presented = typeof header === 'string' ? header : undefined;
    // One snapshot per request, taken before anything is read: the key check and the read cache share it.
    const snapshot = store.snapshot();
    req.dataSnapshot = snapshot;
    let principal: Principal | null;
    // Where no snapshot exists (PostgreSQL), a route that folds the key check gets it from its statement.
    let folded: Awaited<ReturnType<NonNullable<KeyChecker['authenticateFolded']>>> = null;
    if (!snapshot && req.routeOptions.config?.foldsKeyCheck && keys.authenticateFolded) {
      folded = await keys.authenticateFolded(presented);
      principal = folded?.principal ?? null;
    } else {
      principal = await keys.authenticate(presented, snapshot);
    }
    if (!principal) throw new UnauthorizedError();
    // An answer the route's statement will not give (429, 403) waits for the key read: a revoked key gets 401.
    const refuse = async (err: Error) => {
      await folded?.guard?.confirm();
      throw err;
    };
    if (counting) {
      const pending = counting.consume(principal.keyId, principal.perMinute, principal.perDay);
      const limit: RateLimitResult = pending instanceof Promise ? await pending : pending;
      reply.header('x-ratelimit-limit', limit.limit);
      reply.header('x-ratelimit-remaining', limit.remaining);
      reply.header('x-ratelimit-reset', limit.reset);
      if (!limit.allowed) await refuse(new RateLimitedError(limit.retryAfter));
    }
    const anyScope = req.routeOptions.config?.anyScope;
    const allowed = anyScope ? anyScope.some((s) => principal.scopes.has(s)) : principal.scopes.has(scope);
    if (!allowed) await refuse(new ForbiddenError(scope));
    req.principal = principal;
    req.keyGuard = folded?.guard ?? null;
  });
  return table;
}
