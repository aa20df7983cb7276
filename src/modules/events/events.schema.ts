import { Type, type Static } from '@sinclair/typebox';
import type { RecordNoun } from '../../domain/records.js';

/** Every event type of the feed (docs/events.md, "The events"): each starts with its record kind's noun (src/domain/records.ts). */
export const EVENT_TYPES = [
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'carrier.created',
  'carrier.updated',
  'carrier.deleted',
  'location.created',
  'location.updated',
  'location.deleted',
  'load.created',
  'load.updated',
  'load.deleted',
  'load.status_changed',
  'load.recommendations_changed',
  'load.stop_arrived',
  'load.stop_departed',
  'market_rate.created',
  'import.completed',
] as const satisfies readonly `${RecordNoun | 'import'}.${string}`[];

export const MAX_EVENTS_PAGE = 500;

export const EventListQuery = Type.Object({
  after: Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    default: 0,
    description:
      'Return the events after this sequence: 0 (the default) to start from the first event, else the `next_after` of your last page. Once events have been pruned (EVENT_RETENTION_DAYS), 0 is answered 410 like any position before the oldest kept: continue from the sequence in `X-Events-Kept-After`.',
  }),
  types: Type.Optional(Type.String({ maxLength: 1000, description: `Only these event types, comma-separated (one or more of: ${EVENT_TYPES.join(', ')}).` })),
  limit: Type.Integer({ minimum: 1, maximum: MAX_EVENTS_PAGE, default: 100, description: 'Events per page, 1 to 500.' }),
});
export type EventListQuery = Static<typeof EventListQuery>;

export const FeedEvent = Type.Object(
  {
    id: Type.String({ description: 'evt_…, unique; the same event keeps its id wherever it is delivered.' }),
    type: Type.String({ enum: [...EVENT_TYPES] }),
    sequence: Type.Integer({
      description: "Per organization, strictly increasing in commit order: having seen N, you have seen every event committed before N's.",
    }),
    timestamp: Type.String({ format: 'date-time', description: 'When the change was committed (UTC).' }),
    data: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'The record as GET returns it at that moment (a load without its carrier_recommendations, which load.recommendations_changed carries); for *.deleted {id, external_reference_id}; for load.status_changed {id, external_reference_id, previous_status, status}; for market_rate.created the snapshot.',
      },
    ),
  },
  { $id: 'Event' },
);
export type FeedEvent = Static<typeof FeedEvent>;

export const EventPage = Type.Object(
  {
    items: Type.Array(Type.Ref(FeedEvent)),
    next_after: Type.Integer({ description: 'The last sequence returned, or the `after` sent when the page is empty: the next page’s `after`.' }),
    has_more: Type.Boolean({ description: 'More events follow now: ask again at once with `after=next_after`.' }),
  },
  { $id: 'EventPage' },
);
