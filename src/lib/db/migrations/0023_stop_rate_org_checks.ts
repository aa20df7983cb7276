import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0023(dialect: Dialect): Migration {
  return {
    async up(db: Db) {
      // PostgreSQL checks a foreign key with a trigger per row (a lookup and a row lock): half of the time
      // of inserting a load with its stops and rates, these two a tenth of it. A stop's and a rate's
      // organization is their load's (the write path sets it from the load; load_id references loads,
      // whose org_id references organizations), so their own check of the organization is done already
      // by the load's: it is dropped. Organizations are never deleted. SQLite's check of a row of the small organizations
      // table costs little there, and dropping it would rebuild both tables: kept.
      if (dialect !== 'postgres') return;
      // Dropping a foreign key locks both tables of it (organizations too) for an instant. The three are
      // taken at once, before either drop, so the migration never holds one while waiting for another
      // beside a writer of an older instance; and it waits at most 10 s (then the start fails, and
      // starting again tries again) rather than queue every query of those tables behind it.
      await sql`set local lock_timeout = '10s'`.execute(db);
      await sql`lock table organizations, load_stops, load_rates in access exclusive mode`.execute(db);
      await sql`alter table load_stops drop constraint if exists load_stops_org_id_fkey`.execute(db);
      await sql`alter table load_rates drop constraint if exists load_rates_org_id_fkey`.execute(db);
    },
  };
}
