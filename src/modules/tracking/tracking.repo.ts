import type { Executor } from '../../lib/db/index.js';
import type { TrackingEventsTable } from '../../lib/db/types.js';

/** A tracking event already applied in the organization, by the caller's id. */
export function trackingEventById(tx: Executor, orgId: string, eventId: string): Promise<TrackingEventsTable | undefined> {
  return tx.selectFrom('tracking_events').selectAll().where('org_id', '=', orgId).where('event_id', '=', eventId).executeTakeFirst();
}

export async function insertTrackingEvent(tx: Executor, row: TrackingEventsTable): Promise<void> {
  await tx.insertInto('tracking_events').values(row).execute();
}
