import { setFlagsFromString } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { ConfigError, type Config } from '../config.js';
import { openDataStore, type DataStore } from '../lib/db/index.js';
import { startTracing } from '../lib/telemetry/tracing.js';
import { accountsService } from '../modules/accounts/accounts.service.js';
import { storeOptions } from './io.js';
import { tracingSettings, warnAtStart } from './startup.js';

type Tracing = Awaited<ReturnType<typeof startTracing>>;

/** `serve`: the HTTP service, until SIGTERM or SIGINT closes it (docs/reliability.md). */
export async function serve(config: Config) {
  // The heap grows at most 2× its live size between collections (V8 lets it grow far more when memory
  // is plentiful; figures in BENCHMARKS.md); NODE_OPTIONS can still override it.
  if (!process.execArgv.concat(process.env.NODE_OPTIONS ?? '').some((a) => a.includes('heap-growing-percent'))) {
    setFlagsFromString('--heap-growing-percent=100');
  }
  // Before the store opens: its statements are traced only when tracing is on.
  const tracing = await startTracing(tracingSettings(config));
  const store = openDataStore(config.databaseUrl, { ...storeOptions, poolSize: config.dbPoolSize, traced: tracing !== null });
  await store.migrate();
  // Loaded only for `serve`: the admin commands stay quick to start.
  const { buildApp } = await import('../app.js');
  const { app } = await buildApp({ config, store, tracing: tracing !== null });
  if (tracing) app.log.info({ endpoint: config.otlpEndpoint }, 'tracing on: spans sent by OTLP/HTTP');
  closeOnSignals(app, store, tracing);
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw new ConfigError(
      `cannot listen on ${config.host}:${config.port} (${(err as Error).message}): set PORT to a free port, or HOST to an address of this machine`,
    );
  }
  app.log.info({ address, database: store.dialect }, 'Lanebridge listening');
  await announceSetupCode(app, store, config);
  warnAtStart(app.log, config);
}

/** SIGTERM and SIGINT finish the requests in flight, close the database and exit (10 s at most). */
function closeOnSignals(app: FastifyInstance, store: DataStore, tracing: Tracing) {
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing requests in flight');
    const force = setTimeout(() => {
      app.log.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    // Responses sent while closing say `Connection: close` (plumbing); a keep-alive connection that goes
    // idle otherwise (a response already on its way) is closed here, instead of holding the close up
    // until the keep-alive timeout (72 s).
    const reaper = setInterval(() => app.server.closeIdleConnections(), 50);
    reaper.unref();
    try {
      await app.close();
      clearInterval(reaper);
      await store.close();
      // The last spans are sent before the process ends (bounded by the exporter's own timeout).
      await tracing?.shutdown();
      app.log.info('shut down: requests answered, database closed');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * A fresh server's first-run page asks for this code
 * (docs/dashboard.md, "Roles, the first run and the audit log"), so whoever reaches the port first
 * cannot claim it.
 */
async function announceSetupCode(app: FastifyInstance, store: DataStore, config: Config) {
  const setupCode = await accountsService(store).setupCode();
  if (setupCode !== null) {
    app.log.info({ setup_code: setupCode }, 'First run: open the dashboard and enter this setup code (bin/lanebridge setup-code prints it again)');
    process.stderr.write(
      `\nLanebridge first run: open http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}/ and enter the setup code ${setupCode}\n(bin/lanebridge setup-code prints it again)\n\n`,
    );
  }
}
