import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { CiEnum, Nullable, Text, Timestamp } from '../../lib/http/schema-helpers.js';
import { EVENT_TYPES } from '../events/events.schema.js';

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
/** The most event ids one replay names. */
export const MAX_REPLAY_IDS = 1000;
/** The most events one `after_sequence` replay queues (the oldest first). */
export const MAX_REPLAY_EVENTS = 10_000;

const EventTypes = Type.Array(CiEnum(EVENT_TYPES), {
  minItems: 1,
  maxItems: EVENT_TYPES.length * 2,
  description: `Event types sent to the endpoint: one or more of ${EVENT_TYPES.join(', ')}. Default: every type.`,
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Where events are POSTed: https, and a host whose every address is public (no loopback, private, link-local, documentation, reserved or other special-use address, nor one written inside an IPv6 form); checked again at each delivery.',
});
const Description = Nullable(Text(500, 'What the endpoint is for (up to 500 characters).'));

export const WebhookEndpointCreate = Type.Object({
  url: Url,
  event_types: Type.Optional(EventTypes),
  description: Type.Optional(Description),
});
export type WebhookEndpointCreate = Static<typeof WebhookEndpointCreate>;

export const WebhookEndpointUpdate = Type.Object(
  {
    url: Type.Optional(Url),
    event_types: Type.Optional(EventTypes),
    description: Type.Optional(Description),
    status: Type.Optional(
      CiEnum(ENDPOINT_STATUSES, { description: '`disabled` stops deliveries (pending ones fail); `enabled` resumes with the events committed from then on.' }),
    ),
  },
  { description: 'Only the fields sent change.' },
);
export type WebhookEndpointUpdate = Static<typeof WebhookEndpointUpdate>;

const endpointFields = {
  id: Type.String({ description: 'whe_…' }),
  url: Type.String(),
  event_types: Type.Array(Type.String({ enum: [...EVENT_TYPES] })),
  description: Nullable(Type.String()),
  status: Type.String({ enum: [...ENDPOINT_STATUSES], description: 'An endpoint is disabled by PUT, by a 410 answer, or after 5 days of failed attempts.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
};

export const WebhookEndpoint = Type.Object(endpointFields, { $id: 'WebhookEndpoint' });
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = Type.Object(
  { ...endpointFields, secret: Type.String({ description: 'whsec_…: the signing secret, shown only here and on rotation.' }) },
  { $id: 'WebhookEndpointWithSecret' },
);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointPage = pageSchema(Type.Ref(WebhookEndpoint), 'WebhookEndpointPage');

export const WebhookEndpointListQuery = listQuerySchema(['created_at', 'updated_at'], {});
export type WebhookEndpointListQuery = Static<typeof WebhookEndpointListQuery>;

export const WebhookSecret = Type.Object(
  { secret: Type.String({ description: 'The new whsec_… secret; the previous one keeps signing beside it for 24 hours.' }) },
  { $id: 'WebhookSecret' },
);

export const WebhookDelivery = Type.Object(
  {
    id: Type.String({ description: 'whd_…' }),
    event_id: Type.String({ description: 'The event id, sent as webhook-id.' }),
    event_type: Type.String({ enum: [...EVENT_TYPES] }),
    sequence: Type.Integer(),
    attempt: Type.Integer({ description: 'Attempts made so far (0: not tried yet).' }),
    status: Type.String({ enum: [...DELIVERY_STATUSES] }),
    response_status: Nullable(Type.Integer({ description: 'The HTTP status of the last attempt (null: no answer).' })),
    duration_ms: Nullable(Type.Integer({ description: 'How long the last attempt took.' })),
    error: Nullable(Type.String({ description: 'Why the last attempt failed.' })),
    next_attempt_at: Nullable(Type.String({ format: 'date-time', description: 'When the next attempt is due (pending only).' })),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'WebhookDelivery' },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryPage = pageSchema(Type.Ref(WebhookDelivery), 'WebhookDeliveryPage');

export const WebhookDeliveryListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1, description: 'Page number, 1-indexed.' }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Items per page, at most 100.' }),
  status: Type.Optional(CiEnum(DELIVERY_STATUSES, { description: 'Only deliveries in this status.' })),
  created_since: Type.Optional(Timestamp('Only deliveries created at or after this time (ISO 8601).')),
  updated_since: Type.Optional(Timestamp('Only deliveries changed at or after this time (ISO 8601).')),
});
export type WebhookDeliveryListQuery = Static<typeof WebhookDeliveryListQuery>;

export const ATTEMPT_STATUSES = ['delivered', 'failed'] as const;

export const WebhookAttempt = Type.Object(
  {
    id: Type.String({ description: 'wha_…' }),
    delivery_id: Type.String({ description: 'The delivery (whd_…) this attempt belongs to.' }),
    event_id: Type.String({ description: 'The event id, sent as webhook-id.' }),
    event_type: Type.String({ enum: [...EVENT_TYPES] }),
    sequence: Type.Integer(),
    attempt: Type.Integer({ description: 'Which attempt of the delivery this was (1 … 10).' }),
    status: Type.String({ enum: [...ATTEMPT_STATUSES], description: 'delivered (a 2xx answer) or failed.' }),
    response_status: Nullable(Type.Integer({ description: 'The HTTP status of the answer (null: no answer).' })),
    duration_ms: Nullable(Type.Integer({ description: 'From the start of the connection to the end of the answer (at most the 10 s limit).' })),
    error: Nullable(Type.String({ description: 'Why the attempt failed, or what was cut short (an answer body past the limit or the deadline).' })),
    response_body: Nullable(Type.String({ description: 'The start of the answer body (at most 2 KiB, as text); null when there was none.' })),
    next_attempt_at: Nullable(Type.String({ format: 'date-time', description: 'The retry this attempt scheduled (null: delivered, or no attempt left).' })),
    created_at: Type.String({ format: 'date-time', description: 'When the attempt started.' }),
  },
  { $id: 'WebhookAttempt' },
);
export type WebhookAttempt = Static<typeof WebhookAttempt>;

export const WebhookAttemptPage = pageSchema(Type.Ref(WebhookAttempt), 'WebhookAttemptPage');

export const WebhookAttemptListQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1, description: 'Page number, 1-indexed.' }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Items per page, at most 100.' }),
  delivery_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the attempts of this delivery (whd_…).' })),
  event_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Only the attempts of this event (evt_…), across its deliveries and replays.' }),
  ),
  created_since: Type.Optional(Timestamp('Only attempts started at or after this time (ISO 8601).')),
});
export type WebhookAttemptListQuery = Static<typeof WebhookAttemptListQuery>;

export const WebhookReplay = Type.Object(
  {
    after_sequence: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: `Queue the events after this sequence (at most ${MAX_REPLAY_EVENTS}, oldest first).`,
      }),
    ),
    event_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_REPLAY_IDS, description: 'Queue these events (evt_…).' }),
    ),
  },
  { description: 'Exactly one of after_sequence and event_ids. Only events the endpoint subscribes to are queued.' },
);
export type WebhookReplay = Static<typeof WebhookReplay>;

export const WebhookReplayResult = Type.Object({ queued: Type.Integer({ description: 'Deliveries queued.' }) }, { $id: 'WebhookReplayResult' });

export const WebhookEndpointIdParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'whe_…' }) });
