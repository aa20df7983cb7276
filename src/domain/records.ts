/**
 * The kinds of record an organization keeps, and every name each goes by: the one table the events,
 * the routes, the dashboard, the error messages and the ids read. Keyed by table name, which is also
 * the kind's counter (org_versions) and the `kind` of its events.
 *
 * - `noun`: singular; the first word of its event types (`customer.created`), the batch data
 *   object's key, the OpenAPI summaries.
 * - `name`: in messages (`Customer with external_reference_id 'C-1' not found`).
 * - `plural`: a heading (the OpenAPI tag, the dashboard's menu).
 * - `collection`: the path segment of its API routes and dashboard pages (`/v2/tms-api/customers`).
 * - `idPrefix`: before the `_` of its ids (`cust_01…`).
 */
export const RECORD_KINDS = {
  customers: { noun: 'customer', name: 'Customer', plural: 'Customers', collection: 'customers', idPrefix: 'cust' },
  carriers: { noun: 'carrier', name: 'Carrier', plural: 'Carriers', collection: 'carriers', idPrefix: 'carrier' },
  locations: { noun: 'location', name: 'Location', plural: 'Locations', collection: 'locations', idPrefix: 'loc' },
  loads: { noun: 'load', name: 'Load', plural: 'Loads', collection: 'loads', idPrefix: 'load' },
  market_rates: { noun: 'market_rate', name: 'Market rate snapshot', plural: 'Market rates', collection: 'market-rates', idPrefix: 'mrs' },
} as const;

export type RecordKind = keyof typeof RECORD_KINDS;
/** The records callers address by external_reference_id (market rate snapshots are only created and listed). */
export type ReferencedRecordKind = Exclude<RecordKind, 'market_rates'>;
export type RecordNoun = (typeof RECORD_KINDS)[RecordKind]['noun'];
export type RecordName = (typeof RECORD_KINDS)[RecordKind]['name'];
export type RecordIdPrefix = (typeof RECORD_KINDS)[RecordKind]['idPrefix'];

export function isRecordKind(kind: string): kind is RecordKind {
  return Object.hasOwn(RECORD_KINDS, kind);
}
