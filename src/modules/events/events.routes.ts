import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import type { Executor } from '../../lib/db/index.js';
import { EventListQuery, EventPage } from './events.schema.js';
import type { EventsService } from './events.service.js';

export function eventRoutes(app: FastifyInstance, events: EventsService, reader: Executor) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/v2/tms-api/events', {
    // Any one of the read scopes (and write:rates) lets a key in; it sees the kinds it may read
    // (docs/events.md, "The request").
    config: { scope: 'read:loads', anyScope: ['read:customers', 'read:carriers', 'read:locations', 'read:loads', 'write:rates'] },
    schema: {
      tags: ['Events'],
      operationId: 'listEvents',
      summary: 'The change feed: every committed change, oldest first',
      description:
        'Store `next_after` and ask again with `after=next_after`; page at once while `has_more` is true. A 410 means the events after your `after` were pruned (retention EVENT_RETENTION_DAYS, 30 days by default): resynchronise with the list endpoints and `updated_since`, then continue from the sequence in the `X-Events-Kept-After` header.',
      querystring: EventListQuery,
      response: { 200: Type.Ref(EventPage, { description: 'Events after `after`, oldest first, of the kinds the key may read.' }) },
    },
    // The page is sent as the service wrote it (the stored data is JSON already; see pageJson).
    handler: async (req, reply) => {
      const p = principalOf(req);
      return reply.type('application/json; charset=utf-8').send((await events.pageJson(reader, p.orgId, p.scopes, req.query)) as never);
    },
  });
}
