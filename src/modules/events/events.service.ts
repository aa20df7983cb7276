import type { Executor } from '../../lib/db/index.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { DetailError, ForbiddenError, ValidationError } from '../../lib/http/errors.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { Scope } from '../accounts/scopes.js';
import { eventsAfter, eventsNewestFirst, prunableUpTo, pruneChunk } from './events.repo.js';
import { eventsOutbox, type EventSerializers } from './events.outbox.js';
import { EVENT_TYPES, type EventListQuery, type FeedEvent } from './events.schema.js';

/** A key sees the events of the kinds it may read (`market_rate.*` with write:rates; docs/events.md, "The request"). */
const KIND_SCOPES: [VersionedKind, Scope][] = [
  ['customers', 'read:customers'],
  ['carriers', 'read:carriers'],
  ['locations', 'read:locations'],
  ['loads', 'read:loads'],
  ['market_rates', 'write:rates'],
];

/** Thrown for an `after` older than what retention kept (docs/events.md, "Retention and 410"). */
export class EventsGoneError extends DetailError {
  constructor(
    after: number,
    readonly keptAfter: number,
  ) {
    super('gone', `Events after sequence ${after} are no longer kept; resynchronise with the list endpoints and updated_since`);
  }
  override headers() {
    // Where a resynchronised reader continues from (docs/events.md).
    return { 'X-Events-Kept-After': String(this.keptAfter) };
  }
}

/** `types` of the feed's query: known event types, comma-separated. */
function typesFilter(text: string | undefined): string[] | null {
  if (text === undefined) return null;
  const parts = [
    ...new Set(
      text
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = parts.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (parts.length === 0 || unknown.length > 0) {
    throw ValidationError.single(
      ['query', 'types'],
      `Input should be one or more of ${EVENT_TYPES.map((t) => `'${t}'`).join(', ')}, separated by commas${unknown.length ? ` (unknown: ${unknown.map((t) => `'${t}'`).join(', ')})` : ''}`,
      'enum',
    );
  }
  return parts;
}

/**
 * One page of the feed for a caller with `scopes`, oldest first, as the JSON text of an EventPage:
 * each event's data goes out as it was stored (JSON written by the outbox), never parsed and
 * serialised again (half of a page's time on SQLite, measured).
 */
async function pageJson(db: Executor, orgId: string, scopes: ReadonlySet<string>, query: EventListQuery): Promise<string> {
  const kinds = KIND_SCOPES.filter(([, s]) => scopes.has(s)).map(([k]) => k);
  if (kinds.length === 0) throw new ForbiddenError('read:loads');
  const types = typesFilter(query.types);
  const { pruned, newest, events } = await eventsAfter(db, { orgId, after: query.after, kinds, types, limit: query.limit + 1 });
  if (query.after < pruned) throw new EventsGoneError(query.after, pruned);
  // A sequence this organization never reached: usually a database restored from a backup older than the reader's position.
  if (query.after > newest)
    throw ValidationError.single(
      ['query', 'after'],
      `after (${query.after}) is past the newest event of this organization (sequence ${newest}): the feed was probably restored from an older backup; resynchronise with the list endpoints and updated_since, then continue from after=${newest}`,
      'less_than_equal',
    );
  const page = events.slice(0, query.limit);
  const items = page.map(
    (e) =>
      `{"id":${JSON.stringify(e.id)},"type":${JSON.stringify(e.type)},"sequence":${e.sequence},"timestamp":${JSON.stringify(e.created_at)},"data":${e.data}}`,
  );
  const nextAfter = page.length > 0 ? page[page.length - 1]!.sequence : query.after;
  return `{"items":[${items.join(',')}],"next_after":${nextAfter},"has_more":${events.length > query.limit}}`;
}

/** The dashboard's view: newest first, a page before `before` (keyset), optionally of one type. */
async function newestFirst(db: Executor, orgId: string, q: { before: number | null; type: string | null; limit: number }): Promise<FeedEvent[]> {
  const types = q.type && (EVENT_TYPES as readonly string[]).includes(q.type) ? [q.type] : null;
  const rows = await eventsNewestFirst(db, { orgId, before: q.before, types, limit: q.limit });
  return rows.map((e) => ({ id: e.id, type: e.type, sequence: e.sequence, timestamp: e.created_at, data: JSON.parse(e.data) as Record<string, unknown> }));
}

/**
 * Deletes events older than the retention period, oldest first, in small transactions (a request
 * never waits behind more than one chunk). Returns how many were deleted.
 */
async function prune(clock: Clock, retentionDays: number, db: Executor, chunk: number): Promise<number> {
  const cutoff = toIso(new Date(clock.now().getTime() - retentionDays * 86_400_000));
  let deleted = 0;
  for (const { org_id, upto } of await prunableUpTo(db, cutoff)) {
    for (;;) {
      const n = await pruneChunk(db, org_id, upto, chunk);
      deleted += n;
      if (n < chunk) break;
    }
  }
  return deleted;
}

/**
 * The change feed (docs/events.md): the outbox the write pipeline calls at seal (events.outbox.ts), the
 * feed's pages, and retention.
 */
export function eventsService(clock: Clock, opts: { retentionDays: number; serializers?: EventSerializers }) {
  return {
    outbox: eventsOutbox(clock, opts.serializers),
    /** One page of the feed as the JSON text of an EventPage (pageJson). */
    pageJson,
    newestFirst,
    /** Deletes events older than the retention period (prune); how many were deleted. */
    prune: (db: Executor, chunk = 5000): Promise<number> => prune(clock, opts.retentionDays, db, chunk),
  };
}

export type EventsService = ReturnType<typeof eventsService>;
