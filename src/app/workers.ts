import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './context.js';
import type { RateLimiter } from '../lib/http/rate-limit.js';
import type { UsageRecorder } from '../modules/ops/usage.service.js';
import type { Webhooks } from '../modules/webhooks/webhooks.js';
import type { Imports } from '../modules/imports/imports.js';

// The background work of the composition root (src/app.ts): when the webhook worker, the usage
// recorder and the import runner start, and that the workers stop when the app closes.

/** The workers stop on close, before the database closes. */
export function stopWorkersOnClose(app: FastifyInstance, webhooks: Webhooks, imports: Imports) {
  // Deliveries stop before the database closes; attempts in flight are left to their claims' expiry.
  app.addHook('onClose', () => webhooks.worker.stop());
  // An import in flight stops after its chunk and is given back (any instance resumes it).
  app.addHook('onClose', () => imports.runner.stop());
}

/** Once the app is ready: Redis given a moment, then the workers the deps and the config ask for. */
export async function startWorkers(
  app: FastifyInstance,
  deps: AppDeps,
  workers: { rateLimiter: RateLimiter; webhooks: Webhooks; usage: UsageRecorder; imports: Imports },
) {
  const { config } = deps;
  const { rateLimiter, webhooks, usage, imports } = workers;
  await app.ready();
  // Redis is connected now that the synchronous boot work (geocoder data, route schemas) is done;
  // requests that arrived before it answers would be counted in process, so wait a moment for it
  // (never fails: see createRateLimiter).
  await rateLimiter.ready(1000);
  const webhookDelivery = deps.webhookDelivery ?? (deps.recommendationFollowUp === 'manual' ? 'manual' : 'background');
  if (config.webhookWorker && webhookDelivery === 'background') webhooks.worker.start();
  if (deps.recommendationFollowUp !== 'manual') usage.start();
  if (config.importWorker && (deps.importRunner ?? webhookDelivery) === 'background') imports.runner.start();
}
