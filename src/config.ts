import { isIP } from 'node:net';
import { Type, type Static, type TOptional, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DEFAULT_GRACE_MINUTES } from './domain/evidence.js';

/**
 * Every field of the configuration is declared once, in SETTINGS below: its environment variable (an
 * operator's setting) or none (an internal value that only tests and benchmarks change), its schema
 * (validation and default), and how the value read becomes the field. The Config type, the defaults and
 * the checks all come from that one table; README.md's Configuration table is checked against it by
 * test/config.test.ts (every setting a row, every row a setting, the same defaults).
 *
 * At most 25 settings: a number only a benchmark or a test changes is an internal field (its default
 * below is the value the service runs with), not an operator's setting. Tests pass internal fields as
 * config overrides (test/helpers.ts `startApp({...})`); a process started by a test or a benchmark takes
 * them from LANEBRIDGE_INTERNAL, a JSON object of field values (`{"rateLimits":false}`), which is no
 * operator's setting and may change in any version.
 */

type Setting<S extends TSchema = TSchema, T = unknown> = {
  /** The environment variable; undefined: an internal field (tests and benchmarks only). */
  readonly env: string | undefined;
  readonly schema: S;
  /** The field's value from the validated (converted, defaulted) one. */
  to(value: Static<S>): T;
};

const same = <T>(v: T): T => v;

/** An operator's setting: `name` in the environment, checked against `schema`, defaulted from it, then `to` (default: as read). */
function env<S extends TSchema>(name: string, schema: S): Setting<S, Static<S>>;
function env<S extends TSchema, T>(name: string, schema: S, to: (value: Static<S>) => T): Setting<S, T>;
function env<S extends TSchema, T>(name: string, schema: S, to?: (value: Static<S>) => T): Setting<S, T | Static<S>> {
  return { env: name, schema, to: to ?? same };
}

/** An operator's setting without a default: undefined when unset. */
function optionalEnv<S extends TSchema>(name: string, schema: S): Setting<TOptional<S>, Static<S> | undefined> {
  return { env: name, schema: Type.Optional(schema) as TOptional<S>, to: same };
}

/** An internal field: the schema's default is the value the service runs with. */
function internal<S extends TSchema>(schema: S): Setting<S, Static<S>> {
  return { env: undefined, schema, to: same };
}

const onOff = (dflt: 'on' | 'off') => Type.Union([Type.Literal('on'), Type.Literal('off')], { default: dflt });
const isOn = (v: string): boolean => v === 'on';

export const SETTINGS = {
  // Where and how the service runs (README.md, "Configuration"; docs/deployment.md).
  databaseUrl: env('DATABASE_URL', Type.String({ default: './data/lanebridge.db', minLength: 1 })),
  host: env('HOST', Type.String({ default: '127.0.0.1' })),
  port: env('PORT', Type.Integer({ default: 8080, minimum: 0, maximum: 65535 })),
  /** `worker`: the port of its /healthz, /readyz and /metrics (0: any free port, logged at start). */
  workerPort: env('WORKER_PORT', Type.Integer({ default: 8081, minimum: 0, maximum: 65535 })),
  logLevel: env(
    'LOG_LEVEL',
    Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
    (v): string => v,
  ),
  dbPoolSize: env('DB_POOL_SIZE', Type.Integer({ default: 10, minimum: 1, maximum: 200 })),

  // Requests (docs/api.md, "Oversized and refused bodies" and "Slow requests").
  bodyLimitBytes: env('BODY_LIMIT_BYTES', Type.Integer({ default: 1_048_576, minimum: 1024 })),
  batchBodyLimitBytes: env('BATCH_BODY_LIMIT_BYTES', Type.Integer({ default: 10_485_760, minimum: 1024 })),
  /** Milliseconds a request body may take to arrive after its headers, else 408 (routes may declare longer: import parts). */
  requestTimeoutMs: env('REQUEST_TIMEOUT_SECONDS', Type.Number({ default: 60, minimum: 1, maximum: 3600 }), (s) => Math.round(s * 1000)),
  /** After an answer sent before the body was read (413, 415, 401…), at most this many bytes of the rest are read and discarded. */
  refusedBodyDrainBytes: internal(Type.Integer({ default: 67_108_864, minimum: 0, maximum: 1_073_741_824 })),
  /** … for at most this many milliseconds, then the connection is cut. */
  refusedBodyDrainMs: internal(Type.Integer({ default: 10_000, minimum: 0, maximum: 300_000 })),
  /** How long one import part's body may take to arrive (docs/imports.md, "Bounds"). */
  importPartTimeoutMs: internal(Type.Integer({ default: 600_000, minimum: 1 })),
  /**
   * Items of a load batch not started by then are reported failed, so a batch answers within the 60 s
   * the API promises (docs/api.md, "Batches"): 55 s at most.
   */
  loadBatchDeadlineMs: internal(Type.Integer({ default: 55_000, minimum: 1, maximum: 55_000 })),

  // Proxies, dashboard, metrics (docs/deployment.md, "Behind a TLS proxy: `TRUST_PROXY`"; docs/dashboard.md).
  /** Fastify's trustProxy: false, true, a hop count, or addresses and CIDRs (parseTrustProxy). */
  trustProxy: env('TRUST_PROXY', Type.String({ default: 'off', maxLength: 4096 }), (v) => parseTrustProxy(v)),
  /** Dashboard cookies: `on` always Secure (behind a TLS-terminating proxy), `off` never, `auto` when the request came over TLS. */
  dashboardCookieSecure: env('DASHBOARD_COOKIE_SECURE', Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { default: 'auto' })),
  /** Signs dashboard cookies; when unset a secret is generated once and kept in the database. */
  dashboardCookieSecret: optionalEnv('DASHBOARD_COOKIE_SECRET', Type.String({ minLength: 32 })),
  /** When set, GET /metrics (of `serve` and of `worker`) needs `Authorization: Bearer <METRICS_TOKEN>`. */
  metricsToken: optionalEnv('METRICS_TOKEN', Type.String({ minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' })),
  /** OpenTelemetry traces go by OTLP/HTTP to `<this>/v1/traces`; unset: tracing is off (docs/observability.md). */
  otlpEndpoint: optionalEnv('OTEL_EXPORTER_OTLP_ENDPOINT', Type.String({ pattern: '^https?://[^\\s]+$', maxLength: 2048 })),
  /** The `service.name` of the spans. */
  otelServiceName: internal(Type.String({ default: 'lanebridge', minLength: 1, maxLength: 200 })),

  // Rate limits (docs/deployment.md, "Rate limits").
  /** Counters shared by every instance; unset: counted in each process. */
  redisUrl: optionalEnv('REDIS_URL', Type.String({ pattern: '^rediss?://' })),
  /** Per-key rate limits counted and enforced (benchmarks switch them off). */
  rateLimits: internal(Type.Boolean({ default: true })),
  /** Prefix of the counters in Redis (tests sharing one Redis; deployments sharing one use a database number in REDIS_URL). */
  rateLimitKeyPrefix: internal(Type.String({ default: 'lanebridge:rl:', minLength: 1, maxLength: 100 })),
  /** API usage per key and hour and the failed-writes log, for the dashboard (benchmarks switch it off). */
  usageRecording: internal(Type.Boolean({ default: true })),
  /** GET-by-reference and list answers, and an open load's lane rows, reused while the database is unchanged (docs/api.md, "Reads answered from memory"). */
  readCache: internal(Type.Boolean({ default: true })),

  // Records, history and recommendations (docs/api.md; docs/events.md).
  /** Days the change feed keeps events (docs/events.md). */
  eventRetentionDays: env('EVENT_RETENTION_DAYS', Type.Integer({ default: 30, minimum: 1, maximum: 3650 })),
  /** Hours an Idempotency-Key is remembered with its answer (docs/api.md, "Safe retries: `Idempotency-Key`"). */
  idempotencyTtlHours: env('IDEMPOTENCY_TTL_HOURS', Type.Integer({ default: 24, minimum: 1, maximum: 720 })),
  /** Minutes after a stop's deadline that still count as on time (an organization may set its own). */
  onTimeGraceMinutes: env('ON_TIME_GRACE_MINUTES', Type.Integer({ default: DEFAULT_GRACE_MINUTES, minimum: 0, maximum: 1440 })),
  /** Road miles per great-circle mile when a load's distance is estimated (docs/geo.md). */
  circuityFactor: internal(Type.Number({ default: 1.2, minimum: 1, maximum: 3 })),
  /** Origins (and destinations) within this many miles share a lane: the API's 100 miles (docs/api.md, lane history). */
  laneRadiusMiles: internal(Type.Number({ default: 100, minimum: 1, maximum: 100 })),
  /** The least time between two runs of an organization's recommendations follow-up, in ms (docs/events.md). */
  recommendationsFollowUpGapMs: internal(Type.Integer({ default: 250, minimum: 0, maximum: 60_000 })),

  // Webhooks (docs/webhooks.md).
  /** `on` lifts the webhook URL rules (https only, no loopback/private/link-local addresses): development and tests only. */
  webhookAllowInsecure: env('WEBHOOK_ALLOW_INSECURE', onOff('off'), isOn),
  /** `off`: `serve` does not deliver webhooks (run `bin/lanebridge worker` processes instead). */
  webhookWorker: env('WEBHOOK_WORKER', onOff('on'), isOn),
  /** Webhook endpoints an organization may have, enabled or not (a create past it: 409). */
  webhookMaxEndpoints: env('WEBHOOK_MAX_ENDPOINTS', Type.Integer({ default: 20, minimum: 1, maximum: 10_000 })),
  /** Milliseconds a claimed delivery stays with its process before another may take it over. */
  webhookLeaseMs: internal(Type.Integer({ default: 30_000, minimum: 2000, maximum: 3_600_000 })),
  /** Deliveries one process sends at once, all organizations together … */
  webhookMaxInFlight: internal(Type.Integer({ default: 64, minimum: 1, maximum: 1024 })),
  /** … and the most one organization's endpoints may hold (a share larger than the whole is the whole). */
  webhookMaxInFlightPerOrg: internal(Type.Integer({ default: 16, minimum: 1, maximum: 1024 })),

  // Imports (docs/imports.md).
  /** Where uploaded import parts are kept until their import ends (shared by every instance that runs imports). */
  importsDir: env('IMPORTS_DIR', Type.String({ default: './data/imports', minLength: 1 })),
  /** `off`: `serve` runs no imports (run `bin/lanebridge worker` processes instead). */
  importWorker: env('IMPORT_WORKER', onOff('on'), isOn),
  /** Bytes of parts one organization's unfinished imports may hold on disk, all together (a part past it: 413). */
  importMaxUploadBytes: env('IMPORT_MAX_UPLOAD_BYTES', Type.Integer({ default: 2_147_483_648, minimum: 1, maximum: 2 ** 50 })),
  /** Imports one process runs at once, each of another organization. */
  importMaxRunning: env('IMPORT_MAX_RUNNING', Type.Integer({ default: 2, minimum: 1, maximum: 64 })),
  /** Milliseconds a claimed import stays with its process without news before another instance may resume it. */
  importLeaseMs: internal(Type.Integer({ default: 30_000, minimum: 1000, maximum: 3_600_000 })),
  /** Rows per import chunk at most: one transaction, one checkpoint and one analytics run each. */
  importChunkRows: internal(Type.Integer({ default: 1000, minimum: 1, maximum: 100_000 })),
  /** How long an import chunk's transaction should take, in ms: chunks are sized to it (0: every chunk importChunkRows rows). */
  importChunkMs: internal(Type.Integer({ default: 50, minimum: 0, maximum: 60_000 })),
  /** SQLite: how long a chunk should take while the API's writes arrive, in ms (0: importChunkMs always). */
  importLiveChunkMs: internal(Type.Integer({ default: 10, minimum: 0, maximum: 60_000 })),
  /** An import still awaiting its upload this long after its last part (or its creation) is cancelled and its parts removed. */
  importUploadExpiryMs: internal(Type.Integer({ default: 86_400_000, minimum: 1 })),
} satisfies Record<string, Setting<TSchema, unknown>>;

type Settings = typeof SETTINGS;
export type Config = { [K in keyof Settings]: ReturnType<Settings[K]['to']> };

/**
 * Variables earlier versions read and this one ignores, each with why (README.md, "Settings removed in
 * this version"). `serve` and `worker` log a warning at start for each one that is set.
 */
export const REMOVED_SETTINGS: Readonly<Record<string, string>> = {
  REFUSED_BODY_DRAIN_BYTES: 'refused bodies are read up to 64 MiB',
  REFUSED_BODY_DRAIN_SECONDS: 'refused bodies are read for up to 10 s',
  DISTANCE_CIRCUITY: 'estimated distances use the usual truck circuity, 1.2',
  LANE_RADIUS_MILES: "a lane is the API's 100 miles (widen=true still widens it per request)",
  LOAD_BATCH_DEADLINE_MS: "batches stop starting items at 55 s so they answer within the API's 60 s",
  RECOMMENDATIONS_FOLLOW_UP_GAP_MS: 'follow-up runs are at least 250 ms apart',
  RATE_LIMITS: 'per-key limits are always counted (give keys higher --per-minute/--per-day where a gateway limits in front)',
  RATE_LIMIT_KEY_PREFIX: 'deployments sharing one Redis use a database number each in REDIS_URL',
  READ_CACHE: 'answers are reused while the database is unchanged',
  USAGE_RECORDING: 'API usage and failed writes are always recorded for the dashboard',
  WEBHOOK_LEASE_SECONDS: 'a claimed delivery stays with its process for 30 s',
  WEBHOOK_MAX_IN_FLIGHT: 'a process sends at most 64 deliveries at once',
  WEBHOOK_MAX_IN_FLIGHT_PER_ORG: 'an organization holds at most 16 of them',
  IMPORT_LEASE_SECONDS: 'a claimed import stays with its process for 30 s without news',
  IMPORT_CHUNK_ROWS: 'import chunks hold at most 1000 rows',
  IMPORT_CHUNK_MS: 'import chunks are sized to take about 50 ms',
  IMPORT_LIVE_CHUNK_MS: 'on SQLite, about 10 ms while API writes arrive',
  IMPORT_UPLOAD_EXPIRY_HOURS: 'an import awaiting its upload expires 24 h after its last part',
  OTEL_SERVICE_NAME: 'spans are named service.name lanebridge (tell deployments apart at the collector)',
};

/** The variables of REMOVED_SETTINGS set in `env`, each as a warning line for the log. */
export function removedSettingsSet(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(REMOVED_SETTINGS)
    .filter(([name]) => env[name] !== undefined && env[name] !== '')
    .map(([name, why]) => `${name} is set but no longer read, and is ignored: ${why} (README.md, "Settings removed in this version")`);
}

/** The operator's settings: environment variable, default (undefined: unset), for README.md's table and its test. */
export function operatorSettings(): { env: string; default: unknown }[] {
  return Object.values(SETTINGS as Record<string, Setting>)
    .filter((s) => s.env !== undefined)
    .map((s) => ({ env: s.env!, default: (s.schema as { default?: unknown }).default }));
}

export class ConfigError extends Error {}

export type TrustProxy = boolean | number | string[];

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Whether `entry` is an IPv4/IPv6 address, an address with a prefix length, or a named range. */
function isProxyEntry(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY as Fastify's trustProxy takes it: `off`/`false` → false, `on`/`true` → true, a whole
 * number → that many hops, otherwise a comma-separated list of addresses, CIDRs and range names.
 * Throws a message naming the setting and the entry it could not read.
 */
export function parseTrustProxy(raw: string): TrustProxy {
  const text = raw.trim().toLowerCase();
  if (text === '' || text === 'off' || text === 'false') return false;
  if (text === 'on' || text === 'true') return true;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 100) throw new ConfigError('Invalid environment: TRUST_PROXY: a hop count must be at most 100');
    return hops === 0 ? false : hops;
  }
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const bad = entries.find((e) => !isProxyEntry(e));
  if (bad !== undefined || entries.length === 0) {
    throw new ConfigError(
      `Invalid environment: TRUST_PROXY: '${bad ?? raw}' is not an address, a CIDR (10.0.0.0/8) or loopback/linklocal/uniquelocal; use off, on, a hop count, or a comma-separated list of those`,
    );
  }
  return entries;
}

/** LANEBRIDGE_INTERNAL: a JSON object of internal fields (tests and benchmarks), each checked against its schema. */
function internalOverrides(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('Invalid environment: LANEBRIDGE_INTERNAL: not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError('Invalid environment: LANEBRIDGE_INTERNAL: not a JSON object');
  for (const [field, value] of Object.entries(parsed)) {
    const s = (SETTINGS as Record<string, Setting>)[field];
    if (s === undefined || s.env !== undefined) throw new ConfigError(`Invalid environment: LANEBRIDGE_INTERNAL: ${field} is not an internal field`);
    if (!Value.Check(s.schema, value))
      throw new ConfigError(`Invalid environment: LANEBRIDGE_INTERNAL: ${field}: ${[...Value.Errors(s.schema, value)][0]?.message ?? 'invalid'}`);
  }
  return parsed as Record<string, unknown>;
}

/** "one of 'on', 'off'" for a union of literals (TypeBox says only "Expected union value"). */
function choicesOf(schema: unknown): string | null {
  const variants = (schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (!variants || !variants.every((v) => v.const !== undefined)) return null;
  return `expected one of ${variants.map((v) => `'${String(v.const)}'`).join(', ')}`;
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const entries = Object.entries(SETTINGS as Record<string, Setting>);
  const schema = Type.Object(Object.fromEntries(entries.filter(([, s]) => s.env !== undefined).map(([, s]) => [s.env!, s.schema])));
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) {
    const v = environment[key];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  const read = Value.Default(schema, Value.Convert(schema, raw)) as Record<string, unknown>;
  const errors = [...Value.Errors(schema, read)];
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.path.slice(1) || '(root)'}: ${choicesOf(e.schema) ?? e.message}, got ${JSON.stringify(e.value)}`);
    throw new ConfigError(`Invalid environment: ${lines.join('; ')}`);
  }
  const overrides = internalOverrides(environment.LANEBRIDGE_INTERNAL);
  const config = Object.fromEntries(
    entries.map(([field, s]) => [field, s.env !== undefined ? s.to(read[s.env]) : field in overrides ? overrides[field] : Value.Default(s.schema, undefined)]),
  ) as Config;
  config.webhookMaxInFlightPerOrg = Math.min(config.webhookMaxInFlightPerOrg, config.webhookMaxInFlight);
  return config;
}
