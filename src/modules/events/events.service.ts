import type { Executor } from '../../lib/db/index.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { DetailError, ForbiddenError, ValidationError } from '../../lib/http/errors.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { RECORD_KINDS, isRecordKind } from '../../domain/records.js';
import type { Scope } from '../accounts/scopes.js';
import type { EventDraft, Outbox, Presenter, RecordChange } from '../shared/write-pipeline.js';
import { eventsAfter, eventsNewestFirst, insertEvents, prunableUpTo, pruneChunk } from './events.repo.js';
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

interface StatusRow {
  status: string;
}

/**
 * The change feed (docs/events.md): the outbox the write pipeline calls at seal, the feed's pages, and
 * retention.
 */
export function eventsService(clock: Clock, opts: { retentionDays: number; serializers?: Readonly<Record<string, (data: unknown) => string>> }) {
  const serialize = (type: string, data: unknown) => (opts.serializers?.[type] ?? JSON.stringify)(data);
  /** Each created or updated record's answer: one presenter call per kind for a whole unit of work. */
  async function dataOf(tx: Executor, orgId: string, records: readonly RecordChange[]): Promise<Map<RecordChange, unknown>> {
    const out = new Map<RecordChange, unknown>();
    const pending = new Map<Presenter, RecordChange[]>();
    for (const r of records) {
      if (r.op === 'deleted') out.set(r, { id: r.id, external_reference_id: r.external_reference_id });
      else if (r.data !== undefined) out.set(r, r.data);
      else if (r.present && r.row) pending.set(r.present, [...(pending.get(r.present) ?? []), r]);
      else throw new Error(`change of ${r.kind} ${r.id} has neither data nor a presenter`);
    }
    for (const [present, changes] of pending) {
      // A record changed twice in one unit of work is shown once, as it stands at commit (its last change).
      const rows = new Map(changes.map((c) => [c.id, c.row]));
      const last = new Map(changes.map((c) => [c.id, c.parts]));
      const known = new Map([...last].filter((e): e is [string, object] => e[1] !== undefined));
      const answers = await present(tx, orgId, [...rows.values()] as never[], known.size > 0 ? known : undefined);
      const byId = new Map([...rows.keys()].map((id, i) => [id, answers[i]]));
      for (const c of changes) out.set(c, byId.get(c.id));
    }
    return out;
  }

  const outbox: Outbox = {
    async draft(tx, orgId, records, announcements) {
      const data = await dataOf(tx, orgId, records);
      const createdAt = toIso(clock.now());
      const drafts: EventDraft[] = [];
      const add = (kind: VersionedKind, type: string, recordId: string | null, d: unknown, lanes: EventDraft['lanes'] = null) =>
        drafts.push({ id: newId('evt'), type, kind, record_id: recordId, created_at: createdAt, data: d, lanes });
      for (const r of records) {
        // Users and API keys have no events; a record's event type starts with its kind's noun.
        if (!isRecordKind(r.kind)) continue;
        // The follow-up reads only events that carry lanes: those that moved some, or `[]` for a change
        // that may move the load's own recommendations.
        add(r.kind, `${RECORD_KINDS[r.kind].noun}.${r.op}`, r.id, data.get(r), r.lanes && r.lanes.length > 0 ? r.lanes : r.followUp ? [] : null);
        const before = r.previous as StatusRow | undefined;
        const after = r.row as StatusRow | undefined;
        if (r.kind === 'loads' && r.op === 'updated' && before && after && before.status !== after.status) {
          add(r.kind, 'load.status_changed', r.id, {
            id: r.id,
            external_reference_id: r.external_reference_id,
            previous_status: before.status,
            status: after.status,
          });
        }
      }
      for (const a of announcements) add(a.kind, a.type, a.record_id, a.data);
      return drafts;
    },
    async write(tx, orgId, drafts, firstSequence) {
      await insertEvents(
        tx,
        drafts.map((d, i) => ({
          org_id: orgId,
          sequence: firstSequence + i,
          id: d.id,
          type: d.type,
          kind: d.kind,
          record_id: d.record_id,
          created_at: d.created_at,
          data: serialize(d.type, d.data),
          lanes: d.lanes ? JSON.stringify(d.lanes) : null,
        })),
      );
    },
  };

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

  return {
    outbox,

    /**
     * One page of the feed for a caller with `scopes`, oldest first, as the JSON text of an EventPage:
     * each event's data goes out as it was stored (JSON written by the outbox), never parsed and
     * serialised again (half of a page's time on SQLite, measured).
     */
    async pageJson(db: Executor, orgId: string, scopes: ReadonlySet<string>, query: EventListQuery): Promise<string> {
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
    },

    /** The dashboard's view: newest first, a page before `before` (keyset), optionally of one type. */
    async newestFirst(db: Executor, orgId: string, q: { before: number | null; type: string | null; limit: number }): Promise<FeedEvent[]> {
      const types = q.type && (EVENT_TYPES as readonly string[]).includes(q.type) ? [q.type] : null;
      const rows = await eventsNewestFirst(db, { orgId, before: q.before, types, limit: q.limit });
      return rows.map((e) => ({ id: e.id, type: e.type, sequence: e.sequence, timestamp: e.created_at, data: JSON.parse(e.data) as Record<string, unknown> }));
    },

    /**
     * Deletes events older than the retention period, oldest first, in small transactions (a request
     * never waits behind more than one chunk). Returns how many were deleted.
     */
    async prune(db: Executor, chunk = 5000): Promise<number> {
      const cutoff = toIso(new Date(clock.now().getTime() - opts.retentionDays * 86_400_000));
      let deleted = 0;
      for (const { org_id, upto } of await prunableUpTo(db, cutoff)) {
        for (;;) {
          const n = await pruneChunk(db, org_id, upto, chunk);
          deleted += n;
          if (n < chunk) break;
        }
      }
      return deleted;
    },
  };
}

export type EventsService = ReturnType<typeof eventsService>;
