import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { MarketRate, MarketRateCreate, MarketRateListQuery, MarketRatePage } from './rates.schema.js';
import type { MarketRatesService } from './rates.service.js';

const tags = ['Market rates'];

export function marketRateRoutes(app: FastifyInstance, rates: MarketRatesService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/v2/tms-api/market-rates', {
    config: { scope: 'write:rates' },
    schema: {
      tags,
      operationId: 'createMarketRate',
      summary: 'Record a market rate snapshot for a lane',
      description:
        'A load without a caller max_buy_rate takes it from the latest snapshot on its lane and equipment: (rate_per_mile_high, else rate_per_mile) × total_distance.',
      body: MarketRateCreate,
      response: { 201: Type.Ref(MarketRate, { description: 'The snapshot recorded.' }) },
    },
    handler: async (req, reply) => reply.code(201).send(await rates.create(principalOf(req).orgId, req.body)),
  });
  r.get('/v2/tms-api/market-rates', {
    config: { scope: 'write:rates' },
    schema: {
      tags,
      operationId: 'listMarketRates',
      summary: 'List market rate snapshots',
      querystring: MarketRateListQuery,
      response: { 200: Type.Ref(MarketRatePage, { description: 'A page of market rate snapshots, with pagination.' }) },
    },
    handler: (req) => rates.list(principalOf(req).orgId, req.query),
  });
}
