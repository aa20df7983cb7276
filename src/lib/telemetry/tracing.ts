import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';

/** The instrumentation scope every Lanebridge span is made under. */
export const TRACER_NAME = 'lanebridge';

/** The organization a span's work was done for (requests, webhook attempts, import chunks). */
export const ORGANIZATION_ATTRIBUTE = 'lanebridge.organization.id';

export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: tracing is off (nothing loaded, nothing installed) when unset. */
  endpoint: string | undefined;
  /** OTEL_SERVICE_NAME (default `lanebridge`). */
  serviceName: string;
  serviceVersion?: string;
  /** Spans buffered before export (tests shorten the delay). */
  scheduledDelayMs?: number;
}

export interface Tracing {
  /** Sends the spans ended so far (tests; before shutdown). */
  flush(): Promise<void>;
  /** Sends what is left and unregisters the global provider, context manager and propagator. */
  shutdown(): Promise<void>;
}

/** The tracer of the whole service: OpenTelemetry's no-op tracer until startTracing registered a provider. */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/**
 * Starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set: spans go by OTLP/HTTP (JSON) to
 * `<endpoint>/v1/traces`, batched; the W3C `traceparent` of a request is honoured. The SDK is only
 * loaded here, so a process without the variable neither loads nor runs any of it. Sampling follows
 * OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, headers OTEL_EXPORTER_OTLP_HEADERS (the SDK reads them).
 */
export async function startTracing(settings: TracingSettings): Promise<Tracing | null> {
  if (!settings.endpoint) return null;
  const [
    { BasicTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new OTLPTraceExporter({ url: `${settings.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': settings.serviceName,
      ...(settings.serviceVersion ? { 'service.version': settings.serviceVersion } : {}),
    }),
    spanProcessors: [new BatchSpanProcessor(exporter, settings.scheduledDelayMs !== undefined ? { scheduledDelayMillis: settings.scheduledDelayMs } : {})],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  let stopped = false;
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      if (stopped) return;
      stopped = true;
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/**
 * Runs `fn` in a span of its own: a child of the span active here, or the root of a new trace with
 * `root: true` (work of its own, such as a webhook attempt or an import chunk, that a request only
 * woke). The span ends when `fn` settles; a throw is recorded on it and rethrown. Without tracing
 * this costs a no-op span. An import chunk, for example:
 *
 *   inSpan('import chunk', { [ORGANIZATION_ATTRIBUTE]: orgId, 'lanebridge.import.id': importId,
 *     'lanebridge.import.chunk': n }, async (span) => { …; span.setAttribute('lanebridge.import.rows', rows) }, { root: true })
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, opts: { root?: boolean; kind?: SpanKind } = {}): Promise<T> {
  return tracer().startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes, root: opts.root ?? false }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` outside any span: background work a request only starts (the webhook worker's wake-up, the
 * recommendations follow-up) is not its child, and its statements are not traced as the request's.
 */
export function detached<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** Marks a span failed by `err` (an exception event and an error status). */
export function failed(span: Span, err: unknown): void {
  if (err instanceof Error) span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** Whether there is a span here to be a parent (statements and Redis commands outside any make none). */
export function hasActiveSpan(): boolean {
  return trace.getSpan(context.active())?.isRecording() ?? false;
}
