import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import type { Resolver } from './url-policy.js';
import { webhooksService, type WebhooksService } from './webhooks.service.js';
import { deliveryWorker, type DeliveryWorker, type WorkerLog, type WorkerOutcomes } from './webhooks.worker.js';

export interface Webhooks {
  /** The endpoints API and the dashboard's actions. */
  service: WebhooksService;
  /** The delivery loop: woken after each commit, polling when started. */
  worker: DeliveryWorker;
}

/** D12's pieces, wired: the delivery worker and the service that manages endpoints beside it. */
export function webhooksModule(deps: {
  db: Executor;
  clock: Clock;
  allowInsecure: boolean;
  leaseMs: number;
  log: WorkerLog;
  outcomes?: WorkerOutcomes;
  resolve?: Resolver;
  pollMs?: number;
  retentionDays?: number;
  maxEndpoints?: number;
  maxInFlight?: number;
  maxInFlightPerOrg?: number;
}): Webhooks {
  const worker = deliveryWorker(deps);
  const service = webhooksService({ ...deps, worker });
  return { service, worker };
}
