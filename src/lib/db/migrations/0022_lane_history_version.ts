import { type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0022(_dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // The organization's counter of lane history changes (src/lib/db/versions.ts, kind lane_history): moved
      // by every transaction that changes a history row (a load's, or a place's that moved) and by the
      // on-time grace. The open loads' kept lane rows (src/modules/lanes/lane-rows.ts) check it instead of
      // the loads' counter, which every write of an open load moves too.
      await db.schema
        .alterTable('org_versions')
        .addColumn('lane_history', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
