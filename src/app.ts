import Fastify, { type FastifyInstance } from 'fastify';
import { loggerOptions } from './lib/http/logging.js';
import type { Config } from './config.js';
import type { DataStore } from './lib/db/index.js';
import { type Clock, systemClock } from './lib/clock.js';
import { readCache } from './lib/http/read-cache.js';
import { installAuth, type ApiRouteEntry } from './lib/http/auth.js';
import { installIdempotency } from './lib/http/idempotency.js';
import { createMetrics, type Metrics } from './lib/http/metrics.js';
import { installOpenApi } from './lib/http/openapi.js';
import { PaginationSchema } from './lib/http/pagination.js';
import { clientErrorHandler, frameworkErrorHandler, installPlumbing, newRequestId, refuseBatchItems } from './lib/http/plumbing.js';
import { installIgnoredFields } from './lib/http/ignored-fields.js';
import { installBodyDeadline } from './lib/http/body-deadline.js';
import { foreground } from './lib/http/foreground.js';
import { createRateLimiter, registerRateLimitMetrics, type RateLimiter, type RateLimiterOptions } from './lib/http/rate-limit.js';
import { accountsService, type AccountsService } from './modules/accounts/accounts.service.js';
import { BatchResultSchema } from './modules/shared/batch.js';
import { carrierRoutes } from './modules/carriers/carriers.routes.js';
import { Address, Carrier, CarrierPage, Contact } from './modules/carriers/carriers.schema.js';
import { carriersService, type CarriersService } from './modules/carriers/carriers.service.js';
import { customerRoutes } from './modules/customers/customers.routes.js';
import { Customer, CustomerPage } from './modules/customers/customers.schema.js';
import { customersService, type CustomersService } from './modules/customers/customers.service.js';
import { locationRoutes } from './modules/locations/locations.routes.js';
import { Location, LocationPage } from './modules/locations/locations.schema.js';
import { locationsService, type LocationsService } from './modules/locations/locations.service.js';
import { opsRoutes } from './modules/ops/ops.routes.js';
import { usageRecorder, type UsageRecorder } from './modules/ops/usage.service.js';
import { installUsage } from './modules/ops/usage.hooks.js';
import { laneAnalytics } from './modules/lanes/analytics.js';
import { CarrierRecommendation, Evidence } from './modules/lanes/lanes.schema.js';
import { lanesService } from './modules/lanes/lanes.service.js';
import { writePipeline, type AfterCommit, type WritePipeline } from './modules/shared/write-pipeline.js';
import { recommendationsFeed, type RecommendationsFeed } from './modules/lanes/recommendations.feed.js';
import { LOAD_STATUS_COUNTER, writeStatusCounts } from './modules/loads/loads.repo.js';
import { marketRateRoutes } from './modules/rates/rates.routes.js';
import { LanePoint, MarketRate, MarketRatePage } from './modules/rates/rates.schema.js';
import { marketRatesService, type MarketRatesService } from './modules/rates/rates.service.js';
import { loadRoutes } from './modules/loads/loads.routes.js';
import { trackingRoutes } from './modules/tracking/tracking.routes.js';
import { trackingService } from './modules/tracking/tracking.service.js';
import { TrackingEventAnswer } from './modules/tracking/tracking.schema.js';
import { FinancialRate, Load, LoadPage, Stop, TeamMember } from './modules/loads/loads.schema.js';
import { LoadRecommendations } from './modules/recommendations/recommendations.schema.js';
import { recommendationsService } from './modules/recommendations/recommendations.service.js';
import { recommendationRoutes } from './modules/recommendations/recommendations.routes.js';
import { loadsService, type LoadsService } from './modules/loads/loads.service.js';
import { loadJson } from './modules/loads/loads.present.js';
import { refuseDeleteWhileLoadsUse } from './modules/loads/references.js';
import { insightsService } from './modules/insights/insights.service.js';
import { eventRoutes } from './modules/events/events.routes.js';
import { eventRetention } from './modules/events/retention.js';
import { FeedEvent, EventPage } from './modules/events/events.schema.js';
import { eventsService, type EventsService } from './modules/events/events.service.js';
import { warmup as warmupGeocoder } from './geo/index.js';
import { dashboardPlugin, type DashboardOptions, type DashboardWriteRoute } from './dashboard/plugin.js';
import { webhooksModule, type Webhooks } from './modules/webhooks/webhooks.js';
import type { Resolver } from './modules/webhooks/url-policy.js';
import { webhookRoutes, WEBHOOK_SCHEMAS } from './modules/webhooks/webhooks.routes.js';
import { importResources, importsModule, type Imports } from './modules/imports/imports.js';
import { importRoutes } from './modules/imports/imports.routes.js';
import { IMPORT_SCHEMAS } from './modules/imports/imports.schema.js';
import { auditService } from './modules/audit/audit.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { AuditEntry, AuditEntryPage } from './modules/audit/audit.schema.js';
import { requestTracing } from './lib/telemetry/http.js';
import { traceRedisCommands } from './lib/telemetry/redis.js';
import { detached } from './lib/telemetry/tracing.js';

export interface AppDeps {
  config: Config;
  store: DataStore;
  clock?: Clock;
  /** Pino options, or false for silence (tests). */
  logger?: boolean | Record<string, unknown>;
  /** Load the geocoder's data at boot (default true). */
  warmGeocoder?: boolean;
  /** Dashboard overrides (tests: a faster sign-in throttle, shorter sessions). */
  dashboard?: Partial<Pick<DashboardOptions, 'signInThrottle' | 'sessions'>>;
  /**
   * Extra limiter options (tests: a short Redis timeout, ioredis options). The limiter itself follows
   * the config: `rateLimits` off, `redisUrl` set (Redis) or not (in process), `rateLimitKeyPrefix`; it
   * counts with `clock`, so a fake clock moves its windows.
   */
  rateLimit?: Partial<Pick<RateLimiterOptions, 'commandTimeoutMs' | 'retryAfterFailureMs' | 'redisOptions'>>;
  /**
   * load.recommendations_changed follows load writes in the background (default), or only when
   * `recommendations.sweep()` is called (tests that count a request's statements).
   */
  recommendationFollowUp?: 'background' | 'manual';
  /**
   * Webhook deliveries (docs/webhooks.md) are sent in the background after each commit and by a poll
   * (default when config.webhookWorker is on), or only when `webhooks.worker.drain()` is called (tests).
   * Follows `recommendationFollowUp: 'manual'` when not given (tests that count a request's statements).
   */
  webhookDelivery?: 'background' | 'manual';
  /** How webhook URLs' host names are resolved for the URL rules (tests: a fixed table; default the system's). */
  webhookResolve?: Resolver;
  /**
   * Imports (docs/imports.md) run in the background (default when config.importWorker is on), or only when
   * `imports.runner.drain()` is called (tests). Follows `webhookDelivery` when not given.
   */
  importRunner?: 'background' | 'manual';
  /**
   * Spans per request and per Redis command (OpenTelemetry, started by startTracing when
   * OTEL_EXPORTER_OTLP_ENDPOINT is set; statements are traced by the store: openDataStore's `traced`).
   * Off (the default): no hook, no subscription, nothing loaded.
   */
  tracing?: boolean;
}

export interface Lanebridge {
  app: FastifyInstance;
  routeTable: ApiRouteEntry[];
  /** Every dashboard route that is not a GET, and whether a member may use it (docs/dashboard.md, "Roles, the first run and the audit log"; the role test walks it). */
  dashboardWriteRoutes: DashboardWriteRoute[];
  metrics: Metrics;
  rateLimiter: RateLimiter;
  services: {
    accounts: AccountsService;
    customers: CustomersService;
    carriers: CarriersService;
    locations: LocationsService;
    loads: LoadsService;
    marketRates: MarketRatesService;
  };
  analytics: ReturnType<typeof laneAnalytics>;
  /** The one write path (src/modules/shared/write-pipeline.ts). */
  pipeline: WritePipeline;
  /** The change feed (docs/events.md): its outbox, pages and retention. */
  events: EventsService;
  /** load.recommendations_changed, written after load writes (schedule, sweep, idle). */
  recommendations: RecommendationsFeed;
  /** Webhooks: the endpoints service and the delivery worker. */
  webhooks: Webhooks;
  /** Imports: the API's service and the job runner. */
  imports: Imports;
  /** Integration health's counters (usage per key, failed writes, ignored fields). */
  usage: UsageRecorder;
}

/** TRUST_PROXY as a hop count: the nearest `hops` addresses of the chain are proxies (as Fastify reads a number). */
function trustHops(hops: number) {
  return (_address: string, hop: number) => hop < hops;
}

/** Paths under the API prefix that need no key. */
const PUBLIC_API_PATHS = new Set(['/v2/tms-api/openapi.json']);

export async function buildApp(deps: AppDeps): Promise<Lanebridge> {
  const { config, store } = deps;
  const clock = deps.clock ?? systemClock;
  const requestSpans = deps.tracing ? requestTracing((req) => req.principal?.orgId ?? req.dashboardSession?.orgId) : null;
  const app = Fastify({
    logger: deps.logger === false ? false : loggerOptions(config.logLevel, typeof deps.logger === 'object' ? deps.logger : {}),
    genReqId: newRequestId,
    // With tracing on, each request's log lines carry its trace id beside its request id.
    ...(requestSpans ? { childLoggerFactory: requestSpans.childLoggerFactory } : {}),
    // TRUST_PROXY: req.ip (logs, the dashboard's sign-in throttle) and req.protocol (Secure cookies) from X-Forwarded-*.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    // Requests that arrive while closing get the API's 503 (docs/api.md, "Errors") from the plumbing
    // (Fastify's has another body).
    return503OnClosing: false,
    forceCloseConnections: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    // Errors raised before routing get the same shapes.
    frameworkErrors: frameworkErrorHandler,
    // And those Node's HTTP parser refuses (a malformed request line or header): the same detail shape,
    // an X-Request-Id.
    clientErrorHandler,
  });

  // First of all hooks, so the request's span is active in every other one.
  if (requestSpans) {
    requestSpans.install(app);
    const stopRedisSpans = traceRedisCommands();
    app.addHook('onClose', async () => stopRedisSpans());
  }

  const metrics = createMetrics();
  const accounts = accountsService(store, clock, metrics.cacheCounters('key'));
  const analytics = laneAnalytics({ store, metrics, clock, log: app.log });
  // A load's event data is written by the schema GET answers with (the same text, faster to make).
  const events = eventsService(clock, { retentionDays: config.eventRetentionDays, serializers: { 'load.created': loadJson, 'load.updated': loadJson } });
  const webhooks = webhooksModule({
    db: store.db,
    clock,
    allowInsecure: config.webhookAllowInsecure,
    leaseMs: config.webhookLeaseMs,
    log: app.log,
    outcomes: metrics.webhookOutcomes,
    retentionDays: config.eventRetentionDays,
    maxEndpoints: config.webhookMaxEndpoints,
    maxInFlight: config.webhookMaxInFlight,
    maxInFlightPerOrg: config.webhookMaxInFlightPerOrg,
    ...(deps.webhookResolve ? { resolve: deps.webhookResolve } : {}),
  });
  metrics.registerWebhookQueue(() => webhooks.service.queue());
  // Load and location writes are followed up beside the request (load.recommendations_changed).
  let followUp: RecommendationsFeed | null = null;
  const afterCommit: AfterCommit = async (orgId, committed, opts) => {
    // The committed events go out to webhook endpoints beside the request.
    // (Background work of its own: outside the request's span when tracing is on.)
    if (committed.records.length > 0 || committed.announcements.length > 0) detached(() => webhooks.worker.wake(orgId));
    await analytics.afterCommit(orgId, committed, opts);
    if (followUp && deps.recommendationFollowUp !== 'manual' && committed.needsFollowUp()) void detached(() => followUp!.schedule(orgId));
  };
  const pipeline = writePipeline({ store, afterCommit, counters: { [LOAD_STATUS_COUNTER]: writeStatusCounts }, outbox: events.outbox });
  // An open load's lane rows are kept in memory while what they depend on is unchanged (READ_CACHE=off: read every time).
  const lanes = lanesService(
    clock,
    { radiusMiles: config.laneRadiusMiles, graceMinutes: config.onTimeGraceMinutes },
    { keepLaneRows: config.readCache, laneRowsCounters: metrics.cacheCounters('lane') },
  );
  // The requests in flight: the recommendations follow-up gives way to them between its steps.
  const requests = foreground();
  app.addHook('onRequest', (req, reply, done) => {
    // 'close' comes once the answer is sent or the connection is gone, whichever way the request ended.
    reply.raw.once('close', requests.enter());
    done();
  });
  // An API write about to run: authenticated (the key check is an onRequest hook), within its limits, its
  // body read and valid. While such writes arrive an import on SQLite takes short chunks (docs/imports.md);
  // reads, refused requests and the imports API's own calls (an upload's parts) do not count.
  app.addHook('preHandler', (req, _reply, done) => {
    const scope = req.routeOptions.config?.scope;
    if (scope && scope !== 'write:imports' && req.method !== 'GET' && req.method !== 'HEAD') requests.wrote();
    done();
  });
  followUp = recommendationsFeed({
    pipeline,
    lanes,
    radiusMiles: config.laneRadiusMiles,
    gapMs: config.recommendationsFollowUpGapMs,
    log: app.log,
    foreground: requests,
  });
  /** The record services over a write pipeline (the API's; an import's quiet one). */
  const recordServices = (p: WritePipeline) => ({
    customers: customersService({ pipeline: p, clock, deleteGuard: refuseDeleteWhileLoadsUse('customers') }),
    carriers: carriersService({ pipeline: p, clock, deleteGuard: refuseDeleteWhileLoadsUse('carriers') }),
    locations: locationsService({ pipeline: p, clock, deleteGuard: refuseDeleteWhileLoadsUse('locations') }, { lanes }),
    loads: loadsService({ pipeline: p, clock }, { lanes, circuityFactor: config.circuityFactor }),
  });
  const services = { accounts, ...recordServices(pipeline), marketRates: marketRatesService(pipeline, clock) };
  // Imports with `emit_events: summary` (docs/imports.md, "The shape"): the same services over the same
  // pipeline without its outbox (no per-row events, so no webhooks nor recommendation follow-ups); the
  // lane analytics still run once per chunk.
  const quiet = recordServices(writePipeline({ store, afterCommit: analytics.afterCommit, counters: { [LOAD_STATUS_COUNTER]: writeStatusCounts } }));
  const imports = importsModule({
    db: store.db,
    clock,
    dir: config.importsDir,
    pipeline,
    resources: importResources({ all: services, summary: quiet }),
    log: app.log,
    tuning: {
      leaseMs: config.importLeaseMs,
      chunkRows: config.importChunkRows,
      chunkMs: config.importChunkMs,
      liveChunkMs: config.importLiveChunkMs,
      uploadExpiryMs: config.importUploadExpiryMs,
    },
    maxUploadBytes: config.importMaxUploadBytes,
    maxRunning: config.importMaxRunning,
    betweenChunks: () => store.betweenWrites(),
    // One connection (SQLite) is the API's and the import's: the import lets the requests in flight
    // finish first (docs/imports.md). With a pool (PostgreSQL) requests run on connections of their own.
    ...(store.oneConnection ? { foreground: requests } : {}),
  });
  const insights = insightsService(pipeline.reader, { loads: services.loads, lanes });

  const rateLimiter = createRateLimiter({
    enabled: config.rateLimits,
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimitKeyPrefix,
    clock,
    log: app.log,
    ...deps.rateLimit,
  });
  app.addHook('onClose', () => rateLimiter.close());
  registerRateLimitMetrics(metrics.registry, rateLimiter);

  installPlumbing(app, {
    metrics,
    bodyLimitBytes: config.bodyLimitBytes,
    refusedBodies: { maxBytes: config.refusedBodyDrainBytes, maxMs: config.refusedBodyDrainMs },
  });
  // Bodies arrive within REQUEST_TIMEOUT_SECONDS (a route may declare longer), else 408.
  installBodyDeadline(app, { defaultMs: config.requestTimeoutMs });
  const routeTable = installAuth(app, store, accounts, PUBLIC_API_PATHS, rateLimiter);
  // Idempotency-Key on every write route declared below
  // (docs/api.md, "Safe retries: `Idempotency-Key`"): after the key check and the rate limit. A claim's
  // lease outlasts the longest request (a load batch's deadline) by a minute.
  installIdempotency(app, { db: store.db, clock, ttlHours: config.idempotencyTtlHours, leaseMs: config.loadBatchDeadlineMs + 60_000, log: app.log });
  await installOpenApi(app, [
    PaginationSchema,
    BatchResultSchema,
    Customer,
    CustomerPage,
    Contact,
    Address,
    Carrier,
    CarrierPage,
    Location,
    LocationPage,
    Stop,
    FinancialRate,
    TeamMember,
    Evidence,
    CarrierRecommendation,
    Load,
    LoadPage,
    LoadRecommendations,
    TrackingEventAnswer,
    LanePoint,
    MarketRate,
    MarketRatePage,
    FeedEvent,
    EventPage,
    ...WEBHOOK_SCHEMAS,
    ...IMPORT_SCHEMAS,
    AuditEntry,
    AuditEntryPage,
  ]);

  opsRoutes(app, { store, metrics, rateLimiter, metricsToken: config.metricsToken });
  // API usage per key and hour, and failed writes, for the dashboard's integration health (issue 19).
  const usage = usageRecorder({ db: store.db, clock, log: app.log });
  if (config.usageRecording !== false) installUsage(app, usage, (presented) => accounts.authenticate(presented));
  // Unknown body fields and query parameters named in Lanebridge-Ignored-Fields, or 422 when strict
  // (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`").
  installIgnoredFields(app, {
    strictKey: (req) => req.principal?.strict === true,
    refuseBatchItems,
    ...(config.usageRecording !== false
      ? { record: (req, fields) => req.principal && usage.countIgnored(req.principal, `${req.method} ${req.routeOptions.url ?? ''}`, fields) }
      : {}),
  });
  const batchBodyLimit = config.batchBodyLimitBytes;
  // GET answers kept while what they depend on is unchanged (SQLite; READ_CACHE=off disables).
  const cache = readCache({ enabled: config.readCache, counters: metrics.cacheCounters('read') });
  customerRoutes(app, services.customers, { batchBodyLimit, batchDeadlineMs: config.loadBatchDeadlineMs, readCache: cache });
  carrierRoutes(app, services.carriers, { batchBodyLimit, batchDeadlineMs: config.loadBatchDeadlineMs, readCache: cache });
  locationRoutes(app, services.locations, { batchBodyLimit, batchDeadlineMs: config.loadBatchDeadlineMs, readCache: cache });
  loadRoutes(app, services.loads, { batchBodyLimit, batchDeadlineMs: config.loadBatchDeadlineMs, readCache: cache });
  recommendationRoutes(app, recommendationsService({ reader: pipeline.reader, loads: services.loads, lanes }));
  trackingRoutes(app, trackingService(clock, { pipeline, loads: services.loads }));
  marketRateRoutes(app, services.marketRates);
  eventRoutes(app, events, pipeline.reader);
  webhookRoutes(app, webhooks.service);
  importRoutes(app, imports.service, config.importPartTimeoutMs);
  const audit = auditService(store.db);
  auditRoutes(app, audit);
  // Retention runs by itself, in small transactions, off the request path.
  const retention = eventRetention({
    events,
    db: store.db,
    log: app.log,
    sweep: deps.recommendationFollowUp === 'manual' ? undefined : () => followUp!.sweep(),
  });
  app.addHook('onClose', async () => {
    retention.stop();
    await followUp!.idle();
  });
  // The web dashboard for organization users (src/dashboard): its own encapsulated context.
  const dashboardWriteRoutes: DashboardWriteRoute[] = [];
  await app.register(
    dashboardPlugin({
      writeRoutes: dashboardWriteRoutes,
      services: {
        ...services,
        insights,
        lanes,
        usage,
        audit,
        events: { recent: (orgId, q) => events.newestFirst(pipeline.reader, orgId, q), retentionDays: config.eventRetentionDays },
        imports: imports.service,
      },
      webhooks: webhooks.service,
      store,
      clock,
      options: { cookieSecure: config.dashboardCookieSecure, cookieSecret: config.dashboardCookieSecret, ...deps.dashboard },
    }),
  );

  // Geocoder data is loaded at boot, not on the first location request.
  if (deps.warmGeocoder !== false) warmupGeocoder();

  // Deliveries stop before the database closes; attempts in flight are left to their claims' expiry.
  app.addHook('onClose', () => webhooks.worker.stop());
  // An import in flight stops after its chunk and is given back (any instance resumes it).
  app.addHook('onClose', () => imports.runner.stop());
  await app.ready();
  // Redis is connected now that the synchronous boot work (geocoder data, route schemas) is done;
  // requests that arrived before it answers would be counted in process, so wait a moment for it
  // (never fails: see createRateLimiter).
  await rateLimiter.ready(1000);
  const webhookDelivery = deps.webhookDelivery ?? (deps.recommendationFollowUp === 'manual' ? 'manual' : 'background');
  if (config.webhookWorker && webhookDelivery === 'background') webhooks.worker.start();
  if (deps.recommendationFollowUp !== 'manual') usage.start();
  if (config.importWorker && (deps.importRunner ?? webhookDelivery) === 'background') imports.runner.start();
  return {
    app,
    routeTable,
    dashboardWriteRoutes,
    metrics,
    rateLimiter,
    services,
    analytics,
    pipeline,
    events,
    recommendations: followUp,
    webhooks,
    imports,
    usage,
  };
}
