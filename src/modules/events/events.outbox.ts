import type { Executor } from '../../lib/db/index.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { RECORD_KINDS, isRecordKind } from '../../domain/records.js';
import type { Announcement, EventDraft, Outbox, Presenter, RecordChange } from '../shared/write-pipeline.js';
import { insertEvents } from './events.repo.js';

/**
 * The outbox the write pipeline calls at seal (docs/events.md): a unit of work's changes and
 * announcements drafted as events, then written with their sequence numbers.
 */

/** How an event's data is stored: a type's own serializer, else JSON.stringify. */
export type EventSerializers = Readonly<Record<string, (data: unknown) => string>>;

interface StatusRow {
  status: string;
}

export function eventsOutbox(clock: Clock, serializers: EventSerializers | undefined): Outbox {
  return {
    draft: (tx, orgId, records, announcements) => draftEvents(clock, tx, orgId, records, announcements),
    write: (tx, orgId, drafts, firstSequence) => writeEvents(serializers, tx, orgId, drafts, firstSequence),
  };
}

/** The events of a unit of work: each record's own (and a load's status change), then the announcements. */
async function draftEvents(
  clock: Clock,
  tx: Executor,
  orgId: string,
  records: readonly RecordChange[],
  announcements: readonly Announcement[],
): Promise<EventDraft[]> {
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
}

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

/** The drafts stored from `firstSequence` on, their data serialized once here. */
async function writeEvents(
  serializers: EventSerializers | undefined,
  tx: Executor,
  orgId: string,
  drafts: readonly EventDraft[],
  firstSequence: number,
): Promise<void> {
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
      data: (serializers?.[d.type] ?? JSON.stringify)(d.data),
      lanes: d.lanes ? JSON.stringify(d.lanes) : null,
    })),
  );
}
