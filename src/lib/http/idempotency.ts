/**
 * Safe retries (docs/api.md, "Safe retries: `Idempotency-Key`"): the `Idempotency-Key` header on every
 * POST, PUT and DELETE under the API prefix, batches and market rates included. One place implements it,
 * as hooks every write route gets when it is declared (reads get none and pay nothing):
 *
 * - preValidation: a malformed key is 422 on ["header","idempotency-key"] (after the key check, the rate
 *   limit and the scope, which run on every request, replays included);
 * - preHandler: the key is claimed in the database (a row committed at once, unique per organization
 *   and key, so every instance sees it) before the handler runs; a key already held answers from the
 *   row: the stored answer with `Idempotent-Replayed: true` (the handler is not called: nothing is
 *   written, no analytics run), 422 `idempotency_key_reused` for another method, path or body, 409 with
 *   `Retry-After: 1` while its first request is running;
 * - onSend: the answer is stored when the handler produced it (2xx, 404, 409, 422); any other (5xx) gives
 *   the claim up, so a retry runs.
 *
 * A claim has a lease (the batch deadline and a margin): a process that dies while running a request
 * leaves its claim behind, and a retry after the lease runs the request again. Keys are kept
 * `IDEMPOTENCY_TTL_HOURS`, then pruned by the instances themselves, a bounded number at a time.
 */
import { hash, randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../clock.js';
import type { Executor } from '../db/executor.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  pruneIdempotencyKeys,
  releaseIdempotencyKey,
  takeOverIdempotencyKey,
  type IdempotencyRow,
} from '../db/idempotency-keys.js';
import { API_PREFIX } from './auth.js';
import { IdempotencyKeyInProgressError, IdempotencyKeyReusedError, ValidationError, type ValidationIssue } from './errors.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

const WRITE_METHODS = new Set(['POST', 'PUT', 'DELETE']);
const MAX_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const LOC = ['header', IDEMPOTENCY_KEY_HEADER];

export interface IdempotencyOptions {
  db: Executor;
  clock: Clock;
  /** How long a key and its answer are kept (IDEMPOTENCY_TTL_HOURS). */
  ttlHours: number;
  /** How long a claim holds the key before a retry may run the request again (a crashed process). */
  leaseMs: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
  /** At most one pruning round per this many milliseconds (of the clock) per instance (default a minute). */
  pruneEveryMs?: number;
  /** Keys deleted per statement while pruning (default 500). */
  pruneBatch?: number;
}

/** Whether an answer is stored for replay: what the handler decided, not a failure to retry. */
export function isStoredStatus(status: number): boolean {
  return (status >= 200 && status < 300) || status === 404 || status === 409 || status === 422;
}

/** What is wrong with a presented key, or null (1 to 255 printable ASCII characters). */
export function keyIssue(key: string): ValidationIssue | null {
  if (key.length === 0) return { type: 'string_too_short', loc: LOC, msg: 'String should have at least 1 character' };
  if (key.length > MAX_KEY_LENGTH) return { type: 'string_too_long', loc: LOC, msg: `String should have at most ${MAX_KEY_LENGTH} characters` };
  if (!PRINTABLE_ASCII.test(key)) {
    return { type: 'string_pattern_mismatch', loc: LOC, msg: 'Idempotency-Key must be printable ASCII characters (space to ~)' };
  }
  return null;
}

/**
 * JSON with every object's keys sorted: two bodies that differ only in key order read the same. What
 * JSON.stringify would write otherwise (undefined members left out, in arrays null), written by hand:
 * it runs on every keyed write, batches of 100 loads included. Iterative, with a stack of its own: a
 * body nested far deeper than the call stack (an ignored field of 100,000 arrays) is written like any
 * other (issue 26: it was a stack overflow, answered 500).
 */
export function canonicalJson(value: unknown): string {
  let out = '';
  // Work items: a value to write, or a piece of text (a separator, a closing bracket, a key).
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item instanceof Piece) {
      out += item.text;
      continue;
    }
    switch (typeof item) {
      case 'string':
        out += JSON.stringify(item);
        break;
      case 'number':
        out += Number.isFinite(item) ? String(item) : 'null';
        break;
      case 'boolean':
        out += item ? 'true' : 'false';
        break;
      case 'object': {
        if (item === null) {
          out += 'null';
          break;
        }
        if (Array.isArray(item)) {
          out += '[';
          stack.push(CLOSE_ARRAY);
          for (let i = item.length - 1; i >= 0; i--) {
            const v: unknown = item[i];
            stack.push(v === undefined || typeof v === 'function' ? null : v);
            if (i > 0) stack.push(COMMA);
          }
          break;
        }
        const obj = item as Record<string, unknown>;
        const keys = Object.keys(obj)
          .filter((k) => obj[k] !== undefined && typeof obj[k] !== 'function')
          .sort();
        out += '{';
        stack.push(CLOSE_OBJECT);
        for (let i = keys.length - 1; i >= 0; i--) {
          const k = keys[i]!;
          stack.push(obj[k]);
          stack.push(new Piece(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`));
        }
        break;
      }
      default:
        out += 'null';
    }
  }
  return out;
}

/** A piece of canonicalJson's output waiting on its stack (never a value of the input). */
class Piece {
  constructor(readonly text: string) {}
}
const COMMA = new Piece(',');
const CLOSE_ARRAY = new Piece(']');
const CLOSE_OBJECT = new Piece('}');

/** SHA-256 (base64url) of method, path and the canonical JSON of the parsed body (none: empty). */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return hash('sha256', `${method}\n${path}\n${body === undefined ? '' : canonicalJson(body)}`, 'base64url');
}

/** The request's path without its query, one trailing slash ignored (the router ignores it too). */
function pathOf(req: FastifyRequest): string {
  const url = req.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function presentedKey(req: FastifyRequest): string | undefined {
  const raw = req.headers[IDEMPOTENCY_KEY_HEADER];
  return Array.isArray(raw) ? raw.join(', ') : raw;
}

interface Claim {
  orgId: string;
  key: string;
  claim: string;
}

type HookList<T> = T | T[] | undefined;
function appendHook<T>(existing: HookList<T>, hook: T): T[] {
  return [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]), hook];
}

export interface Idempotency {
  /** One pruning pass now (tests; the instances prune by themselves). Returns the keys deleted. */
  prune(): Promise<number>;
}

/** Installs the hooks on every write route declared from now on; call before the routes are declared. */
export function installIdempotency(app: FastifyInstance, o: IdempotencyOptions): Idempotency {
  const claims = new WeakMap<FastifyRequest, Claim>();
  const { maybePrune, pruneOnce } = backgroundPruning(app, o);
  const claimOrAnswer = claimHook(o, claims, maybePrune);
  const settle = settleHook(o, claims);

  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith(API_PREFIX) || !route.config?.scope) return;
    if (![route.method].flat().some((m) => WRITE_METHODS.has(String(m)))) return;
    route.preValidation = appendHook(route.preValidation as HookList<typeof checkKey>, checkKey) as never;
    route.preHandler = appendHook(route.preHandler as HookList<typeof claimOrAnswer>, claimOrAnswer) as never;
    route.onSend = appendHook(route.onSend as HookList<typeof settle>, settle) as never;
  });

  return {
    async prune() {
      return pruneOnce();
    },
  };
}

/** Pruning: in the background after a claim, at most once per pruneEveryMs; never awaited by a request. */
function backgroundPruning(app: FastifyInstance, o: IdempotencyOptions) {
  const pruneEveryMs = o.pruneEveryMs ?? 60_000;
  const pruneBatch = o.pruneBatch ?? 500;
  let lastPruneAt = -Infinity;
  let pruning: Promise<void> | null = null;
  let closed = false;
  const pruneOnce = () => pruneIdempotencyKeys(o.db, o.clock.now().toISOString(), pruneBatch);
  const pruneInBackground = () => {
    pruning = (async () => {
      try {
        // A full batch means more are due: go on, with a pause between statements so requests interleave.
        for (let round = 0; round < 20 && !closed; round++) {
          if ((await pruneOnce()) < pruneBatch) break;
          await new Promise<void>((r) => setTimeout(r, 100).unref());
        }
      } catch (err) {
        if (!closed) o.log.warn({ err }, 'pruning expired idempotency keys failed (retried later)');
      } finally {
        pruning = null;
      }
    })();
  };
  const maybePrune = (nowMs: number) => {
    if (pruning || closed || nowMs - lastPruneAt < pruneEveryMs) return;
    lastPruneAt = nowMs;
    pruneInBackground();
  };
  app.addHook('onClose', async () => {
    closed = true;
    await pruning;
  });
  return { maybePrune, pruneOnce };
}

// --- the hooks of a write route

/** preValidation: a presented key must be well formed. */
function checkKey(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
  const key = presentedKey(req);
  if (key === undefined || !WRITE_METHODS.has(req.method)) return done();
  const issue = keyIssue(key);
  done(issue ? new ValidationError([issue]) : undefined);
}

/** The stored answer again, marked Idempotent-Replayed. */
function replay(reply: FastifyReply, row: IdempotencyRow) {
  reply.code(row.status!).header(REPLAYED_HEADER, 'true');
  if (row.content_type) reply.header('content-type', row.content_type);
  return reply.send(row.body === null || row.body === '' ? undefined : row.body);
}

/** preHandler: claims the key, or answers with the stored answer, or refuses (reused key, still in progress). */
function claimHook(o: IdempotencyOptions, claims: WeakMap<FastifyRequest, Claim>, maybePrune: (nowMs: number) => void) {
  const ttlMs = o.ttlHours * 3_600_000;
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const key = presentedKey(req);
    if (key === undefined || !WRITE_METHODS.has(req.method) || !req.principal) return;
    const orgId = req.principal.orgId;
    const fingerprint = requestFingerprint(req.method, pathOf(req), req.body);
    const now = o.clock.now();
    const nowIso = now.toISOString();
    const row: IdempotencyRow = {
      org_id: orgId,
      key,
      fingerprint,
      claim: randomUUID(),
      status: null,
      content_type: null,
      body: null,
      created_at: nowIso,
      lease_until: new Date(now.getTime() + o.leaseMs).toISOString(),
      expires_at: new Date(now.getTime() + ttlMs).toISOString(),
    };
    const own = () => {
      claims.set(req, { orgId, key, claim: row.claim });
      maybePrune(now.getTime());
    };
    // A few rounds: the row read may be released, pruned or taken over between two statements.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await claimIdempotencyKey(o.db, row)) return own();
      const held = await findIdempotencyKey(o.db, orgId, key);
      if (!held) continue;
      // Past its retention the key is free again, whatever it was used for.
      if (held.expires_at <= nowIso) {
        if (await takeOverIdempotencyKey(o.db, held.claim, row)) return own();
        continue;
      }
      if (held.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
      if (held.status !== null) return replay(reply, held);
      if (held.lease_until > nowIso) throw new IdempotencyKeyInProgressError();
      // The claim outlived its lease: its process died (or lost the database) before answering.
      if (await takeOverIdempotencyKey(o.db, held.claim, { ...row, created_at: held.created_at, expires_at: held.expires_at })) return own();
    }
    throw new IdempotencyKeyInProgressError();
  };
}

/** onSend: stores the answer under the claimed key, or releases the key when the answer is not kept. */
function settleHook(o: IdempotencyOptions, claims: WeakMap<FastifyRequest, Claim>) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = claims.get(req);
    if (!claim) return payload;
    claims.delete(req);
    const status = reply.statusCode;
    const body =
      payload === null || payload === undefined ? '' : typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    try {
      if (isStoredStatus(status) && body !== null) {
        const contentType = reply.getHeader('content-type');
        await completeIdempotencyKey(o.db, { ...claim, status, contentType: typeof contentType === 'string' ? contentType : null, body });
      } else {
        await releaseIdempotencyKey(o.db, claim.orgId, claim.key, claim.claim);
      }
    } catch (err) {
      // The answer still goes out; the claim stays until its lease ends (a retry meanwhile gets 409).
      req.log.warn({ err }, 'could not record the outcome of an Idempotency-Key');
    }
    return payload;
  };
}

/**
 * The OpenAPI side (called on the generated document): the optional `Idempotency-Key` header on every
 * write operation, and `Idempotent-Replayed` on the answers that can be replayed.
 */
export function documentIdempotency(doc: Record<string, unknown>): void {
  const components = (doc.components ??= {}) as Record<string, Record<string, unknown>>;
  (components.parameters ??= {}).IdempotencyKey = {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the request safe to retry: one new key per logical operation, sent again only when retrying it. ' +
      'Kept IDEMPOTENCY_TTL_HOURS (default 24 hours) per organization. The same key with the same method, path and body answers the stored ' +
      'status and body (Idempotent-Replayed: true) and writes nothing; with another method, path or body: 422 ' +
      "'idempotency_key_reused'; while the first request is still running: 409 with Retry-After: 1.",
    schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH, pattern: '^[\\x20-\\x7E]+$' },
    example: '5f0c7a52-2f9e-4a8e-9a57-1b0f3c6b8e21',
  };
  const headers = (components.headers ??= {});
  headers.IdempotentReplayed = {
    description: "'true' when this answer is the stored answer of an earlier request with the same Idempotency-Key (nothing was written again).",
    schema: { type: 'string', enum: ['true'] },
  };
  headers.IdempotencyRetryAfter = {
    description: 'Seconds to wait before retrying: 1 when a request with the same Idempotency-Key is still being processed.',
    schema: { type: 'integer', minimum: 1 },
  };
  const paths = (doc.paths ?? {}) as Record<
    string,
    Record<string, { parameters?: unknown[]; responses?: Record<string, { headers?: Record<string, unknown> }> }>
  >;
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.startsWith(API_PREFIX)) continue;
    for (const [method, op] of Object.entries(operations)) {
      if (!WRITE_METHODS.has(method.toUpperCase()) || !op || typeof op !== 'object') continue;
      op.parameters = [...(op.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }];
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!isStoredStatus(Number(status))) continue;
        response.headers = { ...(response.headers ?? {}), 'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' } };
        if (status === '409') response.headers['Retry-After'] = { $ref: '#/components/headers/IdempotencyRetryAfter' };
      }
    }
  }
}
