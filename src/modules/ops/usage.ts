import { randomUUID } from 'node:crypto';
import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../lib/clock.js';
import type { Db } from '../../lib/db/index.js';
import type { Principal } from '../../lib/http/principal.js';
import { maskApiKeys } from '../../lib/http/logging.js';

/**
 * Integration health (issue 19): API usage per key and UTC hour split 2xx / 4xx / 5xx / 429, and a
 * bounded log of failed writes (single requests and batch items) with their reference, status and
 * detail. A request only bumps counters in memory and, when it failed a write, queues a row; a timer
 * flushes both every few seconds as upserts in one transaction, so the request path never writes.
 */

export interface ApiUsageHourlyTable {
  org_id: string;
  key_id: string;
  hour: string;
  ok: number;
  client_errors: number;
  server_errors: number;
  rate_limited: number;
  last_request_at: string;
}

export interface FailedWritesTable {
  id: string;
  org_id: string;
  key_id: string;
  occurred_at: string;
  method: string;
  path: string;
  resource: string;
  operation: string;
  reference: string | null;
  batch_index: number | null;
  status: number;
  detail: string;
  request_id: string | null;
}

/** Fields ignored per key, route and field (positions left out: `body.contacts[].phone_number`), for the dashboard (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`"). */
export interface IgnoredFieldsTable {
  org_id: string;
  key_id: string;
  route: string;
  field: string;
  count: number;
  first_seen_at: string;
  last_seen_at: string;
}

interface UsageTables {
  api_usage_hourly: ApiUsageHourlyTable;
  failed_writes: FailedWritesTable;
  ignored_fields: IgnoredFieldsTable;
}

export interface UsageOptions {
  db: Db;
  clock: Clock;
  log?: FastifyBaseLogger;
  /** How often the counters are written (ms); 0: only by `flush()` (tests, benchmarks). */
  flushMs?: number;
  /** Failed writes are kept this many days (the Overview shows the last 7). */
  retentionDays?: number;
  /** At most this many failed writes are kept per organization (the newest). */
  maxFailedPerOrg?: number;
  /** A 429 is answered before the key's principal is set: the key is found again (a cached read). */
  keyOf?: (presented: string) => Promise<Principal | null>;
}

/** A failed write's place in the newest-first order (the Overview's pages). */
export interface FailedWriteCursor {
  occurred_at: string;
  id: string;
}

export const USAGE_FLUSH_MS = 10_000;
export const FAILED_WRITES_RETENTION_DAYS = 7;
export const MAX_FAILED_WRITES_PER_ORG = 2_000;
// Rows queued between flushes; past this (a flood of failures) the newest are dropped, not the process's memory.
const MAX_PENDING_FAILED = 10_000;
const MAX_DETAIL_CHARS = 4_000;
const API_PREFIX = '/v2/tms-api/';
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const OPERATION_OF: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

/** One key's counts in one UTC hour; times as epoch milliseconds, turned into text only when written. */
interface Counter {
  orgId: string;
  keyId: string;
  hour: number;
  ok: number;
  clientErrors: number;
  serverErrors: number;
  rateLimited: number;
  last: number;
}

const HOUR_MS = 3_600_000;
const hourOf = (iso: string) => `${iso.slice(0, 13)}:00:00Z`;
const hourText = (hour: number) => hourOf(new Date(hour * HOUR_MS).toISOString());

function parseJson(payload: unknown): unknown {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return undefined;
  try {
    return JSON.parse(String(payload));
  } catch {
    return undefined;
  }
}

function detailText(detail: unknown): string {
  const text = typeof detail === 'string' ? detail : JSON.stringify(detail ?? null);
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text;
}

/** `/v2/tms-api/batch/loads` → `loads` (batch), `/v2/tms-api/locations/LOC-1` → `locations`. */
function resourceOf(path: string): { resource: string; batch: boolean } {
  const parts = path.slice(API_PREFIX.length).split('/');
  if (parts[0] === 'batch') return { resource: parts[1] ?? 'batch', batch: true };
  return { resource: parts[0] ?? '', batch: false };
}

export function usageRecorder(o: UsageOptions) {
  const db = (o.db as unknown as Kysely<UsageTables>);
  // The current hour's counter of each key (a key belongs to one organization), and counters of hours
  // that ended (or of a clock set back) since the last flush.
  const counters = new Map<string, Counter>();
  let closed: Counter[] = [];
  let pending: FailedWritesTable[] = [];
  // Ignored fields counted between flushes, by org, key, route and field.
  let ignored = new Map<string, { orgId: string; keyId: string; route: string; field: string; count: number; first: number; last: number }>();
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;
  let lastPrune = 0;
  const retentionDays = o.retentionDays ?? FAILED_WRITES_RETENTION_DAYS;
  const maxPerOrg = o.maxFailedPerOrg ?? MAX_FAILED_WRITES_PER_ORG;

  // On every API request: numbers and one lookup by the key's id (a string the key cache keeps, so
  // its hash is computed once), no date text. bench/usage.bench.ts measures what this costs a read.
  function count(principal: Pick<Principal, 'orgId' | 'keyId'>, status: number, nowMs = o.clock.now().getTime()) {
    const hour = Math.floor(nowMs / HOUR_MS);
    let c = counters.get(principal.keyId);
    if (c === undefined || c.hour !== hour) {
      if (c !== undefined) closed.push(c);
      c = { orgId: principal.orgId, keyId: principal.keyId, hour, ok: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0, last: nowMs };
      counters.set(principal.keyId, c);
    }
    if (status < 400) c.ok++;
    else if (status === 429) c.rateLimited++;
    else if (status >= 500) c.serverErrors++;
    else c.clientErrors++;
    if (nowMs > c.last) c.last = nowMs;
  }

  /** The fields a request's answer said it ignored (a few map lookups; written by the flush). */
  function countIgnored(principal: Pick<Principal, 'orgId' | 'keyId'>, route: string, fields: readonly string[], nowMs = o.clock.now().getTime()) {
    for (const field of fields) {
      const id = `${principal.keyId}\u0000${route}\u0000${field}`;
      const c = ignored.get(id);
      if (c) {
        c.count++;
        if (nowMs > c.last) c.last = nowMs;
      } else if (ignored.size < MAX_PENDING_FAILED) {
        ignored.set(id, { orgId: principal.orgId, keyId: principal.keyId, route, field, count: 1, first: nowMs, last: nowMs });
      }
    }
  }

  function queueFailure(row: Omit<FailedWritesTable, 'id'>) {
    if (pending.length >= MAX_PENDING_FAILED) return;
    // A key pasted into a URL or a reference is not kept in clear (the dashboard shows these rows to members).
    pending.push({ id: randomUUID(), ...row, path: maskApiKeys(row.path), reference: row.reference === null ? null : maskApiKeys(row.reference), detail: maskApiKeys(row.detail) });
  }

  /** The failed writes in a write's answer: the request itself (4xx/5xx), or a batch's failed items. */
  function captureFailures(req: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const principal = req.principal;
    if (!principal || !WRITE_METHODS.has(req.method)) return;
    const path = (req.routeOptions.url ?? req.url.split('?')[0] ?? '').startsWith(API_PREFIX) ? req.url.split('?')[0]! : '';
    if (!path) return;
    const status = reply.statusCode;
    if (status === 429 || status < 200) return;
    if (reply.getHeader('idempotent-replayed')) return;
    const { resource, batch } = resourceOf(path);
    const base = { org_id: principal.orgId, key_id: principal.keyId, occurred_at: o.clock.now().toISOString(), method: req.method, path, resource, request_id: String(req.id) };
    if (status < 400) {
      // Batches answer 200 whatever their items did; only a body that names a failure is parsed.
      if (!batch || typeof payload !== 'string' || !payload.includes('"success":false')) return;
      const body = parseJson(payload) as { results?: { index: number; external_reference_id: string | null; operation: string; success: boolean; error?: { status: number; detail: unknown } }[] } | undefined;
      for (const r of body?.results ?? []) {
        if (r.success) continue;
        queueFailure({ ...base, operation: r.operation, reference: r.external_reference_id, batch_index: r.index, status: r.error?.status ?? 0, detail: detailText(r.error?.detail) });
      }
      return;
    }
    const params = (req.params ?? {}) as Record<string, unknown>;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const fromParams = Object.values(params).find((v) => typeof v === 'string');
    const reference = typeof fromParams === 'string' ? fromParams : typeof body.external_reference_id === 'string' ? body.external_reference_id : null;
    const answer = parseJson(payload) as { detail?: unknown; error?: { message?: string } } | undefined;
    queueFailure({
      ...base,
      operation: batch ? 'batch' : (OPERATION_OF[req.method] ?? req.method.toLowerCase()),
      reference: reference === null ? null : reference.slice(0, 255),
      batch_index: null,
      status,
      detail: detailText(answer?.detail ?? answer?.error?.message ?? null),
    });
  }

  async function writeOut(): Promise<void> {
    const rows = [...closed, ...counters.values()];
    counters.clear();
    closed = [];
    const failed = pending;
    pending = [];
    const ignoredNow = [...ignored.values()];
    ignored = new Map();
    if (rows.length === 0 && failed.length === 0 && ignoredNow.length === 0) return;
    try {
      await db.transaction().execute(async (tx) => {
        for (const c of rows) {
          await tx
            .insertInto('api_usage_hourly')
            .values({ org_id: c.orgId, key_id: c.keyId, hour: hourText(c.hour), ok: c.ok, client_errors: c.clientErrors, server_errors: c.serverErrors, rate_limited: c.rateLimited, last_request_at: new Date(c.last).toISOString() })
            .onConflict((oc) =>
              oc.columns(['org_id', 'hour', 'key_id']).doUpdateSet({
                ok: sql`api_usage_hourly.ok + excluded.ok`,
                client_errors: sql`api_usage_hourly.client_errors + excluded.client_errors`,
                server_errors: sql`api_usage_hourly.server_errors + excluded.server_errors`,
                rate_limited: sql`api_usage_hourly.rate_limited + excluded.rate_limited`,
                last_request_at: sql`case when excluded.last_request_at > api_usage_hourly.last_request_at then excluded.last_request_at else api_usage_hourly.last_request_at end`,
              }),
            )
            .execute();
        }
        for (let i = 0; i < failed.length; i += 100) await tx.insertInto('failed_writes').values(failed.slice(i, i + 100)).execute();
        for (const c of ignoredNow) {
          const first = new Date(c.first).toISOString();
          const last = new Date(c.last).toISOString();
          await tx
            .insertInto('ignored_fields')
            .values({ org_id: c.orgId, key_id: c.keyId, route: c.route, field: c.field, count: c.count, first_seen_at: first, last_seen_at: last })
            .onConflict((oc) =>
              oc.columns(['org_id', 'key_id', 'route', 'field']).doUpdateSet({
                count: sql`ignored_fields.count + excluded.count`,
                last_seen_at: sql`case when excluded.last_seen_at > ignored_fields.last_seen_at then excluded.last_seen_at else ignored_fields.last_seen_at end`,
              }),
            )
            .execute();
        }
      });
    } catch (err) {
      // Usage is best effort: a database away for a moment loses these counts, never a request.
      o.log?.warn({ err }, 'usage counters not written');
      return;
    }
    const now = o.clock.now().getTime();
    if (failed.length > 0 || now - lastPrune > 60_000) await prune(new Set(failed.map((f) => f.org_id))).catch((err) => o.log?.warn({ err }, 'usage prune failed'));
  }

  /** Keeps the log bounded: older than the retention, or past the per-organization cap, goes. */
  async function prune(orgs: Set<string>) {
    const now = o.clock.now();
    lastPrune = now.getTime();
    const cutoff = new Date(now.getTime() - retentionDays * 86_400_000).toISOString();
    await db.deleteFrom('failed_writes').where('occurred_at', '<', cutoff).execute();
    // Ignored fields not seen for the retention period go: the integration was fixed.
    await db.deleteFrom('ignored_fields').where('last_seen_at', '<', cutoff).execute();
    // Hourly usage is kept a day longer than the 7 days the charts show.
    await db.deleteFrom('api_usage_hourly').where('hour', '<', hourOf(new Date(now.getTime() - (retentionDays + 1) * 86_400_000).toISOString())).execute();
    for (const orgId of orgs) {
      const edge = await db
        .selectFrom('failed_writes')
        .select(['occurred_at', 'id'])
        .where('org_id', '=', orgId)
        .orderBy('occurred_at', 'desc')
        .orderBy('id', 'desc')
        .offset(maxPerOrg)
        .limit(1)
        .executeTakeFirst();
      if (edge) {
        await db
          .deleteFrom('failed_writes')
          .where('org_id', '=', orgId)
          .where((eb) => eb.or([eb('occurred_at', '<', edge.occurred_at), eb.and([eb('occurred_at', '=', edge.occurred_at), eb('id', '<=', edge.id)])]))
          .execute();
      }
    }
  }

  /** Writes what is counted so far (the timer, the dashboard before it reads, shutdown). */
  function flush(): Promise<void> {
    if (flushing) return flushing.then(() => flush());
    flushing = writeOut().finally(() => (flushing = null));
    return flushing;
  }

  return {
    count,
    countIgnored,
    captureFailures,
    flush,
    prune: () => prune(new Set()),
    /** Counters and failures waiting for the next flush (tests, benchmarks). */
    pendingSize: () => ({ counters: counters.size + closed.length, failed: pending.length, ignored: ignored.size }),
    start() {
      const every = o.flushMs ?? USAGE_FLUSH_MS;
      if (every > 0 && !timer) {
        timer = setInterval(() => void flush(), every);
        timer.unref();
      }
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await flush();
    },

    /** The organization's hourly usage since `sinceIso`, every key. */
    hourly(orgId: string, sinceIso: string) {
      return db.selectFrom('api_usage_hourly').selectAll().where('org_id', '=', orgId).where('hour', '>=', hourOf(sinceIso)).orderBy('hour').execute();
    },

    /** The organization's ignored fields seen since `sinceIso`, most counted first. */
    ignoredFields(orgId: string, sinceIso: string, limit = 100) {
      return db
        .selectFrom('ignored_fields')
        .selectAll()
        .where('org_id', '=', orgId)
        .where('last_seen_at', '>=', sinceIso)
        .orderBy('count', 'desc')
        .orderBy('last_seen_at', 'desc')
        .orderBy('field')
        .limit(limit)
        .execute();
    },

    /**
     * Failed writes since `sinceIso`, newest first, at most `limit`: the newest, or those just older
     * (`before`) or just newer (`after`) than a row, by (occurred_at, id), a keyset the
     * failed_writes_org_idx index serves and that new failures do not shift. With the count of them
     * all and of those newer than the first row returned (its position).
     */
    async failedWrites(orgId: string, sinceIso: string, limit: number, page: { before?: FailedWriteCursor; after?: FailedWriteCursor } = {}) {
      const since = () => db.selectFrom('failed_writes').where('org_id', '=', orgId).where('occurred_at', '>=', sinceIso);
      const newerThan = (c: FailedWriteCursor) => (eb: ExpressionBuilder<UsageTables, 'failed_writes'>) =>
        eb.or([eb('occurred_at', '>', c.occurred_at), eb.and([eb('occurred_at', '=', c.occurred_at), eb('id', '>', c.id)])]);
      const olderThan = (c: FailedWriteCursor) => (eb: ExpressionBuilder<UsageTables, 'failed_writes'>) =>
        eb.or([eb('occurred_at', '<', c.occurred_at), eb.and([eb('occurred_at', '=', c.occurred_at), eb('id', '<', c.id)])]);
      const countOf = (q: ReturnType<typeof since>) => q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirst().then((r) => Number(r?.n ?? 0));
      const newest = (q = since()) => q.selectAll().orderBy('occurred_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
      const rowsPromise = page.after
        ? since()
            .selectAll()
            .where(newerThan(page.after))
            .orderBy('occurred_at', 'asc')
            .orderBy('id', 'asc')
            .limit(limit)
            .execute()
            // Fewer than a page newer than the cursor: that is the newest page, shown whole.
            .then((r) => (r.length < limit ? newest() : r.reverse()))
        : newest(page.before ? since().where(olderThan(page.before)) : since());
      const [rows, total] = await Promise.all([rowsPromise, countOf(since())]);
      const newer = rows.length > 0 ? await countOf(since().where(newerThan(rows[0]!))) : 0;
      return { rows, total, newer };
    },
  };
}

export type UsageRecorder = ReturnType<typeof usageRecorder>;

/**
 * The hooks: failures are read from the answer as it is sent (its 422 detail, a batch's failed items),
 * counts when it has gone. Only requests with an API key are counted (a 401 names no key).
 */
export function installUsage(app: FastifyInstance, usage: UsageRecorder, keyOf?: UsageOptions['keyOf']) {
  // Callback-style hooks, not async ones (every API request passes onResponse). Failures are only
  // looked for on write routes (declared after this call), so reads pass no onSend hook.
  const capture = (req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (req.principal) usage.captureFailures(req, reply, payload);
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    if (![route.method].flat().some((m) => WRITE_METHODS.has(String(m)))) return;
    route.onSend = [...(route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend]), capture] as never;
  });
  app.addHook('onResponse', (req, reply, done) => {
    if (req.principal) {
      usage.count(req.principal, reply.statusCode);
      return done();
    }
    const header = req.headers['x-api-key'];
    if (reply.statusCode !== 429 || !keyOf || typeof header !== 'string') return done();
    keyOf(header)
      .then((principal) => {
        if (principal) usage.count(principal, 429);
      })
      .catch(() => undefined)
      .finally(() => done());
  });
  app.addHook('onClose', () => usage.stop());
}
