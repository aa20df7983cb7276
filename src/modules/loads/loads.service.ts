import { ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import type { Clock } from '../../lib/clock.js';
import { LOAD_STATUSES, OPEN_STATUSES } from '../../domain/enums.js';
import { recordLifecycle, type ServiceHooks } from '../shared/record-store.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { CarrierRecommendation } from '../lanes/lanes.schema.js';
import type { LanesService } from '../lanes/lanes.service.js';
import { loadPresenter } from './loads.present.js';
import { countStatusChange, findByRefs, listLoads, type LoadFilter } from './loads.repo.js';
import { LoadCreate, LoadUpdate, type Load, type LoadListQuery } from './loads.schema.js';
import { loadWrites } from './loads.write.js';

export interface LoadsOptions {
  /** Road miles per great-circle mile for estimated distances (D4: 1.2, the usual truck circuity). */
  circuityFactor: number;
}

export interface LoadsDeps extends ServiceHooks {
  pipeline: WritePipeline;
  lanes: LanesService;
}

/** `status` of the list: one value or several, comma-separated, any case (D2). */
function statusFilter(text: string): string[] {
  const canonical = new Map(LOAD_STATUSES.map((s) => [s.toLowerCase(), s]));
  const parts = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !canonical.has(p.toLowerCase()))) {
    throw new ValidationError([{ type: 'enum', loc: ['query', 'status'], msg: `Input should be one or more of ${LOAD_STATUSES.map((s) => `'${s}'`).join(', ')}, separated by commas` }]);
  }
  return parts.map((p) => canonical.get(p.toLowerCase())!);
}

export function loadsService(clock: Clock, options: LoadsOptions, deps: LoadsDeps) {
  const { pipeline, lanes } = deps;
  const reader = pipeline.reader;
  const writes = loadWrites(clock, options);
  const present = loadPresenter(lanes);

  const lifecycle = recordLifecycle<'loads', LoadCreate, LoadUpdate, Load>({
    pipeline,
    clock,
    table: 'loads',
    createSchema: LoadCreate,
    updateSchema: LoadUpdate,
    batchOperations: ['create', 'update', 'upsert', 'delete'],
    // One analytics run per load write request, exactly one per batch (D7).
    analyticsRun: true,
    insert: writes.insert,
    updateColumns: writes.updateColumns,
    present,
    // Lane history follows every load write in the same transaction: recommendations read their writes.
    afterSave: (tx, orgId, row) => lanes.syncLoad(tx, orgId, row.id),
    beforeDelete: (tx, orgId, row) => countStatusChange(tx, orgId, row.status, null),
    lanesOfDeleted: (tx, _orgId, row) => lanes.laneOfLoad(tx, row.id),
  });

  const recommendations = (orgId: string, load: Load): Promise<CarrierRecommendation[]> => lanes.recommend(reader, orgId, load);

  /** The list filters in stored form; null when a named customer or carrier does not exist (nothing matches). */
  async function listFilter(orgId: string, query: LoadListQuery): Promise<LoadFilter | null> {
    const filter: LoadFilter = { ...query, ...(query.status !== undefined ? { statuses: statusFilter(query.status) } : {}) };
    if (query.customer_external_reference_id !== undefined) {
      const [c] = await findByRefs(reader, 'customers', orgId, [query.customer_external_reference_id]);
      if (!c || (query.customer_id !== undefined && query.customer_id !== c.id)) return null;
      filter.customer_id = c.id;
    }
    if (query.carrier_external_reference_id !== undefined) {
      const [c] = await findByRefs(reader, 'carriers', orgId, [query.carrier_external_reference_id]);
      if (!c) return null;
      filter.carrier_id = c.id;
    }
    return filter;
  }

  return {
    ...lifecycle,
    present,
    /** GET of one load: an open load carries its carrier recommendations (D7), any other an empty list. */
    async get(orgId: string, ref: string): Promise<Load> {
      const load = await lifecycle.get(orgId, ref);
      return { ...load, carrier_recommendations: OPEN_STATUSES.has(load.status) ? await recommendations(orgId, load) : [] };
    },
    /** The dedicated endpoint: recommendations for any load, open or not. */
    async recommendationsFor(orgId: string, ref: string) {
      const load = await lifecycle.get(orgId, ref);
      return {
        load_id: load.id,
        external_reference_id: load.external_reference_id,
        status: load.status,
        open: OPEN_STATUSES.has(load.status),
        carrier_recommendations: await recommendations(orgId, load),
      };
    },
    async list(orgId: string, query: LoadListQuery) {
      const filter = await listFilter(orgId, query);
      const { rows, total } = filter ? await listLoads(reader, orgId, filter, query) : { rows: [], total: 0 };
      return { items: await present(reader, orgId, rows), pagination: pagination(query.page, query.page_size, total) };
    },
  };
}

export type LoadsService = ReturnType<typeof loadsService>;
