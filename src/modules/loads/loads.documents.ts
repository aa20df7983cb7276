import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import type { Database, LoadRatesTable, LoadsTable } from '../../lib/db/types.js';
import type { KeyState } from '../../lib/http/principal.js';
import type { StopWithLocation } from './loads.repo.js';

/**
 * PostgreSQL: a load with everything its answer shows, from one statement (one round trip). SQLite
 * answers the same from several in-process statements (loads.repo.ts), where a statement costs
 * microseconds and JSON aggregation would cost more than it saves.
 */
export interface LoadDocument extends LoadsTable {
  customer_ref: string | null;
  customer_name: string | null;
  carrier_ref: string | null;
  carrier_name: string | null;
  stops: StopWithLocation[];
  rates: LoadRatesTable[];
  /** The organization's users whose email or name matches one of the load's reps (D4's service_user_id). */
  rep_users: { id: string; email_lower: string; name: string }[] | null;
  /** D8: the load takes its max_buy_rate from the market and a snapshot of its equipment exists. */
  market_priced: boolean;
}

export interface DocumentsResult {
  /** The caller's key as the statement found it (undefined: no key was checked in it; null: revoked). */
  key: KeyState | null | undefined;
  /** The list's total (pages only). */
  total: number | null;
  docs: LoadDocument[];
}

/** The key check folded into the data statement (src/lib/http/auth.ts): the key's limits, null when revoked. */
const keyState = (keyId: string | null): RawBuilder<unknown> =>
  keyId === null
    ? sql`null::json`
    : sql`(select json_build_object('per_minute', k.per_minute, 'per_day', k.per_day) from api_keys k where k.id = ${keyId} and k.revoked_at is null)`;

const rep = (column: string, field: 'email' | 'name') => sql.raw(`lower(l.${column}::json->>'${field}')`);

/** The parts of one load `l` (a row of loads, joined as `l`), as JSON columns. */
const PARTS = sql`
  c.external_reference_id as customer_ref, c.name as customer_name,
  ca.external_reference_id as carrier_ref, ca.name as carrier_name,
  (select coalesce(json_agg(json_build_object(
      'id', s.id, 'org_id', s.org_id, 'load_id', s.load_id, 'stop_number', s.stop_number, 'stop_type', s.stop_type,
      'location_id', s.location_id, 'location_external_reference_id', lo.external_reference_id, 'location_name', lo.name,
      'latitude', lo.latitude, 'longitude', lo.longitude, 'early_arrival', s.early_arrival, 'late_arrival', s.late_arrival)
    order by s.stop_number), '[]'::json)
   from load_stops s join locations lo on lo.id = s.location_id where s.org_id = l.org_id and s.load_id = l.id) as stops,
  (select coalesce(json_agg(json_build_object(
      'id', r.id, 'org_id', r.org_id, 'load_id', r.load_id, 'position', r.position, 'rate_entity', r.rate_entity,
      'amount', r.amount, 'currency', r.currency, 'rate_type', r.rate_type, 'description', r.description)
    order by r.position), '[]'::json)
   from load_rates r where r.org_id = l.org_id and r.load_id = l.id) as rates,
  case when l.sales_rep is null and l.dispatcher_rep is null then null else
    (select json_agg(json_build_object('id', u.id, 'email_lower', u.email_lower, 'name', u.name)) from users u
     where u.org_id = l.org_id
       and (u.email_lower in (${rep('sales_rep', 'email')}, ${rep('dispatcher_rep', 'email')})
            or lower(trim(u.name)) in (${rep('sales_rep', 'name')}, ${rep('dispatcher_rep', 'name')})))
  end as rep_users,
  (l.max_buy_rate_source is distinct from 'caller'
   and exists (select 1 from market_rate_snapshots m where m.org_id = l.org_id and m.equipment_type = l.equipment_type)) as market_priced`;

const FROM_PARTS = sql`left join customers c on c.id = l.customer_id left join carriers ca on ca.id = l.carrier_id`;

interface Head {
  key_state: KeyState | null;
  total: string | number | null;
}

function split(rows: (Head & Partial<LoadDocument>)[]): DocumentsResult {
  const head = rows[0];
  const docs = rows.filter((r) => r.id !== null && r.id !== undefined).map((r) => {
    const { key_state: _k, total: _t, ...doc } = r;
    return doc as LoadDocument;
  });
  return { key: head?.key_state ?? null, total: head?.total === null || head?.total === undefined ? null : Number(head.total), docs };
}

/**
 * One load by reference, with the key check when `keyId` is given: a row always comes back (the key's
 * state), with the load's columns null when there is no such load.
 */
export async function loadDocumentByRef(tx: Executor, orgId: string, ref: string, keyId: string | null): Promise<DocumentsResult> {
  const { rows } = await sql<Head & Partial<LoadDocument>>`
    select ${keyState(keyId)} as key_state, null::bigint as total, d.*
    from (select 1) as one
    left join lateral (
      select l.*, ${PARTS}
      from loads l ${FROM_PARTS}
      where l.org_id = ${orgId} and l.external_reference_id = ${ref}
    ) as d on true`.execute(tx);
  const result = split(rows);
  return keyId === null ? { ...result, key: undefined } : result;
}

/**
 * A page of loads: `ids` selects the page's ids in order (with its limit and offset), `total` counts
 * the list; the rows come back in `orderBy` order. One statement, one row per load (or one empty row).
 */
export async function loadDocumentsPage(
  tx: Executor,
  page: { ids: SelectQueryBuilder<Database, 'loads', { id: string }>; total: RawBuilder<unknown>; orderBy: RawBuilder<unknown> },
  keyId: string | null,
): Promise<DocumentsResult> {
  const { rows } = await sql<Head & Partial<LoadDocument>>`
    select ${keyState(keyId)} as key_state, ${page.total} as total, d.*
    from (select 1) as one
    left join lateral (
      select l.*, ${PARTS}
      from (${page.ids}) as p join loads l on l.id = p.id ${FROM_PARTS}
    ) as d on true
    order by ${page.orderBy}`.execute(tx);
  const result = split(rows);
  return keyId === null ? { ...result, key: undefined } : result;
}
