import type { Executor } from '../../lib/db/index.js';
import type { CustomersTable, CarriersTable, LocationsTable, LoadsTable } from '../../lib/db/types.js';
import type { BatchPrefetchItem } from '../batch/batch.js';
import { attachBatchReads, BatchReads } from '../shared/batch-reads.js';
import { loadsByRefs, ratesOf, recordsByRefs, stopsOf } from './loads.repo.js';
import { historyLanesOf, LANE_HISTORY } from '../lanes/lanes.repo.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string[] => (typeof v === 'string' ? [v] : []);

// Kinds of BatchReads the load write path asks for (loads.repo.ts).
const LOAD_STOPS = 'load_stops';
const LOAD_RATES = 'load_rates';

/**
 * A load batch's reads, all at once at its start (a handful of statements instead of a point read per
 * item and reference): the batch's loads (locked on PostgreSQL, in reference order, so the batch never
 * waits on a row half-way), their stops, rates and lane history rows, and every customer, carrier and location the items
 * name. The items then read from here (src/modules/shared/batch-reads.ts).
 */
export async function prefetchLoadBatch(tx: Executor, orgId: string, items: BatchPrefetchItem[], lock: boolean): Promise<void> {
  const refs = new Set<string>();
  const customers = new Set<string>();
  const carriers = new Set<string>();
  const locations = new Set<string>();
  for (const { ref, data } of items) {
    for (const r of str(ref)) refs.add(r);
    if (!isObject(data)) continue;
    for (const r of str(data.external_reference_id)) refs.add(r);
    for (const r of str(data.customer_external_reference_id)) customers.add(r);
    for (const r of str(data.carrier_external_reference_id)) carriers.add(r);
    if (Array.isArray(data.stops)) for (const s of data.stops) if (isObject(s)) for (const r of str(s.location_external_reference_id)) locations.add(r);
  }
  const loads = await loadsByRefs(tx, orgId, [...refs], lock);
  const ids = loads.map((l) => l.id);
  const [stops, rates, history, cs, cas, ls] = [
    await stopsOf(tx, orgId, ids, true),
    await ratesOf(tx, orgId, ids, true),
    await historyLanesOf(tx, orgId, ids),
    await recordsByRefs(tx, 'customers', orgId, [...customers]),
    await recordsByRefs(tx, 'carriers', orgId, [...carriers]),
    await recordsByRefs(tx, 'locations', orgId, [...locations]),
  ];
  const reads = new BatchReads();
  const byRef = <R extends { external_reference_id: string }>(rows: R[]) => new Map(rows.map((r) => [r.external_reference_id, r]));
  const grouped = <R extends { load_id: string }>(rows: R[]) => {
    const m = new Map<string, R[]>(ids.map((id) => [id, []]));
    for (const r of rows) m.get(r.load_id)?.push(r);
    return m;
  };
  // Written by the batch: served once per key.
  reads.set('loads', true, refs, byRef<LoadsTable>(loads));
  reads.set(LOAD_STOPS, true, ids, grouped(stops));
  reads.set(LOAD_RATES, true, ids, grouped(rates));
  reads.set(LANE_HISTORY, true, ids, history);
  // Only read by it.
  reads.set('customers', false, customers, byRef<CustomersTable>(cs));
  reads.set('carriers', false, carriers, byRef<CarriersTable>(cas));
  reads.set('locations', false, locations, byRef<LocationsTable>(ls));
  attachBatchReads(tx, reads);
}
