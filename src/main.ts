import { setFlagsFromString } from 'node:v8';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, removedSettingsSet, type Config } from './config.js';
import { DatabaseSetupError, openDataStore, type DataStore, type OpenOptions } from './lib/db/index.js';
import { ApiError, ValidationError } from './lib/http/errors.js';
import { MAX_GRACE_HOURS, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, accountsService, parseExpiry, parseScopes } from './modules/accounts/accounts.service.js';
import { ROLES, isRole } from './modules/accounts/users.js';
import { startTracing } from './lib/telemetry/tracing.js';
import { userAccessCommand } from './cli/user-access.js';

const USAGE = `Usage: lanebridge <command>

  serve                                           run the HTTP service (PORT, HOST, DATABASE_URL)
  worker                                          deliver webhooks and run imports only (DATABASE_URL);
                                                  /healthz, /readyz and /metrics on WORKER_PORT
  import --org ORG_ID --resource RESOURCE FILE [--format ndjson|csv] [--emit-events summary|all]
         [--operation upsert|create] [--delimiter C] [--columns JSON]
                                                  run an import of FILE with a progress bar (stderr)
  setup-code                                      print the one-time code the dashboard's first-run page asks for
  org create --name NAME
  org list
  user create --org ORG_ID --email EMAIL --name NAME [--role admin|member] [--password P | --password-stdin]
                                                  (role: admin for an organization's first user, else member)
  user set-password --email EMAIL (--password P | --password-stdin)
                                                  (ends every dashboard session of the user)
  user sessions-end --email EMAIL                 sign the user out of the dashboard everywhere
  user remove --email EMAIL                       remove the user (not an organization's last admin);
                                                  the organization's API keys stay
  key create --org ORG_ID --name NAME --system SYSTEM --scopes all|s1,s2 [--per-minute N] [--per-day N]
             [--expires-at ISO] [--strict]        (a UTC date or time in the future; default: never)
                                                  --strict: the key's requests refuse unknown fields (422)
                                                  as Prefer: handling=strict does
  key revoke --org ORG_ID --id KEY_ID
  key rotate --org ORG_ID --id KEY_ID [--grace-hours N]
                                                  (the old key keeps working N hours, default 0, at most 720)
  key list --org ORG_ID
  help [COMMAND]                                  this text, or one command's (also: COMMAND --help)

Each command prints one JSON object on stdout; messages go to stderr. Passwords (for the dashboard's
sign-in) have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters; --password-stdin reads one from the first line of stdin
(kept out of the shell history and the process list).`;

/** A command used wrongly (exit 2): its message, then the usage of that command (`usage: false`: a refusal that usage would not help with). */
class UsageError extends Error {
  constructor(
    message: string,
    readonly opts: { usage?: boolean } = {},
  ) {
    super(message);
  }
}

const tracingSettings = (config: Config) => ({ endpoint: config.otlpEndpoint, serviceName: config.otelServiceName });
/** The usage lines of one command (`key`, `key create`), with their continuation lines; null when none. */
export function commandHelp(words: readonly string[]): string | null {
  if (words.length === 0) return USAGE;
  const name = words.join(' ');
  const lines = USAGE.split('\n');
  const out: string[] = [];
  let taking = false;
  for (const line of lines) {
    if (/^ {2}\S/.test(line)) taking = line.slice(2) === name || line.slice(2).startsWith(`${name} `);
    else if (!/^ {3,}\S/.test(line)) taking = false;
    if (taking) out.push(line);
  }
  return out.length > 0 ? `Usage: lanebridge <command>\n\n${out.join('\n')}` : null;
}

async function readStdinLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

/** The password of --password or --password-stdin (the accounts service checks it); undefined when neither is given. */
async function passwordOption(values: Record<string, unknown>): Promise<string | undefined> {
  if (values.password !== undefined && values['password-stdin']) throw new UsageError('give --password or --password-stdin, not both');
  const password = values['password-stdin'] ? await readStdinLine() : (values.password as string | undefined);
  return password;
}

/** Says on stderr which database a command opened when it had to create it (DATABASE_URL unset opens ./data/lanebridge.db). */
const storeOptions: OpenOptions = { onCreated: (message) => process.stderr.write(`lanebridge: ${message}\n`) };

function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v;
}

function optionalInt(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a whole number of at least 1`);
  }
  return n;
}

function print(obj: unknown) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function withStore<T>(config: Config, work: (store: DataStore) => Promise<T>): Promise<T> {
  const store = openDataStore(config.databaseUrl, { ...storeOptions, poolSize: 2 });
  try {
    await store.migrate();
    return await work(store);
  } finally {
    await store.close();
  }
}

const INSECURE_WEBHOOKS_WARNING =
  'WEBHOOK_ALLOW_INSECURE is on: webhook URLs may use plain http and loopback or private addresses. For development only; unset it in production';

async function serve(config: Config) {
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
  const { buildApp } = await import('./app.js');
  const { app } = await buildApp({ config, store, tracing: tracing !== null });
  if (tracing) app.log.info({ endpoint: config.otlpEndpoint }, 'tracing on: spans sent by OTLP/HTTP');
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
  // A fresh server's first-run page asks for this code
  // (docs/dashboard.md, "Roles, the first run and the audit log"), so whoever reaches the port first
  // cannot claim it.
  const setupCode = await accountsService(store).setupCode();
  if (setupCode !== null) {
    app.log.info({ setup_code: setupCode }, 'First run: open the dashboard and enter this setup code (bin/lanebridge setup-code prints it again)');
    process.stderr.write(
      `\nLanebridge first run: open http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}/ and enter the setup code ${setupCode}\n(bin/lanebridge setup-code prints it again)\n\n`,
    );
  }
  if (config.webhookAllowInsecure) app.log.warn(INSECURE_WEBHOOKS_WARNING);
  for (const line of removedSettingsSet()) app.log.warn(line);
}

/**
 * `worker`: a process that only delivers webhooks (docs/webhooks.md, "The worker"): the same claim loop
 * as inside `serve`, polling the outbox and due retries. Any number may run beside the servers
 * (PostgreSQL; SQLite: one host).
 */
async function worker(config: Config) {
  const tracing = await startTracing(tracingSettings(config));
  const store = openDataStore(config.databaseUrl, { ...storeOptions, poolSize: Math.min(config.dbPoolSize, 4), traced: tracing !== null });
  await store.migrate();
  const { webhooksModule } = await import('./modules/webhooks/webhooks.js');
  const { default: Fastify } = await import('fastify');
  const { clientErrorHandler } = await import('./lib/http/plumbing.js');
  const { loggerOptions } = await import('./lib/http/logging.js');
  // The probes' server logs as `serve` does: one format for every process.
  const probes = Fastify({ logger: loggerOptions(config.logLevel), clientErrorHandler });
  const log = probes.log;
  // Its attempts and the queue on /metrics, as `serve` has them, and probes for an orchestrator.
  const { createMetrics } = await import('./lib/http/metrics.js');
  const { opsRoutes } = await import('./modules/ops/ops.routes.js');
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
  if (config.webhookAllowInsecure) log.warn(INSECURE_WEBHOOKS_WARNING);
  for (const line of removedSettingsSet()) log.warn(line);
  // Imports run here too: the app's write path without its HTTP server (its runner claims imports).
  // Built after the start line and after the signal handlers, so a stop while it builds is still clean.
  const building = config.importWorker
    ? import('./app.js').then(({ buildApp }) =>
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

const OPTIONS = {
  name: { type: 'string' },
  org: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  id: { type: 'string' },
  system: { type: 'string' },
  scopes: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
  resource: { type: 'string' },
  format: { type: 'string' },
  'emit-events': { type: 'string' },
  operation: { type: 'string' },
  delimiter: { type: 'string' },
  columns: { type: 'string' },
  role: { type: 'string' },
  'expires-at': { type: 'string' },
  'grace-hours': { type: 'string' },
  strict: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const [group, action] = positionals;
  // Help asked for is an answer (stdout, exit 0); no command at all is a usage error (stderr, exit 2).
  if (group === 'help' || values.help) {
    const words = group === 'help' ? positionals.slice(1) : positionals;
    const text = commandHelp(words);
    if (text === null) throw new UsageError(`Unknown command '${words.join(' ')}'`);
    process.stdout.write(`${text}\n`);
    return 0;
  }
  if (!group) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  if (group === 'serve') {
    await serve(config);
    return -1; // keeps running
  }
  if (group === 'worker') {
    await worker(config);
    return -1; // keeps running
  }
  if (group === 'import') {
    const file = positionals[1];
    if (!file) throw new UsageError('import needs the FILE to import');
    const { runImportCommand } = await import('./cli/import-command.js');
    return runImportCommand(config, { values, file, print, usage: (m) => new UsageError(m) });
  }
  const command = `${group} ${action ?? ''}`.trim();
  return withStore(config, async (store) => {
    const accounts = accountsService(store);
    switch (command) {
      case 'setup-code': {
        const code = await accounts.setupCode();
        if (code === null)
          throw new UsageError('this Lanebridge already has an organization: the first-run page is closed, and no setup code is needed (sign in instead)', {
            usage: false,
          });
        process.stderr.write(`lanebridge: open the dashboard and enter this setup code on its first-run page\n`);
        print({ setup_code: code });
        return 0;
      }
      case 'org create':
        print(await accounts.createOrganization(required(values, 'name')));
        return 0;
      case 'org list':
        print({ items: await accounts.listOrganizations() });
        return 0;
      case 'user create': {
        const password = await passwordOption(values);
        const role = values.role;
        if (role !== undefined && !isRole(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
        print(
          await accounts.createUser(required(values, 'org'), {
            email: required(values, 'email'),
            name: required(values, 'name'),
            ...(role !== undefined ? { role } : {}),
            ...(password !== undefined ? { password } : {}),
          }),
        );
        return 0;
      }
      case 'user set-password': {
        const email = required(values, 'email');
        const password = await passwordOption(values);
        if (password === undefined) throw new UsageError('--password or --password-stdin is required');
        const user = await accounts.setPassword(email, password);
        process.stderr.write(`lanebridge: ${user.email} can now sign in to the dashboard\n`);
        print(user);
        return 0;
      }
      case 'user sessions-end':
      case 'user remove':
        return userAccessCommand(accounts, command, required(values, 'email'), { print, refuse: (m) => new UsageError(m, { usage: false }) });
      case 'key create': {
        const perMinute = optionalInt(values, 'per-minute');
        const perDay = optionalInt(values, 'per-day');
        const expiresAt = values['expires-at'] !== undefined ? parseExpiry(values['expires-at'], new Date(), 'expires-at') : undefined;
        print(
          await accounts.createKey(required(values, 'org'), {
            name: required(values, 'name'),
            externalSystem: required(values, 'system'),
            scopes: parseScopes(required(values, 'scopes')),
            ...(perMinute !== undefined ? { perMinute } : {}),
            ...(perDay !== undefined ? { perDay } : {}),
            ...(expiresAt !== undefined ? { expiresAt } : {}),
            ...(values.strict ? { strict: true } : {}),
          }),
        );
        return 0;
      }
      case 'key revoke': {
        const key = await accounts.revokeKey(required(values, 'org'), required(values, 'id'));
        print({ id: key.id, status: key.status, revoked_at: key.revoked_at });
        return 0;
      }
      case 'key rotate': {
        const grace = values['grace-hours'];
        if (grace !== undefined && (!/^\d{1,4}$/.test(grace) || Number(grace) > MAX_GRACE_HOURS))
          throw new UsageError(`--grace-hours must be a whole number from 0 to ${MAX_GRACE_HOURS}`);
        print(await accounts.rotateKey(required(values, 'org'), required(values, 'id'), { graceHours: grace === undefined ? 0 : Number(grace) }));
        return 0;
      }
      case 'key list':
        print({ items: await accounts.listKeys(required(values, 'org')) });
        return 0;
      default:
        throw new UsageError(`Unknown command '${command}'`);
    }
  });
}

export async function runCli(argv: string[]) {
  try {
    const code = await main(argv);
    if (code >= 0) process.exitCode = code;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      // The usage of the command that was used (its words come first), not the whole list.
      const words = argv.filter((a) => !a.startsWith('-')).slice(0, 2);
      const usage = err instanceof UsageError && err.opts.usage === false ? null : (commandHelp(words) ?? commandHelp(words.slice(0, 1)) ?? USAGE);
      process.stderr.write(`lanebridge: ${(err as Error).message}\n${usage === null ? '' : `\n${usage}\n`}`);
      process.exitCode = 2;
    } else if (err instanceof ValidationError) {
      process.stderr.write(`lanebridge: ${err.issues.map((i) => i.msg).join('; ')}\n`);
      process.exitCode = 2;
    } else if (err instanceof ApiError || err instanceof ConfigError || err instanceof DatabaseSetupError) {
      process.stderr.write(`lanebridge: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`lanebridge: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    }
  }
}
