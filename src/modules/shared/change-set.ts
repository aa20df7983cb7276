import type { Executor } from '../../lib/db/index.js';
import type { VersionedKind } from '../../lib/db/versions.js';
import { laneKeyId, type LaneKey } from '../../domain/lane.js';

export type ChangeOp = 'created' | 'updated' | 'deleted';

/**
 * Builds the answers of stored rows (a record kind's presenter): what an event's data is made of. `known`
 * (by row id) is what the writes already hold of the answers beside the rows (RecordChange.parts).
 */
export type Presenter = (tx: Executor, orgId: string, rows: never[], known?: ReadonlyMap<string, unknown>) => Promise<unknown[]>;

export interface RecordChange {
  kind: VersionedKind;
  op: ChangeOp;
  id: string;
  /** null for records callers do not name (market rate snapshots). */
  external_reference_id: string | null;
  /** The row as written, and its presenter: the event's data (docs/events.md, "The events") is built from them at seal. */
  row?: unknown;
  present?: Presenter;
  /** The row before an update (load.status_changed compares the statuses). */
  previous?: unknown;
  /** The event's data when already known (a single write's own answer, a market rate snapshot). */
  data?: unknown;
  /**
   * What the write holds of the record's answer beside its row (a load's stops, rates, customer and
   * carrier as written), handed to the presenter so it need not read them back (kind-specific).
   */
  parts?: unknown;
  /** The lanes whose history this change moved (kept with its event for the recommendations follow-up). */
  lanes?: readonly LaneKey[];
  /** The change may move recommendations by itself (a new, deleted or re-laned load): followed up after commit. */
  followUp?: boolean;
}

/** An event that is not a record's change (load.recommendations_changed), written as it is. */
export interface Announcement {
  kind: VersionedKind;
  type: string;
  record_id: string;
  data: unknown;
}

/**
 * The change feed's writer (docs/events.md, "The promise"), called at seal inside the writing
 * transaction: `draft` builds the events of a unit of work's changes, `write` stores them from the first
 * sequence given.
 */
export interface Outbox {
  draft(tx: Executor, orgId: string, records: readonly RecordChange[], announcements: readonly Announcement[]): Promise<EventDraft[]>;
  write(tx: Executor, orgId: string, drafts: readonly EventDraft[], firstSequence: number): Promise<void>;
}

export interface EventDraft {
  id: string;
  type: string;
  kind: VersionedKind;
  record_id: string | null;
  created_at: string;
  data: unknown;
  lanes: readonly LaneKey[] | null;
}

/** What one unit of work (a single write, or one batch item) changed, collected inside its transaction. */
export class ChangeSet {
  readonly records: RecordChange[] = [];
  readonly announcements: Announcement[] = [];
  readonly lanes = new Map<string, LaneKey>();
  /** Counter moves (counter → key → delta), written once at seal in key order (see Counters). */
  readonly tallies = new Map<string, Map<string, number>>();
  /** Parts of answers kept by a write step until its record is recorded (see keep). */
  private readonly kept = new Map<string, unknown>();

  record(change: RecordChange, lanes: readonly LaneKey[] = []): void {
    const parts = this.kept.get(change.id);
    if (parts !== undefined) this.kept.delete(change.id);
    const withParts = parts !== undefined && change.op !== 'deleted' ? Object.assign({}, change, { parts }) : change;
    this.records.push(lanes.length > 0 ? Object.assign({}, withParts, { lanes }) : withParts);
    this.touchLanes(lanes);
  }

  /**
   * A write step's knowledge of record `id`'s answer beside its row (RecordChange.parts), attached to the
   * record's change when it is recorded in this unit of work. Kept here, not in a cache beside the
   * transaction, so a batch item that fails takes it away with its change set.
   */
  keep(id: string, parts: unknown): void {
    this.kept.set(id, parts);
  }

  /** An event beside the records' own (it moves no record counter). */
  announce(announcement: Announcement): void {
    this.announcements.push(announcement);
  }

  /** Lanes whose history moved (their stats are refreshed after commit). */
  touchLanes(lanes: readonly LaneKey[]): void {
    for (const k of lanes) this.lanes.set(laneKeyId(k), k);
  }

  /** Moves a kept counter (e.g. the loads per status) by `delta`, applied when the unit of work seals. */
  tally(counter: string, key: string, delta: number): void {
    let m = this.tallies.get(counter);
    if (!m) this.tallies.set(counter, (m = new Map()));
    m.set(key, (m.get(key) ?? 0) + delta);
  }

  absorb(other: ChangeSet): void {
    this.records.push(...other.records);
    this.announcements.push(...other.announcements);
    for (const [id, k] of other.lanes) this.lanes.set(id, k);
    for (const [counter, moves] of other.tallies) for (const [key, delta] of moves) this.tally(counter, key, delta);
  }

  /** The answer a single write built for its record: the event's data, so seal does not build it again. */
  presented(id: string, data: unknown): void {
    for (const r of this.records) if (r.id === id && r.op !== 'deleted' && r.data === undefined) r.data = data;
  }

  /** Whether anything committed here is for the recommendations follow-up (moved lanes, or a change that may move them). */
  needsFollowUp(): boolean {
    return this.records.some((r) => r.followUp === true || (r.lanes !== undefined && r.lanes.length > 0));
  }

  /** The counters this unit of work moves: its records' kinds, and lane_history when it moved any lane's history. */
  kinds(): Set<VersionedKind> {
    const kinds = new Set<VersionedKind>(this.records.map((r) => r.kind));
    if (this.lanes.size > 0) kinds.add('lane_history');
    return kinds;
  }
}
