import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useApp, json } from '../../helpers.js';

const REDOCLY_CONFIG = `extends:
  - recommended-strict
rules:
  no-invalid-schema-examples: error
  no-invalid-parameter-examples: error
  no-required-schema-properties-undefined: error
  no-schema-type-mismatch: error
  component-name-unique: error
  tag-description: error
  operation-summary: error
  operation-4xx-response: error
  response-contains-header:
    severity: error
    names:
      '/.+/':
        - X-Request-Id
  response-mime-type:
    severity: error
    allowedValues:
      - application/json
      # D15: an import's error file is NDJSON (one refused row per line).
      - application/x-ndjson
`;

const t = useApp();

describe('OpenAPI document', () => {
  it('is served without a key and documents every API route with its errors and security', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = json(res);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.ApiKey).toEqual({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    for (const route of t.routeTable) {
      const path = route.url.replace(/:([a-z_]+)/g, '{$1}');
      const op = doc.paths[path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${path}`).toBeDefined();
      expect(op.security).toEqual([{ ApiKey: [] }]);
      expect(op.operationId).toBeTruthy();
      for (const status of ['401', '403', '422', '429', '500', '503']) expect(op.responses[status], `${route.method} ${path} ${status}`).toBeDefined();
      if (route.method === 'POST' || route.method === 'PUT') {
        for (const status of ['400', '409', '413', '415']) expect(op.responses[status], `${route.method} ${path} ${status}`).toBeDefined();
      }
      // D13: every write takes Idempotency-Key, and its replayable answers declare Idempotent-Replayed.
      const keyParam = (op.parameters ?? []).some((p: any) => p.$ref === '#/components/parameters/IdempotencyKey');
      expect(keyParam, `${route.method} ${path} Idempotency-Key`).toBe(route.method !== 'GET');
      if (route.method !== 'GET') {
        const success = Object.keys(op.responses).find((s) => s.startsWith('2'))!;
        for (const status of [success, '404', '409', '422'].filter((s) => op.responses[s])) {
          expect(op.responses[status].headers?.['Idempotent-Replayed'], `${route.method} ${path} ${status}`).toEqual({
            $ref: '#/components/headers/IdempotentReplayed',
          });
        }
        expect(op.responses['409'].description).toContain('Idempotency-Key');
        expect(op.responses['422'].description).toContain('idempotency_key_reused');
        for (const status of ['401', '403', '429', '500', '503']) expect(op.responses[status].headers?.['Idempotent-Replayed'], status).toBeUndefined();
      }
    }
    expect(doc.components.schemas.ValidationErrorBody).toBeDefined();
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
    // Case-insensitive enums are published as the canonical enum or a pattern matching every spelling.
    expect(JSON.stringify(doc)).not.toContain('x-enum-ci');
    expect(JSON.stringify(doc)).not.toContain('x-canonical-timestamp');
    const sort = doc.paths['/v2/tms-api/customers'].get.parameters.find((p: any) => p.name === 'sort');
    expect(sort.schema.anyOf[0].enum).toEqual(['name', '-name', 'created_at', '-created_at', 'updated_at', '-updated_at']);
    const sortPattern = new RegExp(sort.schema.anyOf[1].pattern, 'u');
    for (const ok of ['name', 'NAME', '-Created_At', '-updated_AT']) expect(sortPattern.test(ok), ok).toBe(true);
    for (const bad of ['phone', 'name ', '--name', 'namex']) expect(sortPattern.test(bad), bad).toBe(false);
    // Defaulted list parameters may be omitted, and the document says so.
    const loadParams = doc.paths['/v2/tms-api/loads'].get.parameters as { name: string; required?: boolean; schema: { default?: unknown } }[];
    for (const name of ['page', 'page_size', 'sort']) {
      const p = loadParams.find((x) => x.name === name)!;
      expect(p.schema.default, name).toBeDefined();
      expect(p.required ?? false, name).toBe(false);
    }
    // Path parameters stay required.
    const ref = doc.paths['/v2/tms-api/loads/{external_reference_id}'].get.parameters.find((x: { in: string }) => x.in === 'path');
    expect(ref.required).toBe(true);
  });

  it('is exact: nullable enums list null, input conventions are spelled out, batch items and errors have schemas, headers and descriptions are declared', async () => {
    const doc = json(await t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }));
    const descriptions: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
      if (!node || typeof node !== 'object') return;
      const o = node as Record<string, any>;
      if (Array.isArray(o.type) && o.type.includes('null') && Array.isArray(o.enum)) expect(o.enum, `${at}: a nullable enum lists null`).toContain(null);
      if (typeof o.description === 'string') descriptions.push(o.description);
      for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`);
    };
    walk(doc, '#');
    expect(doc.components.schemas.Load.properties.weight_uom.enum).toEqual(['lbs', 'kg', null]);
    expect(doc.components.schemas.Load.properties.max_buy_rate_source.enum).toEqual(['caller', 'market', null]);
    // Descriptions stand on their own: no repository paths, no decision numbers, no placeholder.
    expect(doc.info.description).toContain('X-API-Key');
    for (const d of descriptions) {
      expect(d, d).not.toMatch(/docs\/|src\/|\.md\b|\bD\d+a?\b|DECISIONS/);
      expect(d).not.toBe('Default Response');
    }
    // A stop type is accepted in any case, as the server does; a timestamp without an offset too.
    const stopType = doc.components.schemas.LoadCreate.properties.stops.items.properties.stop_type;
    expect(stopType.anyOf[0].enum).toEqual(['Pickup', 'Delivery', 'Both']);
    for (const spelling of ['PICKUP', 'pickup', 'Delivery', 'bOtH']) expect(new RegExp(stopType.anyOf[1].pattern, 'u').test(spelling), spelling).toBe(true);
    const early = doc.components.schemas.LoadCreate.properties.stops.items.properties.early_arrival;
    expect(early.format).toBeUndefined();
    for (const ts of ['2025-01-31T14:00:00', '2025-01-31T14:00:00Z', '2025-01-31T14:00:00.123+02:00', '2025-01-31'])
      expect(new RegExp(early.pattern, 'u').test(ts), ts).toBe(true);
    expect(doc.components.schemas.Load.properties.weight_uom.type).toEqual(['string', 'null']);
    const weightUomInput = doc.components.schemas.LoadCreate.properties.weight_uom;
    expect(weightUomInput.anyOf).toContainEqual({ type: 'null' });
    // Batch items carry their data schemas, per operation; failed results their detail's.
    for (const [kind, ops] of [
      ['customers', ['create', 'update|upsert']],
      ['loads', ['create', 'update|upsert', 'delete']],
    ] as const) {
      const Noun = kind === 'customers' ? 'Customer' : 'Load';
      const item = doc.paths[`/v2/tms-api/batch/${kind}`].post.requestBody.content['application/json'].schema.properties.items.items;
      expect(item.anyOf, kind).toHaveLength(ops.length);
      const dataKey = kind === 'customers' ? 'customer' : 'load';
      expect(item.anyOf[0].properties[dataKey].$ref).toBe(`#/components/schemas/${Noun}Create`);
      expect(item.anyOf[1].properties[dataKey].$ref).toBe(`#/components/schemas/${Noun}Update`);
    }
    const error = doc.components.schemas.BatchResult.properties.results.items.properties.error;
    expect(error.properties.detail.anyOf).toEqual([
      { type: 'string' },
      { type: 'array', maxItems: 100, items: { $ref: '#/components/schemas/ValidationIssue' } },
    ]);
    expect(error.properties.truncated).toMatchObject({ type: 'boolean', enum: [true] });
    expect(doc.components.schemas.ValidationErrorBody.properties.truncated).toMatchObject({ type: 'boolean', enum: [true] });
    // Every response of every operation: a real description and its headers.
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(operations)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const where = `${method.toUpperCase()} ${path} ${status}`;
          expect(response.description, where).toMatch(/\w{3,}/);
          expect(response.headers?.['X-Request-Id'], where).toEqual({ $ref: '#/components/headers/RequestId' });
          if (status !== '401')
            expect(Object.keys(response.headers), where).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']));
          if (status === '429' || status === '503') expect(response.headers['Retry-After'], where).toEqual({ $ref: '#/components/headers/RetryAfter' });
        }
      }
    }
    expect(doc.paths['/v2/tms-api/events'].get.responses['410'].headers['X-Events-Kept-After']).toBeDefined();
  });

  it('passes the Redocly linter with no errors and no warnings', () => {
    return t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }).then((res) => {
      const dir = mkdtempSync(join(tmpdir(), 'lanebridge-openapi-'));
      const file = join(dir, 'openapi.json');
      writeFileSync(file, res.body);
      try {
        // Stricter than Redocly's recommended rules: every warning is an error, examples must match their
        // schemas, and every response must declare X-Request-Id and be JSON.
        const config = join(dir, 'redocly.yaml');
        writeFileSync(config, REDOCLY_CONFIG);
        const out = execFileSync(join(process.cwd(), 'node_modules/.bin/redocly'), ['lint', file, `--config=${config}`, '--format=json'], {
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const report = JSON.parse(out.slice(out.indexOf('{')));
        expect(report.problems.map((p: any) => `${p.ruleId}: ${p.message}`)).toEqual([]);
        expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }, 60_000);

  it('serves the docs page offline at /docs, titled and branded Lanebridge', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-ui');
    expect(page.body).toContain('<title>Lanebridge API reference</title>');
    expect(page.body).not.toContain('<title>Swagger UI</title>');
    expect(page.body).not.toContain('favicon-32x32.png');
    // The page names no host but itself: scripts, styles, fonts and images from 'self' (the logo inline).
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).not.toMatch(/https:|validator\.swagger\.io|\*/);
    const initializer = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(initializer.body).toContain('data:image/svg+xml;base64,');
    // (A comment in it quotes a web page; no string in it names an outside address.)
    expect(initializer.body).not.toMatch(/['"`]https?:\/\/(?!localhost)/);
    const css = await t.app.inject({ method: 'GET', url: '/docs/static/theme/lanebridge.css' });
    expect(css.statusCode).toBe(200);
    expect(css.body).toContain('.topbar');
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)[a-z0-9.-]+\.(com|net|org|io)\/[^"']*\.(js|css)/);
    const asset = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
  });
});
