import { ConfigError, type Config } from '../config.js';
import { openDataStore, type DataStore } from '../lib/db/index.js';
import { startTracing } from '../lib/telemetry/tracing.js';
import { storeOptions } from './io.js';
import { tracingSettings, warnAtStart } from './startup.js';

/**
 * `worker`: a process that only delivers webhooks (docs/webhooks.md, "The worker"): the same claim loop
 * as inside `serve`, polling the outbox and due retries. Any number may run beside the servers
 * (PostgreSQL; SQLite: one host).
 */
export async function worker(config: Config) {
  const tracing = await startTracing(tracingSettings(config));
  const store = openDataStore(config.databaseUrl, { ...storeOptions, poolSize: Math.min(config.dbPoolSize, 4), traced: tracing !== null });
  await store.migrate();
  const { probes, log, loop } = await deliveryWithProbes(config, store);
  let address: string;
  try {
    address = await probes.listen({ port: config.workerPort, host: config.host });
  } catch (err) {
    await store.close();
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.workerPort} for /healthz, /readyz and /metrics (${(err as Error).message}): set WORKER_PORT to a free port (0: any)`,
    );
  }
  loop.start();
  // Delivering from here on: said at once, before the import runner's app (and its geocoder) is built.
  log.info({ address, database: store.dialect, imports: config.importWorker }, 'Lanebridge webhook worker started');
  warnAtStart(log, config);
  // Imports run here too: the app's write path without its HTTP server (its runner claims imports).
  // Built after the start line and after the signal handlers, so a stop while it builds is still clean.
  const building = config.importWorker
    ? import('../app.js').then(({ buildApp }) =>
        buildApp({ config: { ...config, webhookWorker: false }, store, logger: false, warmGeocoder: true, importRunner: 'background' }),
      )
    : Promise.resolve(null);
  let closing = false;
  const shutdown = async (signal: string, code = 0) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'webhook worker stopping');
    // Attempts in flight are abandoned: their claims expire and another process (or this one, restarted) sends them.
    await loop.stop();
    // An import in flight stops after its chunk and is given back for any instance to resume.
    const built = await building.catch(() => null);
    await built?.app.close();
    await probes.close();
    await store.close();
    await tracing?.shutdown();
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  try {
    if ((await building) && !closing) log.info('import runner started');
  } catch (err) {
    // Without its import runner the process must not stay up looking ready: it stops, exit 1.
    log.error({ err }, 'the import runner could not start; the worker stops');
    await shutdown('import runner failed', 1);
  }
  // Nothing else keeps the process alive (the poll timer does not).
  setInterval(() => {}, 1 << 30);
}

/** The worker's delivery loop, and the probes' server beside it (not yet listening). */
async function deliveryWithProbes(config: Config, store: DataStore) {
  const { webhooksModule } = await import('../modules/webhooks/webhooks.js');
  const { default: Fastify } = await import('fastify');
  const { clientErrorHandler } = await import('../lib/http/plumbing.js');
  const { loggerOptions } = await import('../lib/http/logging.js');
  // The probes' server logs as `serve` does: one format for every process.
  const probes = Fastify({ logger: loggerOptions(config.logLevel), clientErrorHandler });
  const log = probes.log;
  // Its attempts and the queue on /metrics, as `serve` has them, and probes for an orchestrator.
  const { createMetrics } = await import('../lib/http/metrics.js');
  const { opsRoutes } = await import('../modules/ops/ops.routes.js');
  const metrics = createMetrics();
  const { worker: loop, service } = webhooksModule({
    db: store.db,
    clock: { now: () => new Date() },
    allowInsecure: config.webhookAllowInsecure,
    leaseMs: config.webhookLeaseMs,
    log,
    outcomes: metrics.webhookOutcomes,
    pollMs: 250,
    retentionDays: config.eventRetentionDays,
    maxInFlight: config.webhookMaxInFlight,
    maxInFlightPerOrg: config.webhookMaxInFlightPerOrg,
  });
  metrics.registerWebhookQueue(() => service.queue());
  opsRoutes(probes, { store, metrics, metricsToken: config.metricsToken });
  return { probes, log, loop };
}
