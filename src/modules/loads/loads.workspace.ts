import type { Executor } from '../../lib/db/index.js';
import type { CarriersTable, CustomersTable, LaneHistoryTable, LoadRatesTable, LoadsTable, LocationsTable } from '../../lib/db/types.js';
import type { LaneKey } from '../../domain/lane.js';
import type { Workspace } from '../shared/write-pipeline.js';
import { historyLanesOf, historyLaneOfLoad } from '../lanes/lanes.repo.js';
import { isHistory, laneHistoryRow, laneKeyOf } from '../lanes/lane-history.js';
import {
  loadById,
  loadByRef,
  loadsByRefs,
  namesByIds,
  ratesOf,
  recordsByRefs,
  stopsOf,
  writeLoadChanges,
  type LoadChanges,
  type StopWithLocation,
} from './loads.repo.js';

/** A load as a unit of work holds it: its row and, once read or written, its parts. */
interface LoadEntry {
  row: LoadsTable;
  /** undefined: not read yet. */
  stops: StopWithLocation[] | undefined;
  rates: LoadRatesTable[] | undefined;
  /** The lane its history row is on (null: none; undefined: not read yet). */
  historyLane: LaneKey | null | undefined;
  /** The history row to write (set when `historyDirty`; null: none). */
  historyRow: LaneHistoryTable | null;
  /** The row exists in the database (as of the last flush). */
  stored: boolean;
  /** The database has a history row for it (as of the last flush). */
  storedHistory: boolean | undefined;
  deleted: boolean;
  /** Columns changed since the last flush (stored rows). */
  patch: Partial<LoadsTable> | null;
  stopsDirty: boolean;
  ratesDirty: boolean;
  historyDirty: boolean;
}

type Named = 'customers' | 'carriers' | 'locations';
type NamedRow = { customers: CustomersTable; carriers: CarriersTable; locations: LocationsTable };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string[] => (typeof v === 'string' ? [v] : []);

/**
 * The loads a unit of work (a single write, or a whole batch) reads and writes, handed to every load
 * write step: reads come from here first (a batch reads its loads, their parts and every customer,
 * carrier and location its items name at once, at its start), writes change what is held here, so a
 * later item sees what an earlier one wrote (docs/api.md, "Batches"), and `flush` writes the changes
 * set-based: one statement per table for the whole batch (src/modules/loads/loads.repo.ts
 * writeLoadChanges).
 *
 * An item's changes are journalled (`begin`): a failed item's `rollback` leaves the workspace as the
 * item found it, so a failed item leaves nothing behind in the database either (nothing reached it).
 */
export class LoadWorkspace implements Workspace {
  readonly deferred = true;
  private readonly entries = new Map<string, LoadEntry>();
  /** Reference → load id (null: known absent). */
  private readonly byRef = new Map<string, string | null>();
  private readonly named: { [K in Named]: Map<string, NamedRow[K] | null> } = { customers: new Map(), carriers: new Map(), locations: new Map() };
  private readonly carrierRefs = new Map<string, string>();
  /** References an item of this unit deleted (absent here, though the database holds them until flush). */
  private readonly removed = new Set<string>();
  private journal: { entries: Map<string, LoadEntry | undefined>; refs: Map<string, string | null | undefined> } | null = null;

  /** `now`: the time the lane stats it moves are stamped with. */
  constructor(
    readonly orgId: string,
    private readonly now: () => string,
  ) {}

  /**
   * A batch's reads, all at once at its start: the loads its items name (locked on PostgreSQL, in
   * reference order, so the batch never waits on a row half-way), their stops, rates and history lanes,
   * and every customer, carrier and location the items name. Items are unvalidated: only strings count.
   */
  async prefetch(tx: Executor, items: readonly { ref: unknown; data: unknown }[], lock: boolean): Promise<void> {
    const refs = new Set<string>();
    const wanted: Record<Named, Set<string>> = { customers: new Set(), carriers: new Set(), locations: new Set() };
    for (const { ref, data } of items) {
      for (const r of str(ref)) refs.add(r);
      if (!isObject(data)) continue;
      for (const r of str(data.external_reference_id)) refs.add(r);
      for (const r of str(data.customer_external_reference_id)) wanted.customers.add(r);
      for (const r of str(data.carrier_external_reference_id)) wanted.carriers.add(r);
      if (Array.isArray(data.stops))
        for (const s of data.stops) if (isObject(s)) for (const r of str(s.location_external_reference_id)) wanted.locations.add(r);
    }
    const loads = await loadsByRefs(tx, this.orgId, [...refs], lock);
    for (const r of refs) this.byRef.set(r, null);
    for (const row of loads) this.hold(row);
    const ids = loads.map((l) => l.id);
    if (ids.length > 0) {
      for (const s of await stopsOf(tx, this.orgId, ids)) this.entries.get(s.load_id)!.stops!.push(s);
      for (const r of await ratesOf(tx, this.orgId, ids)) this.entries.get(r.load_id)!.rates!.push(r);
      const lanes = await historyLanesOf(tx, this.orgId, ids);
      for (const id of ids) {
        const e = this.entries.get(id)!;
        e.historyLane = lanes.get(id) ?? null;
        e.storedHistory = lanes.has(id);
      }
    }
    for (const table of ['customers', 'carriers', 'locations'] as const) {
      const list = [...wanted[table]];
      if (list.length === 0) continue;
      const found = new Map((await recordsByRefs(tx, table, this.orgId, list)).map((r) => [r.external_reference_id, r]));
      for (const ref of list) this.remember(table, ref, found.get(ref) ?? null);
    }
  }

  private hold(row: LoadsTable, parts: { stops?: StopWithLocation[]; rates?: LoadRatesTable[] } = { stops: [], rates: [] }): LoadEntry {
    const entry: LoadEntry = {
      row,
      stops: parts.stops,
      rates: parts.rates,
      historyLane: undefined,
      historyRow: null,
      stored: true,
      storedHistory: undefined,
      deleted: false,
      patch: null,
      stopsDirty: false,
      ratesDirty: false,
      historyDirty: false,
    };
    this.entries.set(row.id, entry);
    this.byRef.set(row.external_reference_id, row.id);
    return entry;
  }

  private remember<K extends Named>(table: K, ref: string, row: NamedRow[K] | null): void {
    (this.named[table] as Map<string, NamedRow[K] | null>).set(ref, row);
    if (table === 'carriers' && row) this.carrierRefs.set(row.id, row.external_reference_id);
  }

  // ---- reads ----

  /** The load with this reference as the unit of work sees it (earlier items' writes included). */
  async find(tx: Executor, ref: string): Promise<LoadsTable | undefined> {
    const id = this.byRef.get(ref);
    if (id === null) return undefined;
    if (id !== undefined) return this.entries.get(id)!.row;
    const row = await loadByRef(tx, this.orgId, ref);
    if (!row) {
      this.byRef.set(ref, null);
      return undefined;
    }
    return this.hold(row, {}).row;
  }

  async findById(tx: Executor, id: string): Promise<LoadsTable | undefined> {
    const held = this.entries.get(id);
    if (held) return held.deleted ? undefined : held.row;
    const row = await loadById(tx, this.orgId, id);
    if (!row || this.byRef.has(row.external_reference_id)) return undefined;
    return this.hold(row, {}).row;
  }

  private entry(id: string): LoadEntry {
    const e = this.entries.get(id);
    if (!e) throw new Error(`load ${id} is not held by this unit of work`);
    return e;
  }

  async stopsOf(tx: Executor, id: string): Promise<StopWithLocation[]> {
    const e = this.entry(id);
    if (e.stops === undefined) e.stops = await stopsOf(tx, this.orgId, [id]);
    return e.stops;
  }

  async ratesOf(tx: Executor, id: string): Promise<LoadRatesTable[]> {
    const e = this.entry(id);
    if (e.rates === undefined) e.rates = await ratesOf(tx, this.orgId, [id]);
    return e.rates;
  }

  /** The lane the load's history row is on, null when it has none. */
  async historyLaneOf(tx: Executor, id: string): Promise<LaneKey | null> {
    const e = this.entry(id);
    if (e.historyLane === undefined) {
      const lane = await historyLaneOfLoad(tx, id);
      e.historyLane = lane ?? null;
      e.storedHistory = lane !== undefined;
    }
    return e.historyLane;
  }

  /** A customer, carrier or location of the organization by reference (undefined: none). */
  async record<K extends Named>(tx: Executor, table: K, ref: string): Promise<NamedRow[K] | undefined> {
    const map = this.named[table] as Map<string, NamedRow[K] | null>;
    if (!map.has(ref)) this.remember(table, ref, ((await recordsByRefs(tx, table, this.orgId, [ref]))[0] as NamedRow[K] | undefined) ?? null);
    return map.get(ref) ?? undefined;
  }

  /** A carrier's reference by id (the history row keeps it). */
  async carrierRef(tx: Executor, carrierId: string): Promise<string | null> {
    if (!this.carrierRefs.has(carrierId))
      for (const c of await namesByIds(tx, 'carriers', this.orgId, [carrierId])) this.carrierRefs.set(c.id, c.external_reference_id);
    return this.carrierRefs.get(carrierId) ?? null;
  }

  // ---- writes (held until flush) ----

  private touch(id: string): LoadEntry | undefined {
    const e = this.entries.get(id);
    if (this.journal && !this.journal.entries.has(id)) this.journal.entries.set(id, e && Object.assign({}, e, { patch: e.patch && { ...e.patch } }));
    return e;
  }

  private point(ref: string, id: string | null): void {
    if (this.journal && !this.journal.refs.has(ref)) this.journal.refs.set(ref, this.byRef.get(ref));
    this.byRef.set(ref, id);
  }

  insert(row: LoadsTable, stops: StopWithLocation[], rates: LoadRatesTable[]): void {
    this.touch(row.id);
    this.entries.set(row.id, {
      row,
      stops,
      rates,
      historyLane: null,
      historyRow: null,
      stored: false,
      storedHistory: false,
      deleted: false,
      patch: null,
      stopsDirty: true,
      ratesDirty: true,
      historyDirty: false,
    });
    this.point(row.external_reference_id, row.id);
  }

  update(id: string, patch: Partial<LoadsTable>): void {
    const e = this.touch(id)!;
    e.row = Object.assign({}, e.row, patch);
    if (e.stored) e.patch = Object.assign({}, e.patch, patch);
  }

  replaceStops(id: string, stops: StopWithLocation[]): void {
    const e = this.touch(id)!;
    e.stops = stops;
    e.stopsDirty = true;
  }

  replaceRates(id: string, rates: LoadRatesTable[]): void {
    const e = this.touch(id)!;
    e.rates = rates;
    e.ratesDirty = true;
  }

  /** The load's history row from now on (null: none). */
  setHistory(id: string, row: LaneHistoryTable | null): void {
    const e = this.touch(id)!;
    e.historyRow = row;
    e.historyLane = row ? laneKeyOf(row) : null;
    e.historyDirty = true;
  }

  remove(id: string): void {
    const e = this.touch(id)!;
    e.deleted = true;
    this.removed.add(e.row.external_reference_id);
    this.point(e.row.external_reference_id, null);
  }

  /**
   * Brings the load's lane history in line with the load as this unit holds it; the lanes whose
   * history moved (its lane before and after). A load that cannot be history costs nothing when it had none.
   */
  async syncHistory(tx: Executor, row: LoadsTable): Promise<LaneKey[]> {
    const before = await this.historyLaneOf(tx, row.id);
    const next = isHistory(row)
      ? laneHistoryRow({
          load: row,
          carrierRef: await this.carrierRef(tx, row.carrier_id!),
          stops: await this.stopsOf(tx, row.id),
          rates: await this.ratesOf(tx, row.id),
        })
      : null;
    if (!before && !next) return [];
    this.setHistory(row.id, next);
    return [...(before ? [before] : []), ...(next ? [laneKeyOf(next)] : [])];
  }

  // ---- items ----

  begin(): void {
    this.journal = { entries: new Map(), refs: new Map() };
  }

  release(): void {
    this.journal = null;
  }

  rollback(): void {
    const j = this.journal;
    this.journal = null;
    if (!j) return;
    for (const [id, before] of j.entries) {
      if (before) this.entries.set(id, before);
      else this.entries.delete(id);
    }
    for (const [ref, before] of j.refs) {
      // A reference the item found absent is read again next time: the item may have failed because
      // another request created it meanwhile (an upsert's unique race, run again in its savepoint).
      if (before === undefined || (before === null && !this.removed.has(ref))) this.byRef.delete(ref);
      else this.byRef.set(ref, before);
    }
  }

  /** Writes what changed since the last flush, set-based (one statement per table and kind of change). */
  async flush(tx: Executor): Promise<void> {
    const changes: LoadChanges = { deleted: [], inserted: [], updated: [], stopsOf: [], stops: [], ratesOf: [], rates: [], historyOf: [], history: [] };
    const flushed: LoadEntry[] = [];
    for (const [id, e] of this.entries) {
      if (e.deleted) {
        if (e.stored) changes.deleted.push(id);
        if (e.stored || e.stopsDirty || e.ratesDirty || e.historyDirty || e.patch) flushed.push(e);
        continue;
      }
      if (!e.stored) {
        changes.inserted.push(e.row);
        changes.stops.push(...e.stops!);
        changes.rates.push(...e.rates!);
        if (e.historyRow) changes.history.push(e.historyRow);
        flushed.push(e);
        continue;
      }
      if (!e.patch && !e.stopsDirty && !e.ratesDirty && !e.historyDirty) continue;
      if (e.patch) changes.updated.push({ id, patch: e.patch });
      if (e.stopsDirty) {
        changes.stopsOf.push(id);
        changes.stops.push(...e.stops!);
      }
      if (e.ratesDirty) {
        changes.ratesOf.push(id);
        changes.rates.push(...e.rates!);
      }
      if (e.historyDirty) {
        if (e.storedHistory !== false) changes.historyOf.push(id);
        if (e.historyRow) changes.history.push(e.historyRow);
      }
      flushed.push(e);
    }
    if (flushed.length === 0) return;
    await writeLoadChanges(tx, this.orgId, changes, this.now());
    for (const e of flushed) {
      if (e.deleted) {
        this.entries.delete(e.row.id);
        continue;
      }
      if (e.historyDirty) e.storedHistory = e.historyRow !== null;
      Object.assign(e, { stored: true, patch: null, stopsDirty: false, ratesDirty: false, historyDirty: false });
    }
  }
}
