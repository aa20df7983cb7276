import type { Executor } from '../../lib/db/index.js';
import { fetchPage, sinceFilters } from '../../lib/db/paging.js';
import type { MarketRateSnapshotsTable } from '../../lib/db/types.js';
import type { MarketRateListQuery } from './rates.schema.js';

/** A location of the organization as a lane end. */
export function locationPoint(tx: Executor, orgId: string, ref: string) {
  return tx
    .selectFrom('locations')
    .select(['latitude', 'longitude', 'state'])
    .where('org_id', '=', orgId)
    .where('external_reference_id', '=', ref)
    .executeTakeFirst();
}

export const insertSnapshot = (tx: Executor, row: MarketRateSnapshotsTable) => tx.insertInto('market_rate_snapshots').values(row).execute();

export function listSnapshots(tx: Executor, orgId: string, query: MarketRateListQuery) {
  let q = tx.selectFrom('market_rate_snapshots').where('org_id', '=', orgId);
  if (query.equipment_type) q = q.where('equipment_type', '=', query.equipment_type);
  // Snapshots are never updated (no updated_at column): updated_since filters on created_at.
  if (query.updated_since) q = q.where('created_at', '>=', query.updated_since);
  return fetchPage<'market_rate_snapshots', MarketRateSnapshotsTable>(sinceFilters(q, { created_since: query.created_since }), query, {
    as_of: 'as_of',
    created_at: 'created_at',
  });
}
