import type { Executor } from '../../lib/db/index.js';
import { ConflictError } from '../../lib/http/errors.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { DeleteGuard, RecordReference, SimpleRecordTable } from '../shared/record-kind.js';
import { loadsUsing } from './loads.repo.js';

/** A load's customer (required). */
export const LOAD_CUSTOMER = {
  kind: 'customers',
  field: 'customer_external_reference_id',
  usedAs: 'as their customer',
  refusesDelete: true,
} as const satisfies RecordReference;

/** A load's carrier (optional). */
export const LOAD_CARRIER = {
  kind: 'carriers',
  field: 'carrier_external_reference_id',
  usedAs: 'as their carrier',
  refusesDelete: true,
} as const satisfies RecordReference;

/** The location of each of a load's stops (`stops[i].location_external_reference_id`). */
export const LOAD_STOP_LOCATION = {
  kind: 'locations',
  field: 'location_external_reference_id',
  usedAs: 'as a stop',
  refusesDelete: true,
} as const satisfies RecordReference;

/** The records a load names (docs/api.md, "Loads"); each refuses its delete while a load uses it (docs/api.md, "Deleting"). */
export const LOAD_REFERENCES = [LOAD_CUSTOMER, LOAD_CARRIER, LOAD_STOP_LOCATION] as const;

/** A reference a load's body names at its top level. */
export type LoadReference = typeof LOAD_CUSTOMER | typeof LOAD_CARRIER;

/** 409 when loads still use the record (naming a few of them): delete or change those loads first. */
async function refuseWhileLoadsUse(reference: RecordReference, tx: Executor, orgId: string, row: { id: string; external_reference_id: string }): Promise<void> {
  const by = reference.kind === 'customers' ? { customerId: row.id } : reference.kind === 'carriers' ? { carrierId: row.id } : { locationId: row.id };
  const { count, sample } = await loadsUsing(tx, orgId, by);
  if (count === 0) return;
  const more = count > sample.length ? ` and ${count - sample.length} more` : '';
  throw new ConflictError(
    `${RECORD_KINDS[reference.kind].name} with external_reference_id '${row.external_reference_id}' is used ${reference.usedAs} by ${count} load${count === 1 ? '' : 's'} (${sample.map((s) => `'${s}'`).join(', ')}${more}): delete or change those loads first`,
  );
}

/**
 * The delete guard of a customer, carrier or location, derived from the loads' declared references: a
 * record a load still uses cannot be deleted (409, naming the loads; docs/api.md, "Deleting").
 */
export function refuseDeleteWhileLoadsUse(kind: SimpleRecordTable): DeleteGuard | undefined {
  const reference = LOAD_REFERENCES.find((r) => r.kind === kind && r.refusesDelete);
  return reference ? (tx, orgId, row) => refuseWhileLoadsUse(reference, tx, orgId, row) : undefined;
}
