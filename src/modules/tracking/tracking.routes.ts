import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { RefParams } from '../shared/route-schemas.js';
import { TrackingEventAnswer, TrackingEventInput } from './tracking.schema.js';
import type { TrackingService } from './tracking.service.js';

export function trackingRoutes(app: FastifyInstance, tracking: TrackingService) {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/v2/tms-api/loads/:external_reference_id/tracking-events', {
    config: { scope: 'write:loads' },
    schema: {
      tags: ['Loads'],
      operationId: 'createLoadTrackingEvent',
      summary: 'Record a stop arrival or departure (ELD, app, EDI 214, tracking provider)',
      description: [
        "Sets the stop's actual_arrival (ARRIVED) or actual_departure (DEPARTED) and emits load.stop_arrived or load.stop_departed (data: the load), beside load.updated.",
        '- Idempotent by event_id: the same id again in your organization answers what the first answered (201) and changes nothing.',
        '- EDI 214 status codes stand for the type, in any case: x3, x1 → ARRIVED; af, cd, d1 → DEPARTED. A type that contradicts the code: 422.',
        "- occurred_at is the instant in UTC (an offset is honoured; none means UTC). A time read off the stop's clock goes in occurred_at_local (YYYY-MM-DDTHH:MM[:SS], no offset), read in the stop location's time zone (UTC for a location without one). Exactly one of the two, else 422.",
        '- occurred_at_local skipped by a daylight-saving change (02:30 on a spring-forward night): 422; a repeated one (01:30 on a fall-back night) is its first occurrence; send occurred_at for the second.',
        "- The answer carries occurred_at in UTC, occurred_at_local (the stop's wall time, YYYY-MM-DDTHH:MM:SS) and time_zone (IANA).",
        '- A different time already recorded is replaced only with "correction": true (else 409); the same time again changes nothing.',
        "- A departure before the stop's arrival: 422. A stop_number the load does not have: 422.",
      ].join('\n'),
      params: RefParams,
      body: TrackingEventInput,
      response: { 201: Type.Ref(TrackingEventAnswer, { description: 'The event as applied (occurred_at in UTC).' }) },
    },
    handler: async (req, reply) => reply.code(201).send(await tracking.record(principalOf(req).orgId, req.params.external_reference_id, req.body)),
  });
}
