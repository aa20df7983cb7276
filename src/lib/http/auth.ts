import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataSnapshot, DataStore } from '../db/index.js';
import type { Principal } from './principal.js';
import type { Scope } from './scopes.js';
import { ForbiddenError, RateLimitedError, UnauthorizedError } from './errors.js';
import type { RateLimiter, RateLimitResult } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope an API route needs; every route under the API prefix must declare one. */
    scope?: Scope;
  }
  interface FastifyRequest {
    principal?: Principal;
    /** The database as this request arrived, for the answers kept in memory (null: nothing kept). */
    dataSnapshot?: DataSnapshot | null;
  }
}

export const API_PREFIX = '/v2/tms-api';

/** Resolves a presented key to its caller; `snapshot` lets it reuse a key checked under unchanged data. */
export interface KeyChecker {
  authenticate(presented: string | undefined, snapshot: DataSnapshot | null): Promise<Principal | null>;
}

export interface ApiRouteEntry {
  method: string;
  url: string;
  scope: Scope;
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
      if (method !== 'HEAD') table.push({ method, url: route.url, scope });
    }
  });
  const counting = limiter && limiter.mode !== 'off' ? limiter : null;
  app.addHook('onRequest', async (req, reply) => {
    const scope = req.routeOptions.config?.scope;
    if (!scope) return;
    const header = req.headers['x-api-key'];
    // One snapshot per request, taken before anything is read: the key check and the read cache share it.
    const snapshot = store.snapshot();
    req.dataSnapshot = snapshot;
    const principal = await keys.authenticate(typeof header === 'string' ? header : undefined, snapshot);
    if (!principal) throw new UnauthorizedError();
    if (counting) {
      const pending = counting.consume(principal.keyId, principal.perMinute, principal.perDay);
      const limit: RateLimitResult = pending instanceof Promise ? await pending : pending;
      reply.header('x-ratelimit-limit', limit.limit);
      reply.header('x-ratelimit-remaining', limit.remaining);
      reply.header('x-ratelimit-reset', limit.reset);
      if (!limit.allowed) throw new RateLimitedError(limit.retryAfter);
    }
    if (!principal.scopes.has(scope)) throw new ForbiddenError(scope);
    req.principal = principal;
  });
  return table;
}
