import { sql, type ColumnDefinitionBuilder, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

type Db = Kysely<unknown>;

/** The statuses of a load on its way (a backhaul's candidates, src/domain/enums.ts at the time): the partial index below serves exactly these. */
const BACKHAUL_STATUSES_SQL = "('COVERED', 'DISPATCHED', 'AT_SHIPPER', 'EN_ROUTE', 'AT_RECEIVER')";

// Frozen once deployed: change the schema in a new migration, never here.
export function migration0016(dialect: Dialect): Migration {
  const text = (c: ColumnDefinitionBuilder) => (dialect === 'postgres' ? c.modifyFront(sql`collate "C"`) : c);
  const real = sql.raw(dialect === 'postgres' ? 'double precision' : 'real');
  return {
    async up(db: Db) {
      // Stop actuals (docs/api.md, "Stop actuals, tracking events and recommendation evidence").
      // `arrival_deadline` is the stop's deadline (late_arrival, else early_arrival) as it stood when
      // the actual arrival was recorded: a window moved afterwards changes no outcome.
      await db.schema.alterTable('load_stops').addColumn('actual_arrival', 'text', text).execute();
      await db.schema.alterTable('load_stops').addColumn('actual_departure', 'text', text).execute();
      await db.schema.alterTable('load_stops').addColumn('arrival_deadline', 'text', text).execute();
      // The recommendations' evidence kept on each history row, so a recommendation reads it with the
      // lane's rows (no scan of stops per request): the load's miles, and one token per stop, `p`/`d`
      // (pickup/delivery) then, when scored, the arrival's lateness in seconds against the recorded
      // deadline ("p-600,d930,d").
      await db.schema.alterTable('lane_history').addColumn('total_distance', real).execute();
      await db.schema
        .alterTable('lane_history')
        .addColumn('stop_outcomes', 'text', (c) => text(c).notNull().defaultTo(''))
        .execute();
      await sql`update lane_history set total_distance = (select l.total_distance from loads l where l.id = lane_history.load_id)`.execute(db);
      // Rows written before actuals existed: every stop unscored.
      const outcomes =
        dialect === 'postgres'
          ? sql`(select string_agg(case when s.stop_type = 'Pickup' then 'p' else 'd' end, ',' order by s.stop_number) from load_stops s where s.load_id = lane_history.load_id)`
          : sql`(select group_concat(t, ',') from (select case when s.stop_type = 'Pickup' then 'p' else 'd' end as t from load_stops s where s.load_id = lane_history.load_id order by s.stop_number))`;
      await sql`update lane_history set stop_outcomes = coalesce(${outcomes}, '')`.execute(db);
      // The lane read carries the evidence columns too (index-only on SQLite, as 0008 made it).
      await db.schema.dropIndex('lane_history_lane_idx').execute();
      const key = 'org_id, equipment_type, origin_cell, destination_cell';
      const carried =
        'origin_latitude, origin_longitude, destination_latitude, destination_longitude, delivered_at, carrier_id, carrier_external_reference_id, carrier_rate_total, carrier_rate_currency, total_distance, stop_outcomes';
      await sql
        .raw(
          dialect === 'postgres'
            ? `create index lane_history_lane_idx on lane_history (${key}) include (${carried})`
            : `create index lane_history_lane_idx on lane_history (${key}, ${carried})`,
        )
        .execute(db);
      // Loads on their way, by carrier (backhaul): a partial index, small, kept only for those statuses.
      await sql.raw(`create index loads_backhaul_idx on loads (org_id, carrier_id) where status in ${BACKHAUL_STATUSES_SQL}`).execute(db);
      // On-time grace per organization (null: the ON_TIME_GRACE_MINUTES default).
      await db.schema.alterTable('organizations').addColumn('on_time_grace_minutes', 'integer').execute();
      // Tracking events applied, by the caller's event_id: the same id answers what the first answered.
      await db.schema
        .createTable('tracking_events')
        .addColumn('org_id', 'text', (c) => text(c).notNull())
        .addColumn('event_id', 'text', (c) => text(c).notNull())
        .addColumn('load_id', 'text', (c) => text(c).notNull().references('loads.id').onDelete('cascade'))
        .addColumn('answer', 'text', (c) => text(c).notNull())
        .addColumn('created_at', 'text', (c) => text(c).notNull())
        .addPrimaryKeyConstraint('tracking_events_pk', ['org_id', 'event_id'])
        .execute();
      await db.schema.createIndex('tracking_events_load_idx').on('tracking_events').columns(['load_id']).execute();
    },
  };
}
