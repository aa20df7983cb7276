import { Type, type Static } from '@sinclair/typebox';
import { CiEnum, Timestamp } from '../../lib/http/schema-helpers.js';

/** `occurred_at_local`: a wall-clock time without an offset (docs/api.md, tracking events). */
export const WALL_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$';

export const TRACKING_TYPES = ['ARRIVED', 'DEPARTED'] as const;
export const TRACKING_SOURCES = ['ELD', 'APP', 'EDI', 'TRACKING_PROVIDER', 'MANUAL'] as const;

/** EDI 214 shipment status codes (AT7-01) taken as aliases of the two types (docs/api.md, "Stop actuals, tracking events and recommendation evidence"). */
export const EDI_STATUS_CODES: Readonly<Record<string, (typeof TRACKING_TYPES)[number]>> = {
  X3: 'ARRIVED', // arrived at pickup location
  X1: 'ARRIVED', // arrived at delivery location
  AF: 'DEPARTED', // carrier departed pickup location with shipment
  CD: 'DEPARTED', // carrier departed delivery location
  D1: 'DEPARTED', // completed unloading at delivery location
};

export const TrackingEventInput = Type.Object(
  {
    event_id: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Your id of the event, unique in your organization: the same id again answers what the first answered and changes nothing.',
    }),
    type: Type.Optional(
      CiEnum(TRACKING_TYPES, {
        description: "ARRIVED sets the stop's actual_arrival, DEPARTED its actual_departure. May be left out when edi_status_code is given.",
      }),
    ),
    stop_number: Type.Integer({ minimum: 1, maximum: 1000, description: 'The stop of the load the event is at.' }),
    occurred_at: Type.Optional(Timestamp('When the event happened, as an instant; send this or occurred_at_local, not both.')),
    occurred_at_local: Type.Optional(
      Type.String({
        pattern: WALL_TIME_PATTERN,
        description:
          "The time as the stop's own clock showed it (EDI 214's local time, a driver's app): YYYY-MM-DDTHH:MM[:SS], no offset; read in the stop location's time zone. A time a DST change skipped: 422; a repeated one is its first occurrence. Send this or occurred_at, not both.",
      }),
    ),
    source: Type.Optional(CiEnum(TRACKING_SOURCES, { description: 'Where the event came from. Default: EDI when edi_status_code is given, else MANUAL.' })),
    edi_status_code: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 2,
        description: 'EDI 214 status code, any case: x3, x1 → ARRIVED; af, cd, d1 → DEPARTED. Given with a type that contradicts it: 422.',
      }),
    ),
    correction: Type.Optional(Type.Boolean({ description: 'true replaces a different time already recorded for the stop (else 409).' })),
  },
  { description: 'Unknown fields are ignored.' },
);
export type TrackingEventInput = Static<typeof TrackingEventInput>;

export const TrackingEventAnswer = Type.Object(
  {
    event_id: Type.String(),
    load_external_reference_id: Type.String(),
    stop_number: Type.Integer(),
    type: Type.String({ enum: [...TRACKING_TYPES] }),
    occurred_at: Type.String({ format: 'date-time', description: 'The instant, in UTC.' }),
    occurred_at_local: Type.String({ description: "The same instant on the stop's wall clock, YYYY-MM-DDTHH:MM:SS (no offset), in time_zone." }),
    time_zone: Type.String({ description: "The IANA time zone of the stop's location (e.g. America/Chicago); UTC for a location without one." }),
    source: Type.String({ enum: [...TRACKING_SOURCES] }),
  },
  { $id: 'TrackingEvent' },
);
export type TrackingEventAnswer = Static<typeof TrackingEventAnswer>;
