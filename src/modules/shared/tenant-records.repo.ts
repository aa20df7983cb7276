import type { Executor } from '../../lib/db/index.js';
import { prepared } from '../../lib/db/prepared.js';
import type { Database } from '../../lib/db/types.js';
import type { ReferencedRecordKind } from '../../domain/records.js';

/** Tables of the records callers address by external_reference_id. */
export type RecordTable = ReferencedRecordKind;

export type RowOf<T extends RecordTable> = Database[T];

/**
 * Point reads and writes every tenant record table shares. Every statement filters by org_id: a
 * record of another organization is as absent as one that never existed.
 */
export function tenantRecords<T extends RecordTable>(table: T) {
  // Kysely cannot type a query over a table chosen by a type parameter; the casts stay in here.
  const t = table as 'customers';
  const byRef = prepared<{ orgId: string; ref: string }, RowOf<T>>(
    (db, p) => db.selectFrom(t).selectAll().where('org_id', '=', p('orgId')).where('external_reference_id', '=', p('ref')) as never,
  );
  return {
    findByRef: async (tx: Executor, orgId: string, ref: string): Promise<RowOf<T> | undefined> => (await byRef(tx, { orgId, ref }))[0],
    findById: (tx: Executor, orgId: string, id: string) =>
      tx.selectFrom(t).selectAll().where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst() as Promise<RowOf<T> | undefined>,
    insert: (tx: Executor, row: RowOf<T>) =>
      tx
        .insertInto(t)
        .values(row as never)
        .execute(),
    update: (tx: Executor, orgId: string, id: string, patch: Partial<RowOf<T>>) =>
      tx
        .updateTable(t)
        .set(patch as never)
        .where('org_id', '=', orgId)
        .where('id', '=', id)
        .execute(),
    delete: (tx: Executor, orgId: string, id: string) => tx.deleteFrom(t).where('org_id', '=', orgId).where('id', '=', id).executeTakeFirst(),
  };
}
