import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0023(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // PostgreSQL checks a foreign key with a trigger per row (a lookup and a row lock), about half of the
      // time of inserting a load with its stops and rates. A stop's and a rate's organization is their
      // load's (the write path sets it from the load; load_id references loads, whose org_id references
      // organizations), so their own check of the organization is done already by the load's: it is
      // dropped. Organizations are never deleted. SQLite's check of a row of the small organizations
      // table costs little there, and dropping it would rebuild both tables: kept.
      if (dialect !== 'postgres') return;
      await sql`alter table load_stops drop constraint if exists load_stops_org_id_fkey`.execute(db);
      await sql`alter table load_rates drop constraint if exists load_rates_org_id_fkey`.execute(db);
    },
  };
}
