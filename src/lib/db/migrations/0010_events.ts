import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

/** src/domain/grid.ts's cellOf in SQL, over `place`.latitude/longitude (test/modules/events/events.test.ts holds them equal). */
export function laneCellSql(dialect: Dialect, place: string): string {
  return dialect === 'postgres'
    ? `(floor(least(${place}.latitude, 89.9999) + 90)::int * 360 + floor(${place}.longitude + 180)::int % 360)`
    : `(cast(min(${place}.latitude, 89.9999) + 90 as integer) * 360 + cast(${place}.longitude + 180 as integer) % 360)`;
}

/** Watches every open load not yet watched: its lane cells from the first pickup and last delivery. */
export function watchOpenLoadsSql(dialect: Dialect): string {
  const end = (types: string, order: 'asc' | 'desc') =>
    `(select s.location_id from load_stops s where s.load_id = l.id and s.stop_type in (${types}) order by s.stop_number ${order} limit 1)`;
  return `insert into recommendation_watch (load_id, org_id, equipment_type, origin_cell, destination_cell, external_reference_id,
                                    origin_latitude, origin_longitude, destination_latitude, destination_longitude, carrier_id, ranked)
    select e.id, e.org_id, e.equipment_type, ${laneCellSql(dialect, 'o')}, ${laneCellSql(dialect, 'd')}, e.external_reference_id,
           o.latitude, o.longitude, d.latitude, d.longitude, e.carrier_id, '[]'
    from (select l.id, l.org_id, l.equipment_type, l.carrier_id, l.external_reference_id,
                 ${end("'Pickup', 'Both'", 'asc')} as origin_id, ${end("'Delivery', 'Both'", 'desc')} as destination_id
          from loads l
          where l.status in ('ACTIVE', 'SPOT', 'TENDERED', 'TENDER_REJECTED')
            and not exists (select 1 from recommendation_watch w where w.load_id = l.id)) as e
    join locations o on o.id = e.origin_id
    join locations d on d.id = e.destination_id`;
}

// Frozen: this has run on deployed databases. Change the schema in a new migration, never here.
export function migration0010(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const notNullText = (c: ColumnDefinitionBuilder) => text(c).notNull();
  return {
    async up(db: Db) {
      // The outbox and change feed (docs/events.md, "The promise"). `sequence` is per organization,
      // given at the end of the writing transaction from org_versions.events (its row lock is held until
      // commit, so sequence order is commit order); `kind` is the record kind the event is about (for a
      // key's read scopes).
      await db.schema
        .createTable('events')
        .addColumn('org_id', 'text', (c) => text(c).notNull().references('organizations.id'))
        .addColumn('sequence', 'bigint', (c) => c.notNull())
        .addColumn('id', 'text', (c) => text(c).notNull().unique())
        .addColumn('type', 'text', notNullText)
        .addColumn('kind', 'text', notNullText)
        .addColumn('record_id', 'text', text)
        .addColumn('created_at', 'text', notNullText)
        .addColumn('data', 'text', notNullText)
        // Internal, never served: the lanes whose history the change moved (JSON), for the follow-up
        // that emits load.recommendations_changed from the outbox.
        .addColumn('lanes', 'text', text)
        .addPrimaryKeyConstraint('events_pk', ['org_id', 'sequence'])
        .execute();
      await db.schema.createIndex('events_created_idx').on('events').columns(['created_at']).execute();
      // The last sequence given, and the last one pruned (an `after` below it is answered 410).
      await db.schema
        .alterTable('org_versions')
        .addColumn('events', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('org_versions')
        .addColumn('events_pruned', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      // The last event the recommendations follow-up has read (load.recommendations_changed).
      await db.schema
        .alterTable('org_versions')
        .addColumn('recommendations_after', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      // Open loads with their lane cells and the ranked carriers last announced for them. No foreign key
      // to loads: the follow-up's transaction then never waits on a load row a write holds (a write
      // locks loads, then the organization's counters; the follow-up locks only these rows, then the
      // counters), and a deleted load's row goes when the follow-up reads its load.deleted.
      await db.schema
        .createTable('recommendation_watch')
        .addColumn('load_id', 'text', (c) => text(c).primaryKey())
        .addColumn('org_id', 'text', notNullText)
        .addColumn('equipment_type', 'text', notNullText)
        .addColumn('origin_cell', 'integer', (c) => c.notNull())
        .addColumn('destination_cell', 'integer', (c) => c.notNull())
        // The lane's ends and the load's reference: a history change near it is ranked without reading the load.
        .addColumn('external_reference_id', 'text', notNullText)
        .addColumn('origin_latitude', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
        .addColumn('origin_longitude', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
        .addColumn('destination_latitude', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
        .addColumn('destination_longitude', dialect === 'postgres' ? 'double precision' : 'real', (c) => c.notNull())
        // The load's own carrier (ranking leaves it out): with the cells, what its own write may change.
        .addColumn('carrier_id', 'text', text)
        .addColumn('ranked', 'text', notNullText)
        .execute();
      // Open loads already stored are watched from now on (their recommendations not yet announced):
      // their lane cells (1-degree cells, src/domain/grid.ts) from the first pickup and last delivery.
      await sql.raw(watchOpenLoadsSql(dialect)).execute(db);
      await db.schema
        .createIndex('recommendation_watch_lane_idx')
        .on('recommendation_watch')
        .columns(['org_id', 'equipment_type', 'origin_cell', 'destination_cell'])
        .execute();
    },
  };
}
