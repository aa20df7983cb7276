import { sql } from 'kysely';
import type { Executor } from './executor.js';
import { prepared } from './prepared.js';

/**
 * Per organization, a counter per kind of record, moved by every transaction that changes records of
 * that kind (in that transaction); `lane_history`: by every transaction that changes lane history rows
 * (a unit of work whose records moved lanes: write-pipeline.ts) or the on-time grace. Answers kept in memory remember the counters they were read under:
 * equal counters mean nothing they depend on changed, in any process.
 */
export const VERSIONED_KINDS = ['customers', 'carriers', 'locations', 'loads', 'market_rates', 'users', 'api_keys', 'lane_history'] as const;
export type VersionedKind = (typeof VERSIONED_KINDS)[number];
export type OrgVersions = Readonly<Record<VersionedKind, number>>;

const ZERO: OrgVersions = Object.freeze(Object.fromEntries(VERSIONED_KINDS.map((k) => [k, 0])) as Record<VersionedKind, number>);

const readAll = prepared<{ orgId: string }, Record<VersionedKind, number | string>>((db, p) =>
  db
    .selectFrom('org_versions')
    .select([...VERSIONED_KINDS])
    .where('org_id', '=', p('orgId')),
);

export async function readVersions(executor: Executor, orgId: string): Promise<OrgVersions> {
  const [row] = await readAll(executor, { orgId });
  if (!row) return ZERO;
  // PostgreSQL returns bigint as text.
  return Object.fromEntries(VERSIONED_KINDS.map((k) => [k, Number(row[k])])) as Record<VersionedKind, number>;
}

// One statement per set of kinds (a bit mask), compiled on first use.
const bumps = new Map<number, ReturnType<typeof bumpStatement>>();

function bumpStatement(kinds: VersionedKind[]) {
  return prepared<{ orgId: string; events: number }, { events: number | string }>((db, p) =>
    db
      .insertInto('org_versions')
      .values({ org_id: p('orgId'), ...Object.fromEntries(kinds.map((k) => [k, 1])), events: p('events') } as never)
      .onConflict((oc) =>
        oc.column('org_id').doUpdateSet((eb) =>
          Object.assign(Object.fromEntries(kinds.map((k) => [k, eb(`org_versions.${k}`, '+', 1)])), {
            events: sql<number>`${eb.ref('org_versions.events')} + cast(${p('events')} as bigint)`,
          }),
        ),
      )
      .returning('events'),
  );
}

/**
 * Moves the counters of `kinds` and gives `events` sequence numbers; called last in a writing
 * transaction (the row lock is held until commit, so sequences are given in commit order). Returns
 * the last sequence given (0 when nothing moved).
 */
export async function bumpVersions(tx: Executor, orgId: string, kinds: ReadonlySet<VersionedKind>, events = 0): Promise<number> {
  if (kinds.size === 0 && events === 0) return 0;
  let mask = 0;
  VERSIONED_KINDS.forEach((k, i) => {
    if (kinds.has(k)) mask |= 1 << i;
  });
  let bump = bumps.get(mask);
  if (!bump) {
    bump = bumpStatement(VERSIONED_KINDS.filter((k) => kinds.has(k)));
    bumps.set(mask, bump);
  }
  const [row] = await bump(tx, { orgId, events });
  // PostgreSQL returns bigint as text.
  return Number(row!.events);
}
