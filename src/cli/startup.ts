import { removedSettingsSet, type Config } from '../config.js';

/** What `serve` and `worker` share at start: the tracing settings and the warnings said once listening. */
export const tracingSettings = (config: Config) => ({ endpoint: config.otlpEndpoint, serviceName: config.otelServiceName });

const INSECURE_WEBHOOKS_WARNING =
  'WEBHOOK_ALLOW_INSECURE is on: webhook URLs may use plain http and loopback or private addresses. For development only; unset it in production';

/** The warnings of a process that has started: insecure webhooks, settings that were removed but are still set. */
export function warnAtStart(log: { warn(message: string): void }, config: Config) {
  if (config.webhookAllowInsecure) log.warn(INSECURE_WEBHOOKS_WARNING);
  for (const line of removedSettingsSet()) log.warn(line);
}
