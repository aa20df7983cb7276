import type { Executor } from '../../lib/db/index.js';
import { ConflictError } from '../../lib/http/errors.js';
import { loadsUsing } from './loads.repo.js';

type Referenced = 'Customer' | 'Carrier' | 'Location';

/**
 * A customer, carrier or location that a load still uses cannot be deleted (409, naming the loads;
 * docs/api.md, "Deleting"); delete or change those loads first. Given to those services as their
 * beforeDelete.
 */
export function refuseDeleteWhileLoadsUse(kind: Referenced) {
  return async (tx: Executor, orgId: string, row: { id: string; external_reference_id: string }) => {
    const by = kind === 'Customer' ? { customerId: row.id } : kind === 'Carrier' ? { carrierId: row.id } : { locationId: row.id };
    const { count, sample } = await loadsUsing(tx, orgId, by);
    if (count === 0) return;
    const how = kind === 'Location' ? 'as a stop' : kind === 'Carrier' ? 'as their carrier' : 'as their customer';
    const more = count > sample.length ? ` and ${count - sample.length} more` : '';
    throw new ConflictError(
      `${kind} with external_reference_id '${row.external_reference_id}' is used ${how} by ${count} load${count === 1 ? '' : 's'} (${sample.map((s) => `'${s}'`).join(', ')}${more}): delete or change those loads first`,
    );
  };
}
