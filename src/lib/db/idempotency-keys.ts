import { CompiledQuery } from 'kysely';
import type { Executor } from './executor.js';
import { dialectOf } from './executor.js';
import { prepared } from './prepared.js';
import type { IdempotencyKeysTable } from './types.js';

/**
 * Storage of Idempotency-Keys (src/lib/http/idempotency.ts). Every statement runs on its own,
 * outside any transaction, so a claim is visible to every instance the moment it is made.
 */

/** A row as plain data (a mapped type, so it is a record of its columns). */
export type IdempotencyRow = { [K in keyof IdempotencyKeysTable]: IdempotencyKeysTable[K] };

/** A claim's columns as parameters of a prepared statement (the insert and the takeover write the same ones). */
const claimColumns = <P extends IdempotencyRow>(p: <K extends keyof P & string>(name: K) => P[K]) => ({
  fingerprint: p('fingerprint'),
  claim: p('claim'),
  status: p('status'),
  content_type: p('content_type'),
  body: p('body'),
  created_at: p('created_at'),
  lease_until: p('lease_until'),
  expires_at: p('expires_at'),
});

const insertClaim = prepared<IdempotencyRow, { claim: string }>((db, p) =>
  db
    .insertInto('idempotency_keys')
    .values({ org_id: p('org_id'), key: p('key'), ...claimColumns(p) })
    .onConflict((oc) => oc.columns(['org_id', 'key']).doNothing())
    .returning('claim'),
);

// PostgreSQL statements that commit without waiting for the WAL flush: `set_config(…, true)` lasts
// until the end of the statement's own transaction, so it holds for that commit and nothing else.
// Written as SQL text once (no query building per request).
const PG_CLAIM = `insert into idempotency_keys (org_id, key, fingerprint, claim, created_at, lease_until, expires_at)
  select $1, $2, $3, $4, $5, $6, $7 from (select set_config('synchronous_commit', 'off', true)) as no_flush_wait
  on conflict (org_id, key) do nothing returning claim`;
const PG_COMPLETE = `update idempotency_keys set status = $1, content_type = $2, body = $3
  from (select set_config('synchronous_commit', 'off', true)) as no_flush_wait
  where org_id = $4 and key = $5 and claim = $6`;

/**
 * Claims the key for a request about to run; false when the organization already holds that key.
 *
 * PostgreSQL: the claim commits without waiting for its WAL flush (synchronous_commit off for this one
 * statement; it halves its cost). Other sessions see it at once all the same, and the request's own
 * write, committed later and flushed, flushes the claim with it: a claim can only be lost with a
 * server crash that also loses the request's write.
 */
export async function claimIdempotencyKey(executor: Executor, row: IdempotencyRow): Promise<boolean> {
  if (dialectOf(executor) === 'postgres' && row.status === null) {
    const { rows } = await executor.executeQuery<{ claim: string }>(
      CompiledQuery.raw(PG_CLAIM, [row.org_id, row.key, row.fingerprint, row.claim, row.created_at, row.lease_until, row.expires_at]),
    );
    return rows.length === 1;
  }
  return (await insertClaim(executor, row)).length === 1;
}

const selectKey = prepared<{ orgId: string; key: string }, IdempotencyRow>((db, p) =>
  db.selectFrom('idempotency_keys').selectAll().where('org_id', '=', p('orgId')).where('key', '=', p('key')),
);

export async function findIdempotencyKey(executor: Executor, orgId: string, key: string): Promise<IdempotencyRow | undefined> {
  const [row] = await selectKey(executor, { orgId, key });
  // PostgreSQL returns integers as numbers here (integer column), SQLite too; a missing status is null.
  return row;
}

const replaceClaim = prepared<IdempotencyRow & { previous: string }, { claim: string }>((db, p) =>
  db
    .updateTable('idempotency_keys')
    .set(claimColumns(p))
    .where('org_id', '=', p('org_id'))
    .where('key', '=', p('key'))
    .where('claim', '=', p('previous'))
    .returning('claim'),
);

/**
 * Takes over a row whose key expired or whose claim's lease ran out: succeeds only while the row is
 * still the one read (its claim token unchanged), so of two requests taking it over one wins.
 */
export async function takeOverIdempotencyKey(executor: Executor, previousClaim: string, row: IdempotencyRow): Promise<boolean> {
  return (await replaceClaim(executor, Object.assign({}, row, { previous: previousClaim }))).length === 1;
}

const completeClaim = prepared<{ orgId: string; key: string; claim: string; status: number; contentType: string | null; body: string }, never>((db, p) =>
  db
    .updateTable('idempotency_keys')
    .set({ status: p('status'), content_type: p('contentType'), body: p('body') })
    .where('org_id', '=', p('orgId'))
    .where('key', '=', p('key'))
    .where('claim', '=', p('claim')),
);

/**
 * Stores the answer of the request that holds the claim (nothing when another took the key over).
 * PostgreSQL: committed without waiting for its WAL flush, like the claim (see docs/api.md for the one
 * window this opens: a server crash in the next fraction of a second leaves the claim running).
 */
export async function completeIdempotencyKey(
  executor: Executor,
  v: { orgId: string; key: string; claim: string; status: number; contentType: string | null; body: string },
): Promise<void> {
  if (dialectOf(executor) === 'postgres') {
    await executor.executeQuery(CompiledQuery.raw(PG_COMPLETE, [v.status, v.contentType, v.body, v.orgId, v.key, v.claim]));
    return;
  }
  await completeClaim(executor, v);
}

const deleteClaim = prepared<{ orgId: string; key: string; claim: string }, never>((db, p) =>
  db.deleteFrom('idempotency_keys').where('org_id', '=', p('orgId')).where('key', '=', p('key')).where('claim', '=', p('claim')),
);

/** Gives the key up (an answer that is not kept): a retry runs the request again. */
export async function releaseIdempotencyKey(executor: Executor, orgId: string, key: string, claim: string): Promise<void> {
  await deleteClaim(executor, { orgId, key, claim });
}

/**
 * Deletes at most `limit` keys that expired before `nowIso`, oldest first; returns how many. Bounded so
 * that a backlog is worked off in short statements (PostgreSQL: rows another instance is deleting are
 * skipped rather than waited for).
 */
export async function pruneIdempotencyKeys(executor: Executor, nowIso: string, limit: number): Promise<number> {
  const expired = executor.selectFrom('idempotency_keys').select(['org_id', 'key']).where('expires_at', '<=', nowIso).orderBy('expires_at').limit(limit);
  const victims = dialectOf(executor) === 'postgres' ? expired.forUpdate().skipLocked() : expired;
  const result = await executor
    .deleteFrom('idempotency_keys')
    .where(({ eb, refTuple }) => eb(refTuple('org_id', 'key'), 'in', victims as never))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
