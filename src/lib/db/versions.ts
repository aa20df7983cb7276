import type { Executor } from './executor.js';
import { prepared } from './prepared.js';

/**
 * Per organization, a counter per kind of record, moved by every transaction that changes records of
 * that kind (in that transaction). Answers kept in memory remember the counters they were read under:
 * equal counters mean nothing they depend on changed, in any process.
 */
export const VERSIONED_KINDS = ['customers', 'carriers', 'locations', 'loads', 'market_rates', 'users', 'api_keys'] as const;
export type VersionedKind = (typeof VERSIONED_KINDS)[number];
export type OrgVersions = Readonly<Record<VersionedKind, number>>;

const ZERO: OrgVersions = Object.freeze(Object.fromEntries(VERSIONED_KINDS.map((k) => [k, 0])) as Record<VersionedKind, number>);

const readAll = prepared<{ orgId: string }, Record<VersionedKind, number | string>>((db, p) =>
  db.selectFrom('org_versions').select([...VERSIONED_KINDS]).where('org_id', '=', p('orgId')),
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
  return prepared<{ orgId: string }, unknown>((db, p) =>
    db
      .insertInto('org_versions')
      .values({ org_id: p('orgId'), ...Object.fromEntries(kinds.map((k) => [k, 1])) } as never)
      .onConflict((oc) => oc.column('org_id').doUpdateSet((eb) => Object.fromEntries(kinds.map((k) => [k, eb(`org_versions.${k}`, '+', 1)])))),
  );
}

/** Moves the counters of `kinds`; called last in a writing transaction (the row lock is held until commit). */
export async function bumpVersions(tx: Executor, orgId: string, kinds: ReadonlySet<VersionedKind>): Promise<void> {
  if (kinds.size === 0) return;
  let mask = 0;
  VERSIONED_KINDS.forEach((k, i) => {
    if (kinds.has(k)) mask |= 1 << i;
  });
  let bump = bumps.get(mask);
  if (!bump) {
    bump = bumpStatement(VERSIONED_KINDS.filter((k) => kinds.has(k)));
    bumps.set(mask, bump);
  }
  await bump(tx, { orgId });
}
