import { randomUUID } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import type { Db } from '../../lib/db/index.js';
import type { ApiUsageHourlyTable, FailedWritesTable, IgnoredFieldsTable } from '../../lib/db/types.js';
import { maskApiKeys } from '../../lib/http/logging.js';
import type { Principal } from '../../lib/http/principal.js';
import { deleteUsageBefore, failedWritesPage, ignoredFieldsSince, trimFailedWrites, usageHourly, writeUsage, type FailedWriteCursor } from './usage.repo.js';

export type { FailedWriteCursor };

/**
 * Integration health (issue 19): API usage per key and UTC hour split 2xx / 4xx / 5xx / 429, and a
 * bounded log of failed writes (single requests and batch items) with their reference, status and
 * detail. A request only bumps counters in memory and, when it failed a write, queues a row; a timer
 * flushes both every few seconds as upserts in one transaction (usage.repo.ts), so the request path
 * never writes. The HTTP hooks that feed it are in usage.hooks.ts.
 */

/** What the failure log reads of an answered write request (a Fastify request has it). */
export interface AnsweredRequest {
  principal?: Pick<Principal, 'orgId' | 'keyId'> | null;
  method: string;
  url: string;
  routeOptions: { url?: string };
  params: unknown;
  body: unknown;
  id: unknown;
}

/** What the failure log reads of its reply (a Fastify reply has it). */
export interface AnsweredReply {
  statusCode: number;
  getHeader(name: string): unknown;
}

export interface UsageOptions {
  db: Db;
  clock: Clock;
  log?: { warn(obj: object, msg: string): void };
  /** How often the counters are written (ms); 0: only by `flush()` (tests, benchmarks). */
  flushMs?: number;
  /** Failed writes are kept this many days (the Overview shows the last 7). */
  retentionDays?: number;
  /** At most this many failed writes are kept per organization (the newest). */
  maxFailedPerOrg?: number;
  /** A 429 is answered before the key's principal is set: the key is found again (a cached read). */
  keyOf?: (presented: string) => Promise<Principal | null>;
}

export const USAGE_FLUSH_MS = 10_000;
export const FAILED_WRITES_RETENTION_DAYS = 7;
export const MAX_FAILED_WRITES_PER_ORG = 2_000;
// Rows queued between flushes; past this (a flood of failures) the newest are dropped, not the process's memory.
const MAX_PENDING_FAILED = 10_000;
const MAX_DETAIL_CHARS = 4_000;
const API_PREFIX = '/v2/tms-api/';
export const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
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

/** A field ignored by one key on one route, counted between flushes; times as epoch milliseconds. */
interface IgnoredCount {
  orgId: string;
  keyId: string;
  route: string;
  field: string;
  count: number;
  first: number;
  last: number;
}

const counterRow = (c: Counter): ApiUsageHourlyTable => ({
  org_id: c.orgId,
  key_id: c.keyId,
  hour: hourText(c.hour),
  ok: c.ok,
  client_errors: c.clientErrors,
  server_errors: c.serverErrors,
  rate_limited: c.rateLimited,
  last_request_at: new Date(c.last).toISOString(),
});

const ignoredRow = (c: IgnoredCount): IgnoredFieldsTable => ({
  org_id: c.orgId,
  key_id: c.keyId,
  route: c.route,
  field: c.field,
  count: c.count,
  first_seen_at: new Date(c.first).toISOString(),
  last_seen_at: new Date(c.last).toISOString(),
});

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

type FailedWrite = Omit<FailedWritesTable, 'id'>;

/**
 * The failed writes in a write's answer (the rules of the log): the request itself (4xx/5xx), or a
 * batch's failed items (a batch answers 200 whatever its items did). A 429, a replayed answer and a
 * path outside the API are not logged.
 */
export function failedWritesIn(req: AnsweredRequest, reply: AnsweredReply, payload: unknown, now: () => string): FailedWrite[] {
  const principal = req.principal;
  if (!principal || !WRITE_METHODS.has(req.method)) return [];
  const path = (req.routeOptions.url ?? req.url.split('?')[0] ?? '').startsWith(API_PREFIX) ? req.url.split('?')[0]! : '';
  if (!path) return [];
  const status = reply.statusCode;
  if (status === 429 || status < 200) return [];
  if (reply.getHeader('idempotent-replayed')) return [];
  const { resource, batch } = resourceOf(path);
  const base = { org_id: principal.orgId, key_id: principal.keyId, occurred_at: now(), method: req.method, path, resource, request_id: String(req.id) };
  if (status < 400) {
    // Only a body that names a failure is parsed.
    if (!batch || typeof payload !== 'string' || !payload.includes('"success":false')) return [];
    const body = parseJson(payload) as
      | {
          results?: { index: number; external_reference_id: string | null; operation: string; success: boolean; error?: { status: number; detail: unknown } }[];
        }
      | undefined;
    return (body?.results ?? [])
      .filter((r) => !r.success)
      .map((r) => ({
        ...base,
        operation: r.operation,
        reference: r.external_reference_id,
        batch_index: r.index,
        status: r.error?.status ?? 0,
        detail: detailText(r.error?.detail),
      }));
  }
  const params = (req.params ?? {}) as Record<string, unknown>;
  const body = (req.body ?? {}) as Record<string, unknown>;
  const fromParams = Object.values(params).find((v) => typeof v === 'string');
  const reference = typeof fromParams === 'string' ? fromParams : typeof body.external_reference_id === 'string' ? body.external_reference_id : null;
  const answer = parseJson(payload) as { detail?: unknown; error?: { message?: string } } | undefined;
  return [
    {
      ...base,
      operation: batch ? 'batch' : (OPERATION_OF[req.method] ?? req.method.toLowerCase()),
      reference: reference === null ? null : reference.slice(0, 255),
      batch_index: null,
      status,
      detail: detailText(answer?.detail ?? answer?.error?.message ?? null),
    },
  ];
}

/** Counts in memory on the request path; written by flush() (the timer, the dashboard before it reads, shutdown). */
export class UsageRecorder {
  // The current hour's counter of each key (a key belongs to one organization), and counters of hours
  // that ended (or of a clock set back) since the last flush.
  private readonly counters = new Map<string, Counter>();
  private closed: Counter[] = [];
  private pending: FailedWritesTable[] = [];
  // Ignored fields counted between flushes, by org, key, route and field.
  private ignored = new Map<string, IgnoredCount>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private lastPrune = 0;
  private readonly retentionDays: number;
  private readonly maxPerOrg: number;

  constructor(private readonly o: UsageOptions) {
    this.retentionDays = o.retentionDays ?? FAILED_WRITES_RETENTION_DAYS;
    this.maxPerOrg = o.maxFailedPerOrg ?? MAX_FAILED_WRITES_PER_ORG;
  }

  // On every API request: numbers and one lookup by the key's id (a string the key cache keeps, so
  // its hash is computed once), no date text. bench/usage.bench.ts measures what this costs a read.
  count(principal: Pick<Principal, 'orgId' | 'keyId'>, status: number, nowMs = this.o.clock.now().getTime()) {
    const hour = Math.floor(nowMs / HOUR_MS);
    let c = this.counters.get(principal.keyId);
    if (c === undefined || c.hour !== hour) {
      if (c !== undefined) this.closed.push(c);
      c = { orgId: principal.orgId, keyId: principal.keyId, hour, ok: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0, last: nowMs };
      this.counters.set(principal.keyId, c);
    }
    if (status < 400) c.ok++;
    else if (status === 429) c.rateLimited++;
    else if (status >= 500) c.serverErrors++;
    else c.clientErrors++;
    if (nowMs > c.last) c.last = nowMs;
  }

  /** The fields a request's answer said it ignored (a few map lookups; written by the flush). */
  countIgnored(principal: Pick<Principal, 'orgId' | 'keyId'>, route: string, fields: readonly string[], nowMs = this.o.clock.now().getTime()) {
    for (const field of fields) {
      const id = `${principal.keyId}\u0000${route}\u0000${field}`;
      const c = this.ignored.get(id);
      if (c) {
        c.count++;
        if (nowMs > c.last) c.last = nowMs;
      } else if (this.ignored.size < MAX_PENDING_FAILED) {
        this.ignored.set(id, { orgId: principal.orgId, keyId: principal.keyId, route, field, count: 1, first: nowMs, last: nowMs });
      }
    }
  }

  /** Queues the failed writes in a write's answer (failedWritesIn); past MAX_PENDING_FAILED the newest are dropped. */
  captureFailures(req: AnsweredRequest, reply: AnsweredReply, payload: unknown) {
    for (const row of failedWritesIn(req, reply, payload, () => this.o.clock.now().toISOString())) {
      if (this.pending.length >= MAX_PENDING_FAILED) return;
      // A key pasted into a URL or a reference is not kept in clear (the dashboard shows these rows to members).
      this.pending.push({
        id: randomUUID(),
        ...row,
        path: maskApiKeys(row.path),
        reference: row.reference === null ? null : maskApiKeys(row.reference),
        detail: maskApiKeys(row.detail),
      });
    }
  }

  private async writeOut(): Promise<void> {
    const rows = [...this.closed, ...this.counters.values()];
    this.counters.clear();
    this.closed = [];
    const failed = this.pending;
    this.pending = [];
    const ignoredNow = [...this.ignored.values()];
    this.ignored = new Map();
    if (rows.length === 0 && failed.length === 0 && ignoredNow.length === 0) return;
    try {
      await writeUsage(this.o.db, rows.map(counterRow), failed, ignoredNow.map(ignoredRow));
    } catch (err) {
      // Usage is best effort: a database away for a moment loses these counts, never a request.
      this.o.log?.warn({ err }, 'usage counters not written');
      return;
    }
    const now = this.o.clock.now().getTime();
    if (failed.length > 0 || now - this.lastPrune > 60_000)
      await this.prune(new Set(failed.map((f) => f.org_id))).catch((err) => this.o.log?.warn({ err }, 'usage prune failed'));
  }

  /** Keeps the log bounded: older than the retention, or past the per-organization cap (of `orgs`), goes. */
  async prune(orgs: ReadonlySet<string> = new Set()) {
    const now = this.o.clock.now();
    this.lastPrune = now.getTime();
    const cutoff = new Date(now.getTime() - this.retentionDays * 86_400_000).toISOString();
    // Ignored fields not seen for the retention period go (the integration was fixed); hourly usage is
    // kept a day longer than the 7 days the charts show.
    await deleteUsageBefore(this.o.db, cutoff, hourOf(new Date(now.getTime() - (this.retentionDays + 1) * 86_400_000).toISOString()));
    for (const orgId of orgs) await trimFailedWrites(this.o.db, orgId, this.maxPerOrg);
  }

  /** Writes what is counted so far (the timer, the dashboard before it reads, shutdown). */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    this.flushing = this.writeOut().finally(() => (this.flushing = null));
    return this.flushing;
  }

  /** Counters and failures waiting for the next flush (tests, benchmarks). */
  pendingSize() {
    return { counters: this.counters.size + this.closed.length, failed: this.pending.length, ignored: this.ignored.size };
  }

  start() {
    const every = this.o.flushMs ?? USAGE_FLUSH_MS;
    if (every > 0 && !this.timer) {
      this.timer = setInterval(() => void this.flush(), every);
      this.timer.unref();
    }
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** The organization's hourly usage since `sinceIso`, every key. */
  hourly(orgId: string, sinceIso: string) {
    return usageHourly(this.o.db, orgId, hourOf(sinceIso));
  }

  /** The organization's ignored fields seen since `sinceIso`, most counted first. */
  ignoredFields(orgId: string, sinceIso: string, limit = 100) {
    return ignoredFieldsSince(this.o.db, orgId, sinceIso, limit);
  }

  /** Failed writes since `sinceIso`, newest first, a page at a time (usage.repo.ts, failedWritesPage). */
  failedWrites(orgId: string, sinceIso: string, limit: number, page: { before?: FailedWriteCursor; after?: FailedWriteCursor } = {}) {
    return failedWritesPage(this.o.db, orgId, sinceIso, limit, page);
  }
}

export function usageRecorder(o: UsageOptions): UsageRecorder {
  return new UsageRecorder(o);
}
