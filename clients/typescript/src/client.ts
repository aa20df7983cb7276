/**
 * The Lanebridge client: openapi-fetch over the generated types (./schema.ts), with what an integrator
 * needs beside them: the API key on every request, an Idempotency-Key on every write, retries with
 * backoff on 429 and 503 that honour Retry-After, and walkers over list pages and the event feed.
 */
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths };
/** The document's named schemas: `Schemas['Load']`, `Schemas['LoadCreate']`, … */
export type Schemas = components['schemas'];

export interface RetryOptions {
  /** Attempts in all, the first included (default 5). */
  maxAttempts?: number;
  /** First backoff when the answer gives no Retry-After; doubled at each attempt, with full jitter (default 500 ms). */
  baseDelayMs?: number;
  /** No wait is longer than this, Retry-After included (default 60 s). */
  maxDelayMs?: number;
  /** How to wait (tests pass a fake). */
  sleep?: (ms: number) => Promise<void>;
}

export interface LanebridgeClientOptions {
  /** Where the service runs, e.g. `https://lanebridge.example.com` (paths start with /v2/tms-api). */
  baseUrl: string;
  /** `lbk_…`, sent as X-API-Key. */
  apiKey: string;
  /** Retries of 429 and 503 answers (and of network failures of requests safe to repeat); false: none. */
  retry?: RetryOptions | false;
  /**
   * An Idempotency-Key (a random UUID) on every POST, PUT and DELETE that does not carry one, so that a
   * retried write is applied once (default true). Pass your own in `params.header['Idempotency-Key']`
   * to make a write safe to repeat across restarts of your process too.
   */
  idempotencyKeys?: boolean;
  /** The fetch to use (default the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

export type LanebridgeClient = Client<paths>;

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Seconds or an HTTP date, as Retry-After carries them; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Whether an answer may be asked again: a 429 was not processed at all; a 503 (database unreachable)
 * or a 409 "still being processed" only when repeating the request is safe (a read, or a write under
 * an Idempotency-Key, which the service applies once).
 */
function retryable(request: Request, response: Response): boolean {
  const safe = !WRITE_METHODS.has(request.method) || request.headers.has('idempotency-key');
  if (response.status === 429) return true;
  if (response.status === 503) return safe;
  if (response.status === 409) return safe && request.headers.has('idempotency-key') && response.headers.has('retry-after');
  return false;
}

/** A fetch that asks again after 429/503 answers, waiting what Retry-After says (else backing off). */
export function retryingFetch(base: (request: Request) => Promise<Response>, options: RetryOptions = {}) {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 5);
  const baseDelay = options.baseDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 60_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const backoff = (attempt: number) => Math.random() * Math.min(maxDelay, baseDelay * 2 ** (attempt - 1));
  return async (request: Request): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await base(request.clone());
      } catch (err) {
        // No answer at all: repeat only what is safe to repeat.
        const safe = !WRITE_METHODS.has(request.method) || request.headers.has('idempotency-key');
        if (!safe || attempt >= maxAttempts) throw err;
        await sleep(backoff(attempt));
        continue;
      }
      if (attempt >= maxAttempts || !retryable(request, response)) return response;
      const told = parseRetryAfter(response.headers.get('retry-after'));
      await response.body?.cancel();
      await sleep(Math.min(maxDelay, told ?? backoff(attempt)));
    }
  };
}

/** A typed client of the Lanebridge API. */
export function createLanebridgeClient(options: LanebridgeClientOptions): LanebridgeClient {
  const base = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: options.retry === false ? base : retryingFetch(base, options.retry),
  });
  client.use({
    onRequest({ request }) {
      request.headers.set('X-API-Key', options.apiKey);
      if (options.idempotencyKeys !== false && WRITE_METHODS.has(request.method) && !request.headers.has('Idempotency-Key')) {
        request.headers.set('Idempotency-Key', globalThis.crypto.randomUUID());
      }
      return request;
    },
  });
  return client;
}

/** An answer that was not a success: its status, body and the request id to quote. */
export class LanebridgeError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly requestId: string | null,
  ) {
    super(`Lanebridge answered ${status}${requestId ? ` (request ${requestId})` : ''}: ${JSON.stringify(body)}`);
    this.name = 'LanebridgeError';
  }
}

type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
/** The list endpoints: a GET answering `{ items, pagination }`. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: infer Op } ? (JsonOk<Op> extends { items: unknown[]; pagination: { has_next: boolean } } ? P : never) : never;
}[keyof paths];
export type ListItem<P extends ListPath> = paths[P] extends { get: infer Op } ? (JsonOk<Op> extends { items: (infer I)[] } ? I : never) : never;
type ListParameters<P extends ListPath> = paths[P] extends { get: { parameters: infer Params } } ? Params : never;
export type ListQuery<P extends ListPath> = ListParameters<P> extends { query?: infer Q } ? Omit<NonNullable<Q>, 'page'> : never;
export type ListPathParams<P extends ListPath> = ListParameters<P> extends { path: infer Params } ? Params : never;

/**
 * Every record of a list, page after page (page_size 100 unless given), until `has_next` is false.
 * Records added or removed while walking can shift pages: for a consistent copy, sort by created_at
 * and use updated_since on the next run.
 */
export async function* walkPages<P extends ListPath>(
  client: LanebridgeClient,
  path: P,
  params: { query?: ListQuery<P>; path?: ListPathParams<P> } = {},
): AsyncGenerator<ListItem<P>> {
  for (let page = 1; ; page++) {
    // openapi-fetch's types cannot follow a path chosen at run time; the answer is typed by ListItem.
    const { data, error, response } = await (client.GET as (p: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(
      path,
      {
        params: { query: { page_size: 100, ...(params.query as object), page }, ...(params.path ? { path: params.path } : {}) },
      },
    );
    if (!data) throw new LanebridgeError(response.status, error, response.headers.get('x-request-id'));
    const body = data as { items: ListItem<P>[]; pagination: { has_next: boolean } };
    yield* body.items;
    if (!body.pagination.has_next || body.items.length === 0) return;
  }
}

/** All records of a list in one array (see walkPages). */
export async function allPages<P extends ListPath>(
  client: LanebridgeClient,
  path: P,
  params: { query?: ListQuery<P>; path?: ListPathParams<P> } = {},
): Promise<ListItem<P>[]> {
  const out: ListItem<P>[] = [];
  for await (const item of walkPages(client, path, params)) out.push(item);
  return out;
}

export type FeedEvent = Schemas['Event'];

/**
 * The change feed from `after` on, oldest first, one page at a time until it is caught up. Store the
 * page's `next_after` once its events are applied, and start the next run from it. A 410 (the events
 * were pruned) is thrown as a LanebridgeError: resynchronise with the list endpoints, then continue from
 * the X-Events-Kept-After header.
 */
export async function* readFeed(
  client: LanebridgeClient,
  options: { after?: number; types?: readonly FeedEvent['type'][]; limit?: number } = {},
): AsyncGenerator<{ items: FeedEvent[]; next_after: number; has_more: boolean }> {
  let after = options.after ?? 0;
  for (;;) {
    const { data, error, response } = await client.GET('/v2/tms-api/events', {
      params: { query: { after, limit: options.limit ?? 500, ...(options.types ? { types: options.types.join(',') } : {}) } },
    });
    if (!data) throw new LanebridgeError(response.status, error, response.headers.get('x-request-id'));
    yield data;
    after = data.next_after;
    if (!data.has_more) return;
  }
}
