import { NotFoundError, ValidationError } from '../../lib/http/errors.js';
import { toIso } from '../../lib/clock.js';
import type { Executor } from '../../lib/db/index.js';
import type { LoadsTable } from '../../lib/db/types.js';
import type { KeyGuard } from '../../lib/http/principal.js';
import { pagination } from '../../lib/http/pagination.js';
import type { Clock } from '../../lib/clock.js';
import { LOAD_STATUSES, OPEN_STATUSES } from '../../domain/enums.js';
import { recordLifecycle, type ServiceHooks } from '../shared/record-store.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { CarrierRecommendation } from '../lanes/lanes.schema.js';
import { historyVersionOf, type LaneStop, type LanesService, type RecommendOptions } from '../lanes/lanes.service.js';
import { readVersions } from '../../lib/db/versions.js';
import { loadPresenter, type KnownParts } from './loads.present.js';
import { countStatusChange, listLoadDocuments, listLoads, type LoadFilter } from './loads.repo.js';
import { loadDocumentByRef, loadDocumentsByIds, readsLoadsAsDocuments } from './loads.documents.repo.js';
import { LoadWorkspace } from './loads.workspace.js';
import { locksRowsForUpdate } from '../../lib/db/locks.js';
import { LoadCreate, LoadUpdate, type Load, type LoadListQuery } from './loads.schema.js';
import { loadWrites } from './loads.write.js';
import { loadBodyProblems } from './loads.checks.js';

export interface LoadsOptions {
  /** Road miles per great-circle mile for estimated distances (default 1.2, the usual truck circuity). */
  circuityFactor: number;
}

export interface LoadsDeps extends ServiceHooks {
  pipeline: WritePipeline;
  lanes: LanesService;
}

/** `status` of the list: one value or several, comma-separated, any case (docs/api.md, "Loads"). */
function statusFilter(text: string): string[] {
  const canonical = new Map(LOAD_STATUSES.map((s) => [s.toLowerCase(), s]));
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !canonical.has(p.toLowerCase()))) {
    throw new ValidationError([
      { type: 'enum', loc: ['query', 'status'], msg: `Input should be one or more of ${LOAD_STATUSES.map((s) => `'${s}'`).join(', ')}, separated by commas` },
    ]);
  }
  return parts.map((p) => canonical.get(p.toLowerCase())!);
}

export function loadsService(clock: Clock, options: LoadsOptions, deps: LoadsDeps) {
  const { pipeline, lanes } = deps;
  const reader = pipeline.reader;
  const writes = loadWrites(clock, options);
  const stamp = () => toIso(clock.now());
  const { present, presentDocuments } = loadPresenter(lanes);
  // PostgreSQL: a read is one round trip (the load and its parts, and the caller's key, in one statement).
  const oneStatementReads = readsLoadsAsDocuments(reader);

  /**
   * Answers of stored loads. On PostgreSQL several at once (a batch's events, built at seal) come from
   * the one-statement documents instead of a statement per kind of part.
   */
  const presentRows = async (tx: Executor, orgId: string, rows: LoadsTable[], known?: ReadonlyMap<string, KnownParts>): Promise<Load[]> => {
    // Loads whose writes hold their parts (full upserts, the usual TMS push) read only reps and the
    // market max_buy_rate's equipment, on either engine; otherwise PostgreSQL reads a batch's loads as
    // documents in one statement.
    if (!oneStatementReads || rows.length < 2 || (known && rows.every((r) => known.has(r.id)))) return present(tx, orgId, rows, known);
    const byId = new Map(
      (
        await presentDocuments(
          tx,
          orgId,
          await loadDocumentsByIds(
            tx,
            orgId,
            rows.map((r) => r.id),
          ),
        )
      ).map((l) => [l.id, l]),
    );
    // A load deleted later in the same unit of work is no longer there to read: presented from its row.
    const gone = rows.filter((r) => !byId.has(r.id));
    if (gone.length > 0) for (const l of await present(tx, orgId, gone)) byId.set(l.id, l);
    return rows.map((r) => byId.get(r.id)!);
  };

  const lifecycle = recordLifecycle<'loads', LoadCreate, LoadUpdate, Load, LoadWorkspace>({
    pipeline,
    clock,
    table: 'loads',
    createSchema: LoadCreate,
    updateSchema: LoadUpdate,
    batchOperations: ['create', 'update', 'upsert', 'delete'],
    // One analytics run per load write request, exactly one per batch
    // (docs/api.md, "Lane history and carrier recommendations").
    analyticsRun: true,
    // New and deleted loads, and updates that change a load's lane, status, equipment or carrier, are
    // followed up after commit (load.recommendations_changed).
    followUpWrites: true,
    // A unit of work's loads are held in its workspace and written set-based when it ends; a batch reads
    // its loads and everything they name at once (and locks its loads on PostgreSQL).
    workspace: {
      open: (orgId) => new LoadWorkspace(orgId, stamp),
      rows: {
        findByRef: (tx, ws, _orgId, ref) => ws.find(tx, ref),
        findById: (tx, ws, _orgId, id) => ws.findById(tx, id),
        update: async (_tx, ws, _orgId, id, patch) => ws.update(id, patch),
        delete: async (_tx, ws, _orgId, id) => ws.remove(id),
      },
      prefetch: (tx, ws, items) => ws.prefetch(tx, items, locksRowsForUpdate(tx)),
    },
    insert: writes.insert,
    updateColumns: writes.updateColumns,
    present: presentRows,
    // Lane history follows every load write in the same transaction: recommendations read their writes.
    afterSave: (tx, _orgId, row, _previous, ws) => ws.syncHistory(tx, row),
    beforeDelete: async (_tx, _orgId, row, changes) => countStatusChange(changes, row.status, null),
    lanesOfDeleted: async (tx, _orgId, row, ws) => {
      const lane = await ws.historyLaneOf(tx, row.id);
      return lane ? [lane] : [];
    },
    // A body that failed its schema is also checked against the database (one 422 with everything:
    // docs/api.md, "Errors").
    problems: (tx, orgId, body) => loadBodyProblems(tx, orgId, body),
  });

  type Versions = Pick<RecommendOptions, 'marketVersion' | 'historyVersion'>;
  const recommendations = (orgId: string, load: Load, stops: LaneStop[] | undefined, versions: Versions): Promise<CarrierRecommendation[]> =>
    lanes.recommend(reader, orgId, load, stops, versions);

  /**
   * One load by reference, with its stops' places for the recommendations; `guard`: the key check folded
   * in. `versions`: the organization's counters the recommendations' kept reads check, read with the load
   * (PostgreSQL's one statement) or after it (SQLite, where a statement costs microseconds), and before
   * anything the recommendations read.
   */
  async function readOne(orgId: string, ref: string, guard: KeyGuard | null): Promise<{ load: Load; stops?: LaneStop[]; versions: Versions }> {
    if (!oneStatementReads) {
      const load = await lifecycle.get(orgId, ref);
      if (!OPEN_STATUSES.has(load.status)) return { load, versions: {} };
      const v = await readVersions(reader, orgId);
      return { load, versions: { marketVersion: v.market_rates, historyVersion: historyVersionOf(v) } };
    }
    const { key, docs } = await loadDocumentByRef(reader, orgId, ref, guard?.keyId ?? null);
    guard?.settle(key);
    const [doc] = docs;
    if (!doc) throw new NotFoundError('Load', ref);
    return {
      load: (await presentDocuments(reader, orgId, [doc]))[0]!,
      stops: doc.stops,
      versions: { marketVersion: doc.market_version, historyVersion: historyVersionOf(doc.history_versions) },
    };
  }

  /** The list filters in stored form (a named customer or carrier is matched by reference in the query). */
  const listFilter = (query: LoadListQuery): LoadFilter =>
    Object.assign({}, query, query.status !== undefined ? { statuses: statusFilter(query.status) } : {}, {
      customer_ref: query.customer_external_reference_id,
      carrier_ref: query.carrier_external_reference_id,
    });

  return Object.assign({}, lifecycle, {
    present,
    /** GET of one load: an open load carries its carrier recommendations, any other an empty list. */
    async get(orgId: string, ref: string, guard: KeyGuard | null = null): Promise<Load> {
      const { load, stops, versions } = await readOne(orgId, ref, guard);
      return Object.assign({}, load, { carrier_recommendations: OPEN_STATUSES.has(load.status) ? await recommendations(orgId, load, stops, versions) : [] });
    },
    /** One load by reference with what its recommendations read (its stops' places, the counters their kept reads check). */
    readForRecommendations: readOne,
    async list(orgId: string, query: LoadListQuery, guard: KeyGuard | null = null) {
      const filter = listFilter(query);
      const pageOf = (total: number) => pagination(query.page, query.page_size, total);
      if (oneStatementReads) {
        const { key, docs, total } = await listLoadDocuments(reader, orgId, filter, query, guard?.keyId ?? null);
        guard?.settle(key);
        return { items: await presentDocuments(reader, orgId, docs), pagination: pageOf(total ?? 0) };
      }
      const { rows, total } = await listLoads(reader, orgId, filter, query);
      return { items: await present(reader, orgId, rows), pagination: pageOf(total) };
    },
  });
}

export type LoadsService = ReturnType<typeof loadsService>;
