import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { RefParams } from '../shared/route-schemas.js';
import { TrackingEventAnswer, TrackingEventInput } from './tracking.schema.js';
import type { LoadsService } from '../loads/loads.service.js';

export function trackingRoutes(app: FastifyInstance, loads: LoadsService) {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/v2/tms-api/loads/:external_reference_id/tracking-events', {
    config: { scope: 'write:loads' },
    schema: {
      tags: ['Loads'],
      operationId: 'createLoadTrackingEvent',
      summary: 'Record a stop arrival or departure (ELD, app, EDI 214, tracking provider)',
      description: [
        'Sets the stop\'s actual_arrival (ARRIVED) or actual_departure (DEPARTED) and emits load.stop_arrived or load.stop_departed (data: the load), beside load.updated.',
        '- Idempotent by event_id: the same id again in your organization answers what the first answered (201) and changes nothing.',
        '- EDI 214 status codes stand for the type, in any case: x3, x1 → ARRIVED; af, cd, d1 → DEPARTED. A type that contradicts the code: 422.',
        '- occurred_at without an offset is the local time at the stop\'s location (its time zone; UTC for a location without one).',
        '- A different time already recorded is replaced only with "correction": true (else 409); the same time again changes nothing.',
        '- A departure before the stop\'s arrival: 422. A stop_number the load does not have: 422.',
      ].join('\n'),
      params: RefParams,
      body: TrackingEventInput,
      response: { 201: Type.Ref(TrackingEventAnswer, { description: 'The event as applied (occurred_at in UTC).' }) },
    },
    handler: async (req, reply) => reply.code(201).send(await loads.trackingEvent(principalOf(req).orgId, req.params.external_reference_id, req.body)),
  });
}
