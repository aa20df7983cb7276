import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Executor } from '../../lib/db/index.js';
import { readsInProcess } from '../../lib/db/capabilities.js';
import { LOAD_COLUMNS, type Database, type LoadRatesTable, type LoadsTable, type StopWithLocation } from '../../lib/db/types.js';
import type { KeyState } from '../../lib/http/principal.js';

/**
 * PostgreSQL: a load with everything its answer shows, from one statement (one round trip). SQLite
 * answers the same from several in-process statements (loads.repo.ts), where a statement costs
 * microseconds and JSON aggregation would cost more than it saves.
 */
/**
 * Whether this engine reads a load with its parts as one document (PostgreSQL: a round trip is the cost),
 * rather than as several in-process statements (SQLite: a statement costs microseconds).
 */
export const readsLoadsAsDocuments = (tx: Executor): boolean => !readsInProcess(tx);

export interface LoadDocument extends LoadsTable {
  customer_ref: string | null;
  customer_name: string | null;
  carrier_ref: string | null;
  carrier_name: string | null;
  stops: StopWithLocation[];
  rates: LoadRatesTable[];
  /** The organization's users whose email or name matches one of the load's reps (their service_user_id). */
  rep_users: { id: string; email_lower: string; name: string }[] | null;
  /** The load takes its max_buy_rate from the market and a snapshot of its equipment exists. */
  market_priced: boolean;
  /** The organization's market counter as of the statement (src/lib/db/versions.ts): the kept lane prices it checks. */
  market_version: number;
  /** The organization's counters of lane history and carriers as of the statement: the kept lane rows check them. */
  history_versions: { lane_history: number; carriers: number };
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
    : sql`(select json_build_object('per_minute', k.per_minute, 'per_day', k.per_day, 'expires_at', k.expires_at, 'strict', k.strict) from api_keys k where k.id = ${keyId} and k.revoked_at is null)`;

const rep = (column: string, field: 'email' | 'name') => sql.raw(`lower(l.${column}::json->>'${field}')`);

/**
 * One load `l` (a row of loads joined with `c` and `ca`) as one JSON array: its columns, then its
 * customer's and carrier's reference and name, its stops with their places, its rates, its reps' users,
 * its market max_buy_rate flag and the organization's counters of market rates, lane history and
 * carriers. Arrays, not objects: PostgreSQL builds them and Node parses them in about half the time of
 * the same data with a key per value (measured: docs/deployment.md), and a page is one JSON value parsed
 * at once (JSON.parse) instead of 50 rows of 34 columns taken apart by the driver.
 */
const DOCUMENT = sql`json_build_array(${sql.raw(LOAD_COLUMNS.map((c) => `l.${c}`).join(', '))},
  c.external_reference_id, c.name, ca.external_reference_id, ca.name,
  (select json_agg(json_build_array(s.id, s.stop_number, s.stop_type, s.location_id, lo.external_reference_id, lo.name,
      lo.latitude, lo.longitude, s.early_arrival, s.late_arrival, s.actual_arrival, s.actual_departure, s.arrival_deadline) order by s.stop_number)
   from load_stops s join locations lo on lo.id = s.location_id where s.org_id = l.org_id and s.load_id = l.id),
  (select json_agg(json_build_array(r.id, r.position, r.rate_entity, r.amount, r.currency, r.rate_type, r.description) order by r.position)
   from load_rates r where r.org_id = l.org_id and r.load_id = l.id),
  case when l.sales_rep is null and l.dispatcher_rep is null then null else
    (select json_agg(json_build_array(u.id, u.email_lower, u.name)) from users u
     where u.org_id = l.org_id
       and (u.email_lower in (${rep('sales_rep', 'email')}, ${rep('dispatcher_rep', 'email')})
            or lower(trim(u.name)) in (${rep('sales_rep', 'name')}, ${rep('dispatcher_rep', 'name')})))
  end,
  (l.max_buy_rate_source is distinct from 'caller'
   and exists (select 1 from market_rate_snapshots m where m.org_id = l.org_id and m.equipment_type = l.equipment_type)),
  (select json_build_array(v.market_rates, v.lane_history, v.carriers) from org_versions v where v.org_id = l.org_id))`;

const FROM_PARTS = sql`left join customers c on c.id = l.customer_id left join carriers ca on ca.id = l.carrier_id`;

type Json = string | number | boolean | null;
type StopArray = [string, number, string, string, string, string, number, number, string, string, string | null, string | null, string | null];
type RateArray = [string, number, string, number, string, string, string | null];

/** A document's array (DOCUMENT) back to a LoadDocument. */
function decode(a: unknown[]): LoadDocument {
  const doc = {} as Record<string, unknown>;
  for (let i = 0; i < LOAD_COLUMNS.length; i++) doc[LOAD_COLUMNS[i]!] = a[i] as Json;
  let i = LOAD_COLUMNS.length;
  doc.customer_ref = a[i++];
  doc.customer_name = a[i++];
  doc.carrier_ref = a[i++];
  doc.carrier_name = a[i++];
  const orgId = doc.org_id as string;
  const loadId = doc.id as string;
  doc.stops = ((a[i++] as StopArray[] | null) ?? []).map((s): StopWithLocation => ({
    id: s[0],
    org_id: orgId,
    load_id: loadId,
    stop_number: s[1],
    stop_type: s[2],
    location_id: s[3],
    location_external_reference_id: s[4],
    location_name: s[5],
    latitude: s[6],
    longitude: s[7],
    early_arrival: s[8],
    late_arrival: s[9],
    actual_arrival: s[10],
    actual_departure: s[11],
    arrival_deadline: s[12],
  }));
  doc.rates = ((a[i++] as RateArray[] | null) ?? []).map((r): LoadRatesTable => ({
    id: r[0],
    org_id: orgId,
    load_id: loadId,
    position: r[1],
    rate_entity: r[2],
    amount: r[3],
    currency: r[4],
    rate_type: r[5],
    description: r[6],
  }));
  const users = a[i++] as [string, string, string][] | null;
  doc.rep_users = users === null ? null : users.map((u) => ({ id: u[0], email_lower: u[1], name: u[2] }));
  doc.market_priced = a[i++] === true;
  const versions = (a[i++] as number[] | null) ?? [0, 0, 0];
  doc.market_version = Number(versions[0]);
  doc.history_versions = { lane_history: Number(versions[1]), carriers: Number(versions[2]) };
  return doc as unknown as LoadDocument;
}

interface Row {
  key_state: KeyState | null;
  total?: string | number | null;
  docs: unknown[][] | null;
}

function result(rows: Row[], keyId: string | null): DocumentsResult {
  const head = rows[0];
  const total = head?.total === null || head?.total === undefined ? null : Number(head.total);
  const docs = (head?.docs ?? []).map(decode);
  return { key: keyId === null ? undefined : (head?.key_state ?? null), total, docs };
}

/**
 * One load by reference, with the key check when `keyId` is given: one row always comes back (the key's
 * state), with no document when there is no such load.
 */
export async function loadDocumentByRef(tx: Executor, orgId: string, ref: string, keyId: string | null): Promise<DocumentsResult> {
  const { rows } = await sql<Row>`
    select ${keyState(keyId)} as key_state,
      (select json_build_array(${DOCUMENT}) from loads l ${FROM_PARTS}
       where l.org_id = ${orgId} and l.external_reference_id = ${ref}) as docs`.execute(tx);
  return result(rows, keyId);
}

/** The page's head: the key's state, the total, and the page's ids in order. */
interface Head {
  key_state: KeyState | null;
  total: string | number | null;
  ids: string[] | null;
}

/**
 * Loads by id with everything their answers show, in the order of `ids`, as one JSON array: one text for
 * any number of loads (the ids are one array parameter), so PostgreSQL keeps its generic plan and plans it
 * once per connection (docs/deployment.md, "Where a page's time goes (measured 2026-11-25, issue 14)").
 */
async function documentsByIds(tx: Executor, orgId: string, ids: readonly string[]): Promise<LoadDocument[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<{ docs: unknown[][] | null }>`
    select json_agg(${DOCUMENT} order by p.n) as docs
    from unnest(${[...ids]}::text[]) with ordinality as p(id, n) join loads l on l.id = p.id ${FROM_PARTS}
    where l.org_id = ${orgId}`.execute(tx);
  return (rows[0]?.docs ?? []).map(decode);
}

/**
 * A page of loads: `ids` selects the page's ids in order (with its limit and offset), `total` counts
 * the list, `orderBy` (over `l`, the loads) orders them. Two statements: the key's state, the total and
 * the page's ids (planned on every execution: its best plan depends on the limit and offset), then the
 * documents of those ids (planned once per connection). The documents used to come in the first one,
 * which made PostgreSQL plan their stops, rates, customer, carrier and reps on every page too: 0.63 ms
 * of planning against 0.13 ms now (EXPLAIN ANALYZE, BENCHMARKS.md).
 */
export async function loadDocumentsPage(
  tx: Executor,
  page: { orgId: string; ids: SelectQueryBuilder<Database, 'loads', { id: string }>; total: RawBuilder<unknown>; orderBy: RawBuilder<unknown> },
  keyId: string | null,
): Promise<DocumentsResult> {
  const { rows } = await sql<Head>`
    select ${keyState(keyId)} as key_state, ${page.total} as total,
      (select json_agg(l.id order by ${page.orderBy}) from (${page.ids}) as p join loads l on l.id = p.id) as ids`.execute(tx);
  const head = rows[0];
  const total = head?.total === null || head?.total === undefined ? null : Number(head.total);
  // A load deleted between the two statements is left out of the page (it is gone); the rest keep their order.
  const docs = await documentsByIds(tx, page.orgId, head?.ids ?? []);
  return { key: keyId === null ? undefined : (head?.key_state ?? null), total, docs };
}

/** Loads by id with everything their answers show, from one statement (a batch's events at seal). */
export function loadDocumentsByIds(tx: Executor, orgId: string, ids: readonly string[]): Promise<LoadDocument[]> {
  return documentsByIds(tx, orgId, ids);
}
