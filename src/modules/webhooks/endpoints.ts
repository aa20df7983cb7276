import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import { DetailError } from '../../lib/http/errors.js';
import type { Resolver } from './url-policy.js';
import { findEndpoint, type EndpointRow } from './webhooks.repo.js';
import type { DeliveryWorker } from './webhooks.worker.js';

/*
 * What the webhook service's actions share (webhooks.service.ts, replay.ts): their dependencies, the
 * endpoint lookup each starts with, and its 404.
 */

/** Endpoints an organization may have (WEBHOOK_MAX_ENDPOINTS), enabled or not. */
export const DEFAULT_MAX_ENDPOINTS = 20;

/** The webhook service's dependencies, which each of its actions takes. */
export interface ServiceContext {
  db: Executor;
  clock: Clock;
  allowInsecure: boolean;
  leaseMs: number;
  worker: DeliveryWorker;
  resolve?: Resolver;
  maxEndpoints?: number;
}

export class WebhookEndpointNotFoundError extends DetailError {
  constructor(id: string) {
    super('not_found', `Webhook endpoint with id '${id}' not found`);
  }
}

/** The organization's endpoint, or 404. */
export async function requireEndpoint(ctx: ServiceContext, orgId: string, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(ctx.db, orgId, id);
  if (!row) throw new WebhookEndpointNotFoundError(id);
  return row;
}
