import { NotFoundError, ValidationError } from '../../lib/http/errors.js';
import type { Executor } from '../../lib/db/index.js';
import type { LoadsTable } from '../../lib/db/types.js';
import type { KeyGuard } from '../../lib/http/principal.js';
import { pagination } from '../../lib/http/pagination.js';
import { LOAD_STATUSES, OPEN_STATUSES } from '../../domain/enums.js';
import type { RecordContext } from '../shared/record-kind.js';
import { recordLifecycle, type RecordLifecycle } from '../shared/record-store.js';
import type { CarrierRecommendation } from '../lanes/lanes.schema.js';
import { historyVersionOf, type LaneStop, type LanesService, type RecommendOptions } from '../lanes/lanes.service.js';
import { readVersions } from '../../lib/db/versions.js';
import { presentLoadDocuments, presentLoads } from './loads.present.js';
import { listLoadDocuments, listLoads, type LoadFilter } from './loads.repo.js';
import { loadDocumentByRef, readsLoadsAsDocuments } from './loads.documents.repo.js';
import type { LoadWorkspace } from './loads.workspace.js';
import type { LoadCreate, LoadUpdate, Load, LoadListQuery } from './loads.schema.js';
import { LOAD_KIND, type LoadDeps } from './loads.kind.js';

export interface LoadsOptions {
  /** Road miles per great-circle mile for estimated distances (default 1.2, the usual truck circuity). */
  circuityFactor: number;
  lanes: LanesService;
}

/** What the loads' reads run over: the load kind's lifecycle (its store holds the reader and deps). */
type Loads = RecordLifecycle<'loads', LoadCreate, LoadUpdate, Load, LoadWorkspace, LoadDeps>;
type Versions = Pick<RecommendOptions, 'marketVersion' | 'historyVersion'>;

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

/**
 * One load by reference, with its stops' places for the recommendations; `guard`: the key check folded
 * in. `versions`: the organization's counters the recommendations' kept reads check, read with the load
 * (PostgreSQL's one statement) or after it (SQLite, where a statement costs microseconds), and before
 * anything the recommendations read.
 */
async function readOne(loads: Loads, orgId: string, ref: string, guard: KeyGuard | null): Promise<{ load: Load; stops?: LaneStop[]; versions: Versions }> {
  const { deps, pipeline } = loads.store;
  const reader = pipeline.reader;
  if (!deps.oneStatementReads) {
    const load = await loads.get(orgId, ref);
    if (!OPEN_STATUSES.has(load.status)) return { load, versions: {} };
    const v = await readVersions(reader, orgId);
    return { load, versions: { marketVersion: v.market_rates, historyVersion: historyVersionOf(v) } };
  }
  const { key, docs } = await loadDocumentByRef(reader, orgId, ref, guard?.keyId ?? null);
  guard?.settle(key);
  const [doc] = docs;
  if (!doc) throw new NotFoundError('Load', ref);
  return {
    load: (await presentLoadDocuments(deps.lanes, reader, orgId, [doc]))[0]!,
    stops: doc.stops,
    versions: { marketVersion: doc.market_version, historyVersion: historyVersionOf(doc.history_versions) },
  };
}

/** GET of one load: an open load carries its carrier recommendations, any other an empty list. */
async function getLoad(loads: Loads, orgId: string, ref: string, guard: KeyGuard | null): Promise<Load> {
  const { load, stops, versions } = await readOne(loads, orgId, ref, guard);
  const { deps, pipeline } = loads.store;
  const recommendations: CarrierRecommendation[] = OPEN_STATUSES.has(load.status)
    ? await deps.lanes.recommend(pipeline.reader, orgId, load, stops, versions)
    : [];
  return Object.assign({}, load, { carrier_recommendations: recommendations });
}

/** The list filters in stored form (a named customer or carrier is matched by reference in the query). */
function listFilter(query: LoadListQuery): LoadFilter {
  return Object.assign({}, query, query.status !== undefined ? { statuses: statusFilter(query.status) } : {}, {
    customer_ref: query.customer_external_reference_id,
    carrier_ref: query.carrier_external_reference_id,
  });
}

/** A page of loads: on PostgreSQL as documents (the key check folded in), else a statement per kind of part. */
async function listPage(loads: Loads, orgId: string, query: LoadListQuery, guard: KeyGuard | null) {
  const { deps, pipeline } = loads.store;
  const reader = pipeline.reader;
  const filter = listFilter(query);
  const pageOf = (total: number) => pagination(query.page, query.page_size, total);
  if (deps.oneStatementReads) {
    const { key, docs, total } = await listLoadDocuments(reader, orgId, filter, query, guard?.keyId ?? null);
    guard?.settle(key);
    return { items: await presentLoadDocuments(deps.lanes, reader, orgId, docs), pagination: pageOf(total ?? 0) };
  }
  const { rows, total } = await listLoads(reader, orgId, filter, query);
  return { items: await presentLoads(deps.lanes, reader, orgId, rows), pagination: pageOf(total) };
}

/** The loads' service: the record lifecycle of LOAD_KIND, GET with recommendations, and the list. */
export function loadsService(ctx: RecordContext, options: LoadsOptions) {
  // PostgreSQL: a read is one round trip (the load and its parts, and the caller's key, in one statement).
  const deps: LoadDeps = {
    clock: ctx.clock,
    lanes: options.lanes,
    circuityFactor: options.circuityFactor,
    oneStatementReads: readsLoadsAsDocuments(ctx.pipeline.reader),
  };
  const loads: Loads = recordLifecycle(LOAD_KIND, deps, ctx);
  return Object.assign({}, loads, {
    /** Stored rows to answers (tracking's announcements). */
    present: (tx: Executor, orgId: string, rows: LoadsTable[]) => presentLoads(deps.lanes, tx, orgId, rows),
    get: (orgId: string, ref: string, guard: KeyGuard | null = null) => getLoad(loads, orgId, ref, guard),
    /** One load by reference with what its recommendations read (its stops' places, the counters their kept reads check). */
    readForRecommendations: (orgId: string, ref: string, guard: KeyGuard | null) => readOne(loads, orgId, ref, guard),
    list: (orgId: string, query: LoadListQuery, guard: KeyGuard | null = null) => listPage(loads, orgId, query, guard),
  });
}

export type LoadsService = ReturnType<typeof loadsService>;
