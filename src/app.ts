import type { FastifyInstance } from 'fastify';
import { systemClock } from './lib/clock.js';
import { readCache } from './lib/http/read-cache.js';
import type { ApiRouteEntry } from './lib/http/auth.js';
import { createMetrics, type Metrics } from './lib/http/metrics.js';
import { refuseBatchItems } from './lib/http/plumbing.js';
import { installIgnoredFields } from './lib/http/ignored-fields.js';
import type { RateLimiter } from './lib/http/rate-limit.js';
import { accountsService, type AccountsService } from './modules/accounts/accounts.service.js';
import { carrierRoutes } from './modules/carriers/carriers.routes.js';
import { carriersService, type CarriersService } from './modules/carriers/carriers.service.js';
import { customerRoutes } from './modules/customers/customers.routes.js';
import { customersService, type CustomersService } from './modules/customers/customers.service.js';
import { locationRoutes } from './modules/locations/locations.routes.js';
import { locationsService, type LocationsService } from './modules/locations/locations.service.js';
import { opsRoutes } from './modules/ops/ops.routes.js';
import { usageRecorder, type UsageRecorder } from './modules/ops/usage.service.js';
import { installUsage } from './modules/ops/usage.hooks.js';
import { laneAnalytics } from './modules/lanes/analytics.js';
import { lanesService } from './modules/lanes/lanes.service.js';
import { writePipeline, type AfterCommit, type WritePipeline } from './modules/shared/write-pipeline.js';
import { recommendationsFeed, type RecommendationsFeed } from './modules/lanes/recommendations.feed.js';
import { LOAD_STATUS_COUNTER, writeStatusCounts } from './modules/loads/loads.repo.js';
import { marketRateRoutes } from './modules/rates/rates.routes.js';
import { marketRatesService, type MarketRatesService } from './modules/rates/rates.service.js';
import { loadRoutes } from './modules/loads/loads.routes.js';
import { trackingRoutes } from './modules/tracking/tracking.routes.js';
import { trackingService } from './modules/tracking/tracking.service.js';
import { recommendationsService } from './modules/recommendations/recommendations.service.js';
import { recommendationRoutes } from './modules/recommendations/recommendations.routes.js';
import { loadsService, type LoadsService } from './modules/loads/loads.service.js';
import { loadJson } from './modules/loads/loads.present.js';
import { refuseDeleteWhileLoadsUse } from './modules/loads/references.js';
import { insightsService } from './modules/insights/insights.service.js';
import { eventRoutes } from './modules/events/events.routes.js';
import { eventRetention } from './modules/events/retention.js';
import { eventsService, type EventsService } from './modules/events/events.service.js';
import { warmup as warmupGeocoder } from './geo/index.js';
import { dashboardPlugin, type DashboardWriteRoute } from './dashboard/plugin.js';
import { webhooksModule, type Webhooks } from './modules/webhooks/webhooks.js';
import { webhookRoutes } from './modules/webhooks/webhooks.routes.js';
import { importResources, importsModule, type Imports } from './modules/imports/imports.js';
import { importRoutes } from './modules/imports/imports.routes.js';
import { auditService } from './modules/audit/audit.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { detached } from './lib/telemetry/tracing.js';
import type { AppContext, AppDeps } from './app/context.js';
import { createFastify, installHttp, trackRequests } from './app/http.js';
import { startWorkers, stopWorkersOnClose } from './app/workers.js';

export type { AppContext, AppDeps } from './app/context.js';

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

/**
 * The composition root: the Fastify instance (src/app/http.ts), the write path, the services, the HTTP
 * plumbing, the API's routes, the dashboard, then the workers (src/app/workers.ts), in that order (hooks
 * run in the order they are added).
 */
export async function buildApp(deps: AppDeps): Promise<Lanebridge> {
  const app = createFastify(deps);
  const ctx: AppContext = { app, deps, config: deps.config, store: deps.store, clock: deps.clock ?? systemClock, metrics: createMetrics() };
  const core = writePath(ctx);
  const { services, imports, insights } = buildServices(ctx, core);
  const { rateLimiter, routeTable } = await installHttp(ctx, core.accounts);
  const { usage, audit } = installApiRoutes(ctx, core, { services, imports, rateLimiter });
  const dashboardWriteRoutes = await installDashboard(ctx, core, { services, imports, insights, usage, audit });

  // Geocoder data is loaded at boot, not on the first location request.
  if (deps.warmGeocoder !== false) warmupGeocoder();

  stopWorkersOnClose(app, core.webhooks, imports);
  await startWorkers(app, deps, { rateLimiter, webhooks: core.webhooks, usage, imports });
  return {
    app,
    routeTable,
    dashboardWriteRoutes,
    metrics: ctx.metrics,
    rateLimiter,
    services,
    analytics: core.analytics,
    pipeline: core.pipeline,
    events: core.events,
    recommendations: core.followUp,
    webhooks: core.webhooks,
    imports,
    usage,
  };
}

type WritePath = ReturnType<typeof writePath>;
type Services = ReturnType<typeof buildServices>;

/** The write path: accounts, the lane analytics, the change feed, webhooks, the pipeline and what follows its commits. */
function writePath(ctx: AppContext) {
  const { app, deps, config, store, clock, metrics } = ctx;
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
  const requests = trackRequests(app);
  followUp = recommendationsFeed({
    pipeline,
    lanes,
    radiusMiles: config.laneRadiusMiles,
    gapMs: config.recommendationsFollowUpGapMs,
    log: app.log,
    foreground: requests,
  });
  return { accounts, analytics, events, webhooks, pipeline, lanes, requests, followUp };
}

/** The record services over the API's pipeline and over an import's quiet one, the imports and the dashboard's insights. */
function buildServices(ctx: AppContext, { accounts, analytics, pipeline, lanes, requests }: WritePath) {
  const { app, config, store, clock } = ctx;
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
  return { services, imports, insights };
}

/** The API's routes: probes and metrics, usage, ignored fields, then each module's routes; the change feed's retention. */
function installApiRoutes(
  ctx: AppContext,
  { accounts, events, webhooks, pipeline, lanes, followUp }: WritePath,
  { services, imports, rateLimiter }: Pick<Services, 'services' | 'imports'> & { rateLimiter: RateLimiter },
) {
  const { app, deps, config, store, clock, metrics } = ctx;
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
    sweep: deps.recommendationFollowUp === 'manual' ? undefined : () => followUp.sweep(),
  });
  app.addHook('onClose', async () => {
    retention.stop();
    await followUp.idle();
  });
  return { usage, audit };
}

/** The web dashboard for organization users (src/dashboard): its own encapsulated context. */
async function installDashboard(
  ctx: AppContext,
  { events, webhooks, pipeline, lanes }: WritePath,
  { services, imports, insights, usage, audit }: Services & { usage: UsageRecorder; audit: ReturnType<typeof auditService> },
) {
  const { app, deps, config, store, clock } = ctx;
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
  return dashboardWriteRoutes;
}
