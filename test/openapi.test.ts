import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startApp, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(async () => t.close());

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
          expect(op.responses[status].headers?.['Idempotent-Replayed'], `${route.method} ${path} ${status}`).toEqual({ $ref: '#/components/headers/IdempotentReplayed' });
        }
        expect(op.responses['409'].description).toContain('Idempotency-Key');
        expect(op.responses['422'].description).toContain('idempotency_key_reused');
        for (const status of ['401', '403', '429', '500', '503']) expect(op.responses[status].headers?.['Idempotent-Replayed'], status).toBeUndefined();
      }
    }
    expect(doc.components.schemas.ValidationErrorBody).toBeDefined();
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 } });
    // Case-insensitive enums are published as plain enums.
    expect(JSON.stringify(doc)).not.toContain('x-enum-ci');
    const sort = doc.paths['/v2/tms-api/customers'].get.parameters.find((p: any) => p.name === 'sort');
    expect(sort.schema.enum).toEqual(['name', '-name', 'created_at', '-created_at', 'updated_at', '-updated_at']);
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

  it('passes the Redocly linter with no errors and no warnings', () => {
    return t.app.inject({ method: 'GET', url: '/v2/tms-api/openapi.json' }).then((res) => {
      const dir = mkdtempSync(join(tmpdir(), 'lanebridge-openapi-'));
      const file = join(dir, 'openapi.json');
      writeFileSync(file, res.body);
      try {
        const out = execFileSync(join(process.cwd(), 'node_modules/.bin/redocly'), ['lint', file, '--format=json'], {
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

  it('serves the docs page offline at /docs', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('swagger-ui');
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)[a-z0-9.-]+\.(com|net|org|io)\/[^"']*\.(js|css)/);
    const asset = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
  });
});
