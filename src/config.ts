import { isIP } from 'node:net';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** One schema for the environment, validated once at boot and passed down (never read globally). */
const EnvSchema = Type.Object({
  DATABASE_URL: Type.String({ default: './data/lanebridge.db', minLength: 1 }),
  HOST: Type.String({ default: '127.0.0.1' }),
  PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
  /** `worker`: the port of its /healthz, /readyz and /metrics (0: any free port, logged at start). */
  WORKER_PORT: Type.Integer({ default: 8081, minimum: 0, maximum: 65535 }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  BODY_LIMIT_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024 }),
  BATCH_BODY_LIMIT_BYTES: Type.Integer({ default: 10_485_760, minimum: 1024 }),
  /** After an answer sent before the body was read (413, 415, 401…), at most this many bytes of it are read and discarded (0: close at once). */
  REFUSED_BODY_DRAIN_BYTES: Type.Integer({ default: 67_108_864, minimum: 0, maximum: 1_073_741_824 }),
  /** … and for at most this many seconds, then the connection is cut (0: close at once). */
  REFUSED_BODY_DRAIN_SECONDS: Type.Number({ default: 10, minimum: 0, maximum: 300 }),
  /** A request body must arrive within this many seconds of its headers, else 408 (routes may declare longer: import parts). */
  REQUEST_TIMEOUT_SECONDS: Type.Number({ default: 60, minimum: 1, maximum: 3600 }),
  DISTANCE_CIRCUITY: Type.Number({ default: 1.2, minimum: 1, maximum: 3 }),
  LANE_RADIUS_MILES: Type.Number({ default: 100, minimum: 1, maximum: 1000 }),
  // D14: minutes after a stop's deadline that still count as on time (an organization may set its own).
  ON_TIME_GRACE_MINUTES: Type.Integer({ default: 15, minimum: 0, maximum: 1440 }),
  LOAD_BATCH_DEADLINE_MS: Type.Integer({ default: 55_000, minimum: 1, maximum: 600_000 }),
  /** The least time between two runs of an organization's recommendations follow-up (load.recommendations_changed), in ms: writes meanwhile are followed up together. */
  RECOMMENDATIONS_FOLLOW_UP_GAP_MS: Type.Integer({ default: 250, minimum: 0, maximum: 60_000 }),
  DB_POOL_SIZE: Type.Integer({ default: 10, minimum: 1, maximum: 200 }),
  /** Dashboard cookies: `on` always Secure (behind a TLS-terminating proxy), `off` never, `auto` when the request came over TLS. */
  DASHBOARD_COOKIE_SECURE: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { default: 'auto' }),
  /** Signs dashboard cookies; when unset a secret is generated once and kept in the database. */
  DASHBOARD_COOKIE_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  /** `off` switches per-key rate limits off entirely (benchmarks; a gateway that limits in front). */
  RATE_LIMITS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** `off` reads every GET by reference and every list from the database even when nothing changed (benchmarks, diagnosis). */
  READ_CACHE: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** `off` keeps no API usage counts and no failed-writes log (the dashboard's integration health; benchmarks). */
  USAGE_RECORDING: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /**
   * Proxies whose X-Forwarded-For / -Proto / -Host are believed (Fastify's trustProxy): `off` (default),
   * `on` (any peer: only when nothing but the proxy can reach the service), a hop count, or a
   * comma-separated list of addresses and CIDRs (`loopback`, `linklocal`, `uniquelocal` name ranges).
   */
  TRUST_PROXY: Type.String({ default: 'off', maxLength: 4096 }),
  /** When set, GET /metrics (of `serve` and of `worker`) needs `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' })),
  /** Prefix of the rate-limit counters in Redis (several deployments sharing one Redis). */
  RATE_LIMIT_KEY_PREFIX: Type.String({ default: 'lanebridge:rl:', minLength: 1, maxLength: 100 }),
  /** How long the change feed keeps events (D11), in days. */
  EVENT_RETENTION_DAYS: Type.Integer({ default: 30, minimum: 1, maximum: 3650 }),
  /** How long an Idempotency-Key and its stored answer are kept (D13), in hours. */
  IDEMPOTENCY_TTL_HOURS: Type.Integer({ default: 24, minimum: 1, maximum: 720 }),
  /** D12: `on` lifts the webhook URL rules (https only, no loopback/private/link-local addresses): development and tests only. */
  WEBHOOK_ALLOW_INSECURE: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'off' }),
  /** `off`: `serve` does not deliver webhooks (run `bin/lanebridge worker` processes instead). */
  WEBHOOK_WORKER: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** How long a claimed delivery stays with the process sending it before another may take it over, in seconds. */
  WEBHOOK_LEASE_SECONDS: Type.Integer({ default: 30, minimum: 2, maximum: 3600 }),
  /** Webhook endpoints an organization may have, enabled or not (a create past it: 409). */
  WEBHOOK_MAX_ENDPOINTS: Type.Integer({ default: 20, minimum: 1, maximum: 10_000 }),
  /** Webhook deliveries one process sends at once, all organizations together. */
  WEBHOOK_MAX_IN_FLIGHT: Type.Integer({ default: 64, minimum: 1, maximum: 1024 }),
  /** Of those, the most one organization's endpoints may hold (one slot per endpoint). */
  WEBHOOK_MAX_IN_FLIGHT_PER_ORG: Type.Integer({ default: 16, minimum: 1, maximum: 1024 }),
  /** D15: where uploaded import parts are kept until their import ends (shared by every instance that runs imports). */
  IMPORTS_DIR: Type.String({ default: './data/imports', minLength: 1 }),
  /** `off`: `serve` runs no imports (run `bin/lanebridge worker` processes instead). */
  IMPORT_WORKER: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  /** How long a claimed import stays with its process without news before another instance may resume it, in seconds. */
  IMPORT_LEASE_SECONDS: Type.Integer({ default: 30, minimum: 1, maximum: 3600 }),
  /** Rows per import chunk at most: one transaction, one checkpoint and one analytics run each. */
  IMPORT_CHUNK_ROWS: Type.Integer({ default: 1000, minimum: 1, maximum: 100_000 }),
  /**
   * How long an import chunk's transaction should take, in ms: chunks are sized to it (128 rows to
   * IMPORT_CHUNK_ROWS), so the API's writes beside an import wait for about this long (longer where
   * 128 rows take longer). 0: every chunk has IMPORT_CHUNK_ROWS rows.
   */
  IMPORT_CHUNK_MS: Type.Integer({ default: 50, minimum: 0, maximum: 60_000 }),
  /**
   * SQLite: how long an import chunk should take while the API's writes arrive (one in the last second),
   * in ms; chunks are then sized to it (8 rows at least), so a write beside an import waits about this
   * long instead of IMPORT_CHUNK_MS. 0: chunks are sized to IMPORT_CHUNK_MS whatever arrives.
   */
  IMPORT_LIVE_CHUNK_MS: Type.Integer({ default: 10, minimum: 0, maximum: 60_000 }),
  /** An import still awaiting its upload this many hours after its last part (or its creation) is cancelled and its parts removed. */
  IMPORT_UPLOAD_EXPIRY_HOURS: Type.Integer({ default: 24, minimum: 1, maximum: 720 }),
  /** Bytes of parts one organization's unfinished imports may hold on disk, all together (a part past it: 413). */
  IMPORT_MAX_UPLOAD_BYTES: Type.Integer({ default: 2_147_483_648, minimum: 1, maximum: 2 ** 50 }),
  /** Imports one process runs at once, each of another organization. */
  IMPORT_MAX_RUNNING: Type.Integer({ default: 2, minimum: 1, maximum: 64 }),
  /** OpenTelemetry traces go by OTLP/HTTP to `<this>/v1/traces`; unset: tracing is off (docs/observability.md). */
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$', maxLength: 2048 })),
  /** The `service.name` of the spans. */
  OTEL_SERVICE_NAME: Type.String({ default: 'lanebridge', minLength: 1, maxLength: 200 }),
});

export type Config = {
  databaseUrl: string;
  host: string;
  port: number;
  workerPort: number;
  logLevel: string;
  bodyLimitBytes: number;
  batchBodyLimitBytes: number;
  /** Bytes of a refused body read and discarded after its early answer before the connection is cut (issue 31). */
  refusedBodyDrainBytes: number;
  /** Milliseconds the rest of a refused body is read after its early answer before the connection is cut. */
  refusedBodyDrainMs: number;
  /** Milliseconds a request body may take to arrive after its headers (REQUEST_TIMEOUT_SECONDS, default 60 s). */
  requestTimeoutMs: number;
  dbPoolSize: number;
  dashboardCookieSecure: 'auto' | 'on' | 'off';
  dashboardCookieSecret: string | undefined;
  /** Road miles per great-circle mile when a load's distance is estimated (D4). */
  circuityFactor: number;
  /** Items of a load batch not started by then are reported failed, so the batch answers within 60 s. */
  loadBatchDeadlineMs: number;
  /** Origins (and destinations) within this many miles share a lane (D7). */
  laneRadiusMiles: number;
  recommendationsFollowUpGapMs: number;
  onTimeGraceMinutes: number;
  redisUrl: string | undefined;
  /** Per-key rate limits counted and enforced (RATE_LIMITS=on, the default). */
  rateLimits: boolean;
  rateLimitKeyPrefix: string;
  /** Fastify's trustProxy from TRUST_PROXY: false, true, a hop count, or addresses and CIDRs. */
  trustProxy: TrustProxy;
  /** Bearer token /metrics requires (METRICS_TOKEN); undefined: /metrics is open. */
  metricsToken: string | undefined;
  /** GET-by-reference and list answers reused while the database is unchanged (READ_CACHE=on, the default). */
  readCache: boolean;
  /** API usage per key and hour and the failed-writes log, for the dashboard (USAGE_RECORDING=on, the default). */
  usageRecording: boolean;
  /** Days the change feed keeps events (D11; default 30). */
  eventRetentionDays: number;
  /** Hours an Idempotency-Key is remembered with its answer (D13; default 24). */
  idempotencyTtlHours: number;
  /** D12: webhook URLs may be http and may resolve to loopback/private addresses (development, tests). */
  webhookAllowInsecure: boolean;
  /** `serve` delivers webhooks itself (WEBHOOK_WORKER=on, the default). */
  webhookWorker: boolean;
  /** Milliseconds a claimed delivery stays with its process (a killed process's deliveries are retried after it). */
  webhookLeaseMs: number;
  /** Webhook endpoints per organization (WEBHOOK_MAX_ENDPOINTS, default 20). */
  webhookMaxEndpoints: number;
  /** Deliveries one process sends at once (default 64), and one organization's share of them (default 16). */
  webhookMaxInFlight: number;
  webhookMaxInFlightPerOrg: number;
  /** D15: the directory of uploaded import parts (IMPORTS_DIR). */
  importsDir: string;
  /** `serve` runs imports itself (IMPORT_WORKER=on, the default). */
  importWorker: boolean;
  /** Milliseconds a claimed import stays with its process without a heartbeat (a killed process's import resumes after it). */
  importLeaseMs: number;
  /** Rows per import chunk (default 1000). */
  importChunkRows: number;
  /** How long an import chunk should take (ms; 0: fixed chunks of importChunkRows). */
  importChunkMs: number;
  /** SQLite: how long a chunk should take while the API's writes arrive (ms; 0: importChunkMs always). */
  importLiveChunkMs: number;
  /** Milliseconds an import may wait for its upload after its last part (IMPORT_UPLOAD_EXPIRY_HOURS, default 24 h). */
  importUploadExpiryMs: number;
  /** Bytes of parts an organization's unfinished imports may hold (IMPORT_MAX_UPLOAD_BYTES, default 2 GiB). */
  importMaxUploadBytes: number;
  /** Imports one process runs at once, one per organization (IMPORT_MAX_RUNNING, default 2). */
  importMaxRunning: number;
  /** How long one part upload's body may take to arrive (ms; 10 minutes, docs/imports.md). */
  importPartTimeoutMs: number;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: where spans are sent; undefined: tracing off. */
  otlpEndpoint: string | undefined;
  /** OTEL_SERVICE_NAME (default `lanebridge`). */
  otelServiceName: string;
};

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
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  const bad = entries.find((e) => !isProxyEntry(e));
  if (bad !== undefined || entries.length === 0) {
    throw new ConfigError(
      `Invalid environment: TRUST_PROXY: '${bad ?? raw}' is not an address, a CIDR (10.0.0.0/8) or loopback/linklocal/uniquelocal; use off, on, a hop count, or a comma-separated list of those`,
    );
  }
  return entries;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const v = env[key];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  const converted = Value.Default(EnvSchema, Value.Convert(EnvSchema, raw));
  const errors = [...Value.Errors(EnvSchema, converted)];
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.path.slice(1) || '(root)'}: ${e.message}`);
    throw new ConfigError(`Invalid environment: ${lines.join('; ')}`);
  }
  const env2 = converted as Static<typeof EnvSchema>;
  return {
    databaseUrl: env2.DATABASE_URL,
    host: env2.HOST,
    port: env2.PORT,
    workerPort: env2.WORKER_PORT,
    logLevel: env2.LOG_LEVEL,
    bodyLimitBytes: env2.BODY_LIMIT_BYTES,
    batchBodyLimitBytes: env2.BATCH_BODY_LIMIT_BYTES,
    refusedBodyDrainBytes: env2.REFUSED_BODY_DRAIN_BYTES,
    refusedBodyDrainMs: Math.round(env2.REFUSED_BODY_DRAIN_SECONDS * 1000),
    requestTimeoutMs: Math.round(env2.REQUEST_TIMEOUT_SECONDS * 1000),
    dbPoolSize: env2.DB_POOL_SIZE,
    dashboardCookieSecure: env2.DASHBOARD_COOKIE_SECURE,
    dashboardCookieSecret: env2.DASHBOARD_COOKIE_SECRET,
    circuityFactor: env2.DISTANCE_CIRCUITY,
    loadBatchDeadlineMs: env2.LOAD_BATCH_DEADLINE_MS,
    laneRadiusMiles: env2.LANE_RADIUS_MILES,
    recommendationsFollowUpGapMs: env2.RECOMMENDATIONS_FOLLOW_UP_GAP_MS,
    onTimeGraceMinutes: env2.ON_TIME_GRACE_MINUTES,
    redisUrl: env2.REDIS_URL,
    rateLimits: env2.RATE_LIMITS === 'on',
    rateLimitKeyPrefix: env2.RATE_LIMIT_KEY_PREFIX,
    trustProxy: parseTrustProxy(env2.TRUST_PROXY),
    metricsToken: env2.METRICS_TOKEN,
    readCache: env2.READ_CACHE === 'on',
    usageRecording: env2.USAGE_RECORDING === 'on',
    eventRetentionDays: env2.EVENT_RETENTION_DAYS,
    idempotencyTtlHours: env2.IDEMPOTENCY_TTL_HOURS,
    webhookAllowInsecure: env2.WEBHOOK_ALLOW_INSECURE === 'on',
    webhookWorker: env2.WEBHOOK_WORKER === 'on',
    webhookLeaseMs: env2.WEBHOOK_LEASE_SECONDS * 1000,
    webhookMaxEndpoints: env2.WEBHOOK_MAX_ENDPOINTS,
    webhookMaxInFlight: env2.WEBHOOK_MAX_IN_FLIGHT,
    // A share larger than the whole is the whole.
    webhookMaxInFlightPerOrg: Math.min(env2.WEBHOOK_MAX_IN_FLIGHT_PER_ORG, env2.WEBHOOK_MAX_IN_FLIGHT),
    importsDir: env2.IMPORTS_DIR,
    importWorker: env2.IMPORT_WORKER === 'on',
    importLeaseMs: env2.IMPORT_LEASE_SECONDS * 1000,
    importChunkRows: env2.IMPORT_CHUNK_ROWS,
    importChunkMs: env2.IMPORT_CHUNK_MS,
    importLiveChunkMs: env2.IMPORT_LIVE_CHUNK_MS,
    importUploadExpiryMs: env2.IMPORT_UPLOAD_EXPIRY_HOURS * 3_600_000,
    importMaxUploadBytes: env2.IMPORT_MAX_UPLOAD_BYTES,
    importMaxRunning: env2.IMPORT_MAX_RUNNING,
    importPartTimeoutMs: 600_000,
    otlpEndpoint: env2.OTEL_EXPORTER_OTLP_ENDPOINT,
    otelServiceName: env2.OTEL_SERVICE_NAME,
  };
}
