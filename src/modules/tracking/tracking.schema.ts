import { Type, type Static } from '@sinclair/typebox';
import { CiEnum } from '../../lib/http/schema-helpers.js';

export const TRACKING_TYPES = ['ARRIVED', 'DEPARTED'] as const;
export const TRACKING_SOURCES = ['ELD', 'APP', 'EDI', 'TRACKING_PROVIDER', 'MANUAL'] as const;

/** EDI 214 shipment status codes (AT7-01) taken as aliases of the two types (D14). */
export const EDI_STATUS_CODES: Readonly<Record<string, (typeof TRACKING_TYPES)[number]>> = {
  X3: 'ARRIVED', // arrived at pickup location
  X1: 'ARRIVED', // arrived at delivery location
  AF: 'DEPARTED', // carrier departed pickup location with shipment
  CD: 'DEPARTED', // carrier departed delivery location
  D1: 'DEPARTED', // completed unloading at delivery location
};

export const TrackingEventInput = Type.Object(
  {
    event_id: Type.String({ minLength: 1, maxLength: 255, description: 'Your id of the event, unique in your organization: the same id again answers what the first answered and changes nothing.' }),
    type: Type.Optional(CiEnum(TRACKING_TYPES, { description: 'ARRIVED sets the stop\'s actual_arrival, DEPARTED its actual_departure. May be left out when edi_status_code is given.' })),
    stop_number: Type.Integer({ minimum: 1, maximum: 1000, description: 'The stop of the load the event is at.' }),
    occurred_at: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'ISO 8601. With an offset (or Z) it is that instant; without one it is the local time at the stop\'s location (its time zone), as drivers and EDI 214 report it.',
    }),
    source: Type.Optional(CiEnum(TRACKING_SOURCES, { description: 'Where the event came from. Default: EDI when edi_status_code is given, else MANUAL.' })),
    edi_status_code: Type.Optional(
      Type.String({ minLength: 2, maxLength: 2, description: 'EDI 214 status code, any case: x3, x1 → ARRIVED; af, cd, d1 → DEPARTED. Given with a type that contradicts it: 422.' }),
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
    source: Type.String({ enum: [...TRACKING_SOURCES] }),
  },
  { $id: 'TrackingEvent' },
);
export type TrackingEventAnswer = Static<typeof TrackingEventAnswer>;
