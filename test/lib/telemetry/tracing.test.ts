// OpenTelemetry (issue 29): off unless OTEL_EXPORTER_OTLP_ENDPOINT is set; when set, a real `serve`
// sends request, statement, Redis and webhook-attempt spans by OTLP/HTTP with their parent links.
import http from 'node:http';
import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { describeStatement } from '../../../src/lib/db/tracing.js';
import { startTracing } from '../../../src/lib/telemetry/tracing.js';
import { letTimePass, waitFor, isPostgres, newTenant, startApp, uid } from '../../helpers.js';
import { createTenantInDb, httpRequest, parse, startReadyServer, serverCleanups } from '../../reliability/support.js';
import { startReceiver } from '../../modules/webhooks/support.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
}

/** A test OTLP/HTTP (JSON) receiver: every span posted to /v1/traces, attributes flattened. */
async function startCollector() {
  const posts: { path: string; contentType: string | undefined }[] = [];
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', contentType: req.headers['content-type'] });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) {
            const attributes: Record<string, unknown> = {};
            for (const a of s.attributes ?? [])
              attributes[a.key] = a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue);
            const service = (rs.resource?.attributes ?? []).find((a: any) => a.key === 'service.name')?.value.stringValue;
            spans.push({ ...s, parentSpanId: s.parentSpanId || undefined, attributes: { ...attributes, 'service.name': service } });
          }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    spans,
    async waitFor(test: (spans: OtlpSpan[]) => boolean, timeoutMs = 15_000) {
      await waitFor(() => test(spans), { timeout: timeoutMs, interval: 50 }).catch(() => {
        throw new Error(`spans not received in time; got: ${spans.map((s) => s.name).join(', ')}`);
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const cleanups = serverCleanups();

const SERVER = 2;
const CLIENT = 3;

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  it(
    'a request span with route, status and organization, its statements and Redis commands as children, a webhook attempt with its statements, the trace id in the logs',
    { timeout: 120_000 },
    async () => {
      const collector = await startCollector();
      cleanups.push(() => collector.close());
      const rx = await startReceiver();
      cleanups.push(() => rx.close());
      const databaseUrl = await cleanups.database('tracing_on');
      const { orgId, key } = await createTenantInDb(databaseUrl, 'Traced');
      const server = await startReadyServer({
        databaseUrl,
        logLevel: 'info',
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`,
          OTEL_BSP_SCHEDULE_DELAY: '100',
          WEBHOOK_ALLOW_INSECURE: 'on',
          REDIS_URL: 'redis://127.0.0.1:6379',
          LANEBRIDGE_INTERNAL: JSON.stringify({
            otelServiceName: 'lanebridge-test',
            rateLimits: true,
            rateLimitKeyPrefix: `lanebridge:test:tracing:${uid()}:`,
          }),
        },
      });
      const headers = { 'x-api-key': key };
      const endpoint = await httpRequest(server.port, { method: 'POST', path: '/v2/tms-api/webhook-endpoints', headers, body: { url: rx.url } });
      expect(endpoint.status, endpoint.text).toBe(201);

      // The caller's own trace: the request's span is a child of the span its traceparent names.
      const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const callerSpan = '00f067aa0ba902b7';
      const ref = uid('C');
      const created = await httpRequest(server.port, {
        method: 'POST',
        path: '/v2/tms-api/customers',
        headers: { ...headers, traceparent: `00-${callerTrace}-${callerSpan}-01` },
        body: { external_reference_id: ref, name: 'Traced Freight' },
      });
      expect(created.status, created.text).toBe(201);
      const customerId = parse(created).id as string;
      const requestId = created.headers['x-request-id'] as string;
      await rx.waitFor(1);
      expect(JSON.parse(rx.received[0]!.body)).toMatchObject({ type: 'customer.created', data: { id: customerId } });

      const isRequest = (s: OtlpSpan) =>
        s.kind === SERVER && s.attributes['http.route'] === '/v2/tms-api/customers' && s.attributes['http.request.method'] === 'POST';
      const isAttempt = (s: OtlpSpan) => s.name === 'webhook attempt' && s.attributes['lanebridge.event.type'] === 'customer.created';
      await collector.waitFor((spans) => {
        const request = spans.find(isRequest);
        const attempt = spans.find(isAttempt);
        return (
          !!request &&
          !!attempt &&
          spans.some((s) => s.parentSpanId === attempt.spanId) &&
          spans.some((s) => s.parentSpanId === request.spanId && s.attributes['db.system.name'] === 'redis')
        );
      });
      expect(collector.posts.every((p) => p.path === '/v1/traces' && p.contentType === 'application/json')).toBe(true);

      const request = collector.spans.find(isRequest)!;
      expect(request).toMatchObject({
        name: 'POST /v2/tms-api/customers',
        traceId: callerTrace,
        parentSpanId: callerSpan,
        attributes: {
          'http.route': '/v2/tms-api/customers',
          'http.response.status_code': 201,
          'lanebridge.organization.id': orgId,
          'lanebridge.request_id': requestId,
          'service.name': 'lanebridge-test',
        },
      });
      // Its statements, on this engine, with the statement's text (placeholders, never the values).
      const system = isPostgres() ? 'postgresql' : 'sqlite';
      const statements = collector.spans.filter((s) => s.parentSpanId === request.spanId && s.attributes['db.system.name'] === system);
      const insert = statements.find((s) => s.name === 'INSERT customers');
      expect(insert, statements.map((s) => s.name).join(', ')).toBeDefined();
      expect(insert).toMatchObject({ kind: CLIENT, traceId: callerTrace, attributes: { 'db.operation.name': 'INSERT', 'db.collection.name': 'customers' } });
      expect(String(insert!.attributes['db.query.text'])).toMatch(/^insert into "customers"/);
      expect(statements.map((s) => JSON.stringify(s.attributes))).not.toContainEqual(expect.stringContaining('Traced Freight'));
      // The webhook worker the commit woke works outside the request's trace.
      expect(collector.spans.filter((s) => s.traceId === callerTrace && s.attributes['db.collection.name'] === 'webhook_deliveries')).toEqual([]);
      // The rate limiter's Redis command.
      const redis = collector.spans.find((s) => s.parentSpanId === request.spanId && s.attributes['db.system.name'] === 'redis')!;
      expect(redis).toMatchObject({ kind: CLIENT, traceId: callerTrace, attributes: { 'server.address': '127.0.0.1', 'server.port': 6379 } });

      // The webhook attempt: a trace of its own, its outcome, its statements as children.
      const attempt = collector.spans.find(isAttempt)!;
      expect(attempt.parentSpanId).toBeUndefined();
      expect(attempt.traceId).not.toBe(callerTrace);
      expect(attempt.attributes).toMatchObject({
        'lanebridge.organization.id': orgId,
        'lanebridge.webhook.endpoint_id': parse(endpoint).id,
        'lanebridge.webhook.attempt': 1,
        'lanebridge.webhook.outcome': 'delivered',
        'http.response.status_code': 200,
        'server.address': '127.0.0.1',
        'server.port': rx.port,
      });
      const recorded = collector.spans.filter((s) => s.parentSpanId === attempt.spanId);
      // The outcome written to the delivery (an UPDATE on SQLite, a WITH … UPDATE on PostgreSQL).
      expect(
        recorded.some((s) => s.attributes['db.collection.name'] === 'webhook_deliveries' && s.kind === CLIENT && s.traceId === attempt.traceId),
        recorded.map((s) => s.name).join(', '),
      ).toBe(true);

      // A request without a traceparent starts a trace; a GET is traced with its status.
      const read = await httpRequest(server.port, { path: `/v2/tms-api/customers/${ref}`, headers });
      expect(read.status).toBe(200);
      const missing = await httpRequest(server.port, { path: '/v2/tms-api/customers/NO-SUCH', headers });
      expect(missing.status).toBe(404);
      await collector.waitFor((spans) => spans.some((s) => s.attributes['lanebridge.request_id'] === missing.headers['x-request-id']));
      const readSpan = collector.spans.find((s) => s.attributes['lanebridge.request_id'] === read.headers['x-request-id'])!;
      expect(readSpan).toMatchObject({
        name: 'GET /v2/tms-api/customers/:external_reference_id',
        kind: SERVER,
        attributes: { 'http.response.status_code': 200, 'lanebridge.organization.id': orgId },
      });
      expect(readSpan.parentSpanId).toBeUndefined();
      expect(readSpan.traceId).not.toBe(callerTrace);
      expect(
        collector.spans.find((s) => s.attributes['lanebridge.request_id'] === missing.headers['x-request-id'])!.attributes['http.response.status_code'],
      ).toBe(404);

      // Every log line of a request carries its trace id beside its request id.
      const lines = server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .filter((l) => l.reqId === requestId);
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
      expect(lines.every((l) => l.trace_id === callerTrace)).toBe(true);
    },
  );
});

describe('tracing off (OTEL_EXPORTER_OTLP_ENDPOINT unset)', () => {
  it('a server with requests and a webhook delivery sends nothing, even with the traces-only endpoint variable set', { timeout: 120_000 }, async () => {
    const collector = await startCollector();
    cleanups.push(() => collector.close());
    const rx = await startReceiver();
    cleanups.push(() => rx.close());
    const databaseUrl = await cleanups.database('tracing_off');
    const { key } = await createTenantInDb(databaseUrl, 'Untraced');
    const server = await startReadyServer({
      databaseUrl,
      logLevel: 'info',
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`, OTEL_BSP_SCHEDULE_DELAY: '100', WEBHOOK_ALLOW_INSECURE: 'on' },
    });
    const headers = { 'x-api-key': key, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
    expect((await httpRequest(server.port, { method: 'POST', path: '/v2/tms-api/webhook-endpoints', headers, body: { url: rx.url } })).status).toBe(201);
    const created = await httpRequest(server.port, {
      method: 'POST',
      path: '/v2/tms-api/customers',
      headers,
      body: { external_reference_id: uid('C'), name: 'Untraced' },
    });
    expect(created.status).toBe(201);
    await rx.waitFor(1);
    await letTimePass(1000);
    expect(collector.posts).toEqual([]);
    // Nor is there a trace id in its logs.
    const line = server
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.reqId === created.headers['x-request-id']);
    expect(line).toBeDefined();
    expect(line).not.toHaveProperty('trace_id');
  });

  it('startTracing without an endpoint starts nothing', async () => {
    expect(await startTracing({ endpoint: undefined, serviceName: 'lanebridge' })).toBeNull();
    expect(await startTracing({ endpoint: '', serviceName: 'lanebridge' })).toBeNull();
  });
});

describe('an API key in a URL (issue 45)', () => {
  it('is masked in request spans and log lines: lbk_ kept, the rest redacted', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const app = await startApp({ logLevel: 'trace' }, { tracing: true, logger: { level: 'trace', stream } });
    try {
      const a = await newTenant(app);
      const leaked = a.key;
      // Pasted as a path (an unknown route), as a record reference, in a tracking path, and in the query string.
      const secret = leaked.slice(4);
      // Percent-encoded letters are the same URL: `lbk%5F…`, and the key's first character written as %XX.
      const escaped = `%${secret.charCodeAt(0).toString(16).toUpperCase()}${secret.slice(1)}`;
      const paths = [
        `/v2/tms-api/${leaked}`,
        `/v2/tms-api/loads/${leaked}`,
        `/v2/tms-api/loads/${leaked}/tracking-events`,
        `/v2/tms-api/customers?api_key=${leaked}`,
        `/v2/tms-api/loads/lbk%5F${secret}`,
        `/v2/tms-api/loads/lbk_${escaped}`,
      ];
      const statuses = [];
      for (const url of paths)
        statuses.push(
          (await a.request({ method: url.includes('tracking') ? 'POST' : 'GET', url, ...(url.includes('tracking') ? { payload: {} } : {}) })).statusCode,
        );
      expect(statuses).toEqual([404, 404, 422, 200, 404, 404]);
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans().filter((s) => s.kind === 1);
      expect(spans.map((s) => s.attributes['url.path'])).toEqual([
        '/v2/tms-api/lbk_[redacted]',
        '/v2/tms-api/loads/lbk_[redacted]',
        '/v2/tms-api/loads/lbk_[redacted]/tracking-events',
        '/v2/tms-api/customers',
        '/v2/tms-api/loads/lbk_[redacted]',
        '/v2/tms-api/loads/lbk_[redacted]',
      ]);
      const exported = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })));
      expect(exported).not.toContain(secret.slice(1));
      expect(lines.join('')).not.toContain(secret.slice(1));
      expect(lines.join('')).toContain('"url":"/v2/tms-api/lbk_[redacted]"');
    } finally {
      await app.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
    }
  });
});

describe('statement span names', () => {
  it('the first keyword and the first table named', () => {
    expect(describeStatement('select "id" from "loads" where "org_id" = ?')).toEqual({ operation: 'SELECT', collection: 'loads' });
    expect(describeStatement('insert into "customers" ("id") values ($1)')).toEqual({ operation: 'INSERT', collection: 'customers' });
    expect(describeStatement('update "webhook_deliveries" set "status" = $1 from x')).toEqual({ operation: 'UPDATE', collection: 'webhook_deliveries' });
    expect(describeStatement('with gone as (delete from lane_history where 1) select 1')).toEqual({ operation: 'WITH', collection: 'lane_history' });
    expect(describeStatement('begin')).toEqual({ operation: 'BEGIN', collection: null });
  });
});
