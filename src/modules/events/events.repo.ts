import { sql } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { bulkInsert } from '../../lib/db/bulk.js';
import type { EventsTable } from '../../lib/db/types.js';

const COLUMNS = ['org_id', 'sequence', 'id', 'type', 'kind', 'record_id', 'created_at', 'data', 'lanes'] as const;

/**
 * Stores a unit of work's events: one multi-row insert for a batch's hundred (src/lib/db/bulk.ts); the
 * data (JSON the outbox wrote) goes into the statement as it is, never escaped again.
 */
export const insertEvents: (tx: Executor, rows: readonly EventsTable[]) => Promise<void> = bulkInsert('events', COLUMNS, { jsonText: ['data', 'lanes'] });

export interface StoredEvent {
  sequence: number;
  id: string;
  type: string;
  created_at: string;
  data: string;
}

export interface EventsPage {
  /** The last sequence pruned by retention (an `after` below it is 410). */
  pruned: number;
  /** The last sequence given in the organization (an `after` above it is 422). */
  newest: number;
  events: StoredEvent[];
}

/**
 * The organization's events after `after` of the given kinds (and types), oldest first, at most
 * `limit`, with the retention mark, in one statement (the primary key (org_id, sequence) serves it).
 */
export async function eventsAfter(
  tx: Executor,
  q: { orgId: string; after: number; kinds: readonly string[]; types: readonly string[] | null; limit: number },
): Promise<EventsPage> {
  const types = q.types ? sql`and e.type in (${sql.join(q.types)})` : sql``;
  const { rows } = await sql<{
    pruned: number | string | null;
    newest: number | string | null;
    sequence: number | string | null;
    id: string;
    type: string;
    created_at: string;
    data: string;
  }>`
    select v.events_pruned as pruned, v.events as newest, e.sequence, e.id, e.type, e.created_at, e.data
    from (select 1 as one) as o
    left join org_versions v on v.org_id = ${q.orgId}
    left join (
      select e.sequence, e.id, e.type, e.created_at, e.data from events e
      where e.org_id = ${q.orgId} and e.sequence > ${q.after} and e.kind in (${sql.join(q.kinds)}) ${types}
      order by e.sequence
      limit ${q.limit}
    ) as e on 1 = 1
    order by e.sequence`.execute(tx);
  const pruned = Number(rows[0]?.pruned ?? 0);
  const newest = Number(rows[0]?.newest ?? 0);
  const events = rows
    .filter((r) => r.sequence !== null)
    .map((r) => ({ sequence: Number(r.sequence), id: r.id, type: r.type, created_at: r.created_at, data: r.data }));
  return { pruned, newest, events };
}

/** Per organization, the last sequence created before `cutoff` (what retention may prune, a prefix). */
export async function prunableUpTo(db: Executor, cutoff: string): Promise<{ org_id: string; upto: number }[]> {
  const rows = await db
    .selectFrom('events')
    .select(['org_id', (eb) => eb.fn.max('sequence').as('upto')])
    .where('created_at', '<', cutoff)
    .groupBy('org_id')
    .execute();
  return rows.map((r) => ({ org_id: r.org_id, upto: Number(r.upto) }));
}

/**
 * Deletes the oldest events of an organization up to `upto`, at most `chunk` of them, and moves its
 * retention mark in the same transaction: a reader never finds a hole without the mark that explains it.
 * Returns how many were deleted.
 */
export async function pruneChunk(db: Executor, orgId: string, upto: number, chunk: number): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const rows = await tx
      .selectFrom('events')
      .select('sequence')
      .where('org_id', '=', orgId)
      .where('sequence', '<=', upto)
      .orderBy('sequence')
      .limit(chunk)
      .execute();
    if (rows.length === 0) return 0;
    const last = Number(rows[rows.length - 1]!.sequence);
    await tx
      .updateTable('org_versions')
      .set((eb) => ({ events_pruned: sql`case when ${eb.ref('events_pruned')} > ${last} then ${eb.ref('events_pruned')} else ${last} end` }))
      .where('org_id', '=', orgId)
      .execute();
    await tx.deleteFrom('events').where('org_id', '=', orgId).where('sequence', '<=', last).execute();
    return rows.length;
  });
}

/** The organization's events newest first, before `before` (null: the newest), of `types` (null: all). */
export async function eventsNewestFirst(
  db: Executor,
  q: { orgId: string; before: number | null; types: readonly string[] | null; limit: number },
): Promise<StoredEvent[]> {
  let query = db.selectFrom('events').select(['sequence', 'id', 'type', 'created_at', 'data']).where('org_id', '=', q.orgId);
  if (q.before !== null) query = query.where('sequence', '<', q.before);
  if (q.types) query = query.where('type', 'in', [...q.types]);
  const rows = await query.orderBy('sequence', 'desc').limit(q.limit).execute();
  return rows.map((r) => Object.assign({}, r, { sequence: Number(r.sequence) }));
}
