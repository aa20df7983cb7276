import { webhooksService, type WebhooksService } from './webhooks.service.js';
import { deliveryWorker, type DeliveryWorker, type DeliveryWorkerDeps } from './webhooks.worker.js';

export interface Webhooks {
  /** The endpoints API and the dashboard's actions. */
  service: WebhooksService;
  /** The delivery loop: woken after each commit, polling when started. */
  worker: DeliveryWorker;
}

/** Webhooks (docs/webhooks.md), wired: the delivery worker and the service that manages endpoints beside it. */
export function webhooksModule(
  deps: Omit<DeliveryWorkerDeps, 'random'> & {
    /** Endpoints an organization may have (WEBHOOK_MAX_ENDPOINTS). */
    maxEndpoints?: number;
  },
): Webhooks {
  const worker = deliveryWorker(deps);
  const service = webhooksService({ ...deps, worker });
  return { service, worker };
}
