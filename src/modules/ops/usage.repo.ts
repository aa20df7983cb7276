import { sql, type ExpressionBuilder } from 'kysely';
import type { Db } from '../../lib/db/index.js';
import type { ApiUsageHourlyTable, Database, FailedWritesTable, IgnoredFieldsTable } from '../../lib/db/types.js';

/** A failed write's place in the newest-first order (the Overview's pages). */
export interface FailedWriteCursor {
  occurred_at: string;
  id: string;
}

/**
 * What was counted since the last flush, written in one transaction: hourly counters and ignored-field
 * counts added to the rows already there, failed writes appended (100 rows a statement).
 */
export async function writeUsage(
  db: Db,
  counters: readonly ApiUsageHourlyTable[],
  failed: readonly FailedWritesTable[],
  ignored: readonly IgnoredFieldsTable[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const row of counters) {
      await tx
        .insertInto('api_usage_hourly')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['org_id', 'hour', 'key_id']).doUpdateSet({
            ok: sql`api_usage_hourly.ok + excluded.ok`,
            client_errors: sql`api_usage_hourly.client_errors + excluded.client_errors`,
            server_errors: sql`api_usage_hourly.server_errors + excluded.server_errors`,
            rate_limited: sql`api_usage_hourly.rate_limited + excluded.rate_limited`,
            last_request_at: sql`case when excluded.last_request_at > api_usage_hourly.last_request_at then excluded.last_request_at else api_usage_hourly.last_request_at end`,
          }),
        )
        .execute();
    }
    for (let i = 0; i < failed.length; i += 100)
      await tx
        .insertInto('failed_writes')
        .values(failed.slice(i, i + 100))
        .execute();
    for (const row of ignored) {
      await tx
        .insertInto('ignored_fields')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['org_id', 'key_id', 'route', 'field']).doUpdateSet({
            count: sql`ignored_fields.count + excluded.count`,
            last_seen_at: sql`case when excluded.last_seen_at > ignored_fields.last_seen_at then excluded.last_seen_at else ignored_fields.last_seen_at end`,
          }),
        )
        .execute();
    }
  });
}

/** Failed writes and ignored fields last seen before `cutoff`, and hourly usage before `hourCutoff`, go. */
export async function deleteUsageBefore(db: Db, cutoff: string, hourCutoff: string): Promise<void> {
  await db.deleteFrom('failed_writes').where('occurred_at', '<', cutoff).execute();
  await db.deleteFrom('ignored_fields').where('last_seen_at', '<', cutoff).execute();
  await db.deleteFrom('api_usage_hourly').where('hour', '<', hourCutoff).execute();
}

/** Keeps the organization's newest `keep` failed writes (by occurred_at, id); the older go. */
export async function trimFailedWrites(db: Db, orgId: string, keep: number): Promise<void> {
  const edge = await db
    .selectFrom('failed_writes')
    .select(['occurred_at', 'id'])
    .where('org_id', '=', orgId)
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .offset(keep)
    .limit(1)
    .executeTakeFirst();
  if (edge) {
    await db
      .deleteFrom('failed_writes')
      .where('org_id', '=', orgId)
      .where((eb) => eb.or([eb('occurred_at', '<', edge.occurred_at), eb.and([eb('occurred_at', '=', edge.occurred_at), eb('id', '<=', edge.id)])]))
      .execute();
  }
}

/** The organization's hourly usage from the hour `sinceHour`, every key. */
export function usageHourly(db: Db, orgId: string, sinceHour: string) {
  return db.selectFrom('api_usage_hourly').selectAll().where('org_id', '=', orgId).where('hour', '>=', sinceHour).orderBy('hour').execute();
}

/** The organization's ignored fields seen since `sinceIso`, most counted first. */
export function ignoredFieldsSince(db: Db, orgId: string, sinceIso: string, limit: number) {
  return db
    .selectFrom('ignored_fields')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('last_seen_at', '>=', sinceIso)
    .orderBy('count', 'desc')
    .orderBy('last_seen_at', 'desc')
    .orderBy('field')
    .limit(limit)
    .execute();
}

/**
 * Failed writes since `sinceIso`, newest first, at most `limit`: the newest, or those just older
 * (`before`) or just newer (`after`) than a row, by (occurred_at, id), a keyset the
 * failed_writes_org_idx index serves and that new failures do not shift. With the count of them
 * all and of those newer than the first row returned (its position).
 */
export async function failedWritesPage(
  db: Db,
  orgId: string,
  sinceIso: string,
  limit: number,
  page: { before?: FailedWriteCursor; after?: FailedWriteCursor } = {},
) {
  const since = () => db.selectFrom('failed_writes').where('org_id', '=', orgId).where('occurred_at', '>=', sinceIso);
  const newerThan = (c: FailedWriteCursor) => (eb: ExpressionBuilder<Database, 'failed_writes'>) =>
    eb.or([eb('occurred_at', '>', c.occurred_at), eb.and([eb('occurred_at', '=', c.occurred_at), eb('id', '>', c.id)])]);
  const olderThan = (c: FailedWriteCursor) => (eb: ExpressionBuilder<Database, 'failed_writes'>) =>
    eb.or([eb('occurred_at', '<', c.occurred_at), eb.and([eb('occurred_at', '=', c.occurred_at), eb('id', '<', c.id)])]);
  const countOf = (q: ReturnType<typeof since>) =>
    q
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst()
      .then((r) => Number(r?.n ?? 0));
  const newest = (q = since()) => q.selectAll().orderBy('occurred_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  const rowsPromise = page.after
    ? since()
        .selectAll()
        .where(newerThan(page.after))
        .orderBy('occurred_at', 'asc')
        .orderBy('id', 'asc')
        .limit(limit)
        .execute()
        // Fewer than a page newer than the cursor: that is the newest page, shown whole.
        .then((r) => (r.length < limit ? newest() : r.reverse()))
    : newest(page.before ? since().where(olderThan(page.before)) : since());
  const [rows, total] = await Promise.all([rowsPromise, countOf(since())]);
  const newer = rows.length > 0 ? await countOf(since().where(newerThan(rows[0]!))) : 0;
  return { rows, total, newer };
}
