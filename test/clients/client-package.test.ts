import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApp, newTenant } from '../helpers.js';

// The typed client used from another project as docs/client.md says: `npm pack` in clients/typescript
// (which builds dist/ with tsc), the tarball laid out as an install does, then a plain JavaScript consumer and a
// TypeScript one checked by tsc.
const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const CLIENT = resolve('clients/typescript');
const TSC = resolve('node_modules/typescript/bin/tsc');

let baseUrl: string;
let project: string;
const t = useApp();
beforeAll(async () => {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  project = mkdtempSync(join(tmpdir(), 'lanebridge-client-consumer-'));
  // Packed from a copy (its dist/ built there), so runs of both test projects never build in one folder.
  const source = join(project, 'client-source');
  cpSync(CLIENT, source, { recursive: true, filter: (from) => !/[\\/](dist|node_modules)$/.test(from) });
  symlinkSync(resolve('node_modules'), join(source, 'node_modules'), 'dir');
  const packed = await run(npm, ['pack', '--pack-destination', project, '--silent'], { cwd: source, timeout: 120_000 });
  const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'));
  expect(tarball, packed.stdout + packed.stderr).toBeDefined();
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
  // Installed as npm lays a package out (node_modules/@lanebridge/client, the tarball's contents), its two
  // dependencies linked from this repository's node_modules: no registry needed.
  const target = join(project, 'node_modules', '@lanebridge', 'client');
  mkdirSync(target, { recursive: true });
  await run('tar', ['-xzf', join(project, tarball!), '-C', target, '--strip-components=1']);
  for (const dep of ['openapi-fetch', 'standardwebhooks']) symlinkSync(resolve('node_modules', dep), join(project, 'node_modules', dep), 'dir');
}, 300_000);
afterAll(async () => {
  rmSync(project, { recursive: true, force: true });
});

describe('the TypeScript client as a package', () => {
  it('a plain JavaScript consumer imports it by name and talks to a live server', async () => {
    const a = await newTenant(t);
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'PKG-1', name: 'Packaged Co' })).statusCode).toBe(201);
    writeFileSync(
      join(project, 'consumer.mjs'),
      `import { createLanebridgeClient, allPages, verifyWebhook } from '@lanebridge/client';
const client = createLanebridgeClient({ baseUrl: process.env.URL, apiKey: process.env.KEY });
const customers = await allPages(client, '/v2/tms-api/customers', {});
const { data, response } = await client.GET('/v2/tms-api/customers/{external_reference_id}', { params: { path: { external_reference_id: 'PKG-1' } } });
console.log(JSON.stringify({ names: customers.map((c) => c.name), status: response.status, name: data.name, verify: typeof verifyWebhook }));
`,
    );
    const { stdout } = await run(process.execPath, ['consumer.mjs'], { cwd: project, env: { ...process.env, URL: baseUrl, KEY: a.key }, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({ names: ['Packaged Co'], status: 200, name: 'Packaged Co', verify: 'function' });
  }, 120_000);

  it('a TypeScript consumer gets the types from the package: a wrong path, field or enumeration value does not compile', async () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        include: ['*.ts'],
      }),
    );
    const good = `import { createLanebridgeClient, readFeed, type Schemas } from '@lanebridge/client';
const client = createLanebridgeClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
export async function f(): Promise<string | undefined> {
  const { data } = await client.GET('/v2/tms-api/loads/{external_reference_id}', { params: { path: { external_reference_id: 'L-1' } } });
  const stop: Schemas['Stop'] | undefined = data?.stops[0];
  return stop?.location_external_reference_id ?? data?.status;
}
// Enumerations take their canonical values, in requests and in answers.
export const update = client.PUT('/v2/tms-api/loads/{external_reference_id}', { params: { path: { external_reference_id: 'L-1' } }, body: { status: 'COVERED', equipment_type: 'REEFER', transport_mode: 'LTL', weight_uom: null, stops: [{ stop_type: 'Pickup', location_external_reference_id: 'LOC-1', early_arrival: '2026-12-01T08:00:00Z', late_arrival: '2026-12-01T10:00:00Z' }] } });
export const list = client.GET('/v2/tms-api/loads', { params: { query: { equipment_type: 'DRY_VAN', transport_mode: 'FTL' } } });
export const endpoint = client.POST('/v2/tms-api/webhook-endpoints', { body: { url: 'https://example.com/hook', event_types: ['load.status_changed', 'import.completed'] } });
export const feed = readFeed(client, { types: ['load.updated', 'load.status_changed'] });
export function seen(l: Schemas['Load'], r: Schemas['LoadRecommendations'], d: Schemas['WebhookDelivery'], a: Schemas['AuditEntry'], e: Schemas['Event'], i: Schemas['Import']): boolean[] {
  return [l.status === 'DELIVERED', r.status === 'COVERED', d.event_type === 'load.updated', a.action === 'key.rotated', a.target.type === 'key', e.type === 'import.completed', i.status === 'running'];
}
`;
    writeFileSync(join(project, 'good.ts'), good);
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 });
    // One mistake a line: the lines tsc refuses must be exactly these.
    const bad = [
      `import { createLanebridgeClient, readFeed, type Schemas } from '@lanebridge/client';`,
      `const client = createLanebridgeClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });`,
      `export const a = client.GET('/v2/tms-api/no-such-path', {});`,
      `export const b = client.POST('/v2/tms-api/customers', { body: { external_reference_id: 'X', nmae: 'typo' } });`,
      // A request's enumeration: the body, the query, an array's items, the canonical spelling only.
      `export const c = client.PUT('/v2/tms-api/loads/{external_reference_id}', { params: { path: { external_reference_id: 'L-1' } }, body: { status: 'SHIPPED' } });`,
      `export const d = client.GET('/v2/tms-api/loads', { params: { query: { equipment_type: 'BOXCAR' } } });`,
      `export const e = client.POST('/v2/tms-api/webhook-endpoints', { body: { url: 'https://example.com/hook', event_types: ['load.shipped'] } });`,
      `export const f: Schemas['LoadCreate']['stops'][number]['stop_type'] = 'PICKUP';`,
      `export const n = readFeed(client, { types: ['load.shipped'] });`,
      // An answer's enumeration: comparing with a value it never has does not compile.
      `export const g = (l: Schemas['Load']) => l.status === 'SHIPPED';`,
      `export const h = (r: Schemas['LoadRecommendations']) => r.status === 'SHIPPED';`,
      `export const i = (w: Schemas['WebhookDelivery']) => w.event_type === 'load.shipped';`,
      `export const j = (w: Schemas['WebhookAttempt']) => w.event_type === 'load.shipped';`,
      `export const k = (au: Schemas['AuditEntry']) => au.action === 'key.stolen';`,
      `export const l = (au: Schemas['AuditEntry']) => au.target.type === 'printer';`,
      `export const m = (i: Schemas['Import']) => i.status === 'paused';`,
    ];
    writeFileSync(join(project, 'bad.ts'), `${bad.join('\n')}\n`);
    const failed = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    rmSync(join(project, 'bad.ts'));
    const refused = new Set([...failed.matchAll(/^bad\.ts\((\d+),/gm)].map((m) => Number(m[1])));
    const expected = bad.map((line, n) => (line.startsWith('export const') ? n + 1 : 0)).filter((n) => n > 0);
    expect(
      [...refused].sort((x, y) => x - y),
      failed,
    ).toEqual(expected);
    expect(failed).toContain('no-such-path');
    expect(failed).toContain('nmae');
    for (const value of ['SHIPPED', 'BOXCAR', 'load.shipped', 'PICKUP', 'key.stolen', 'printer', 'paused']) expect(failed).toContain(`"${value}"`);
  }, 180_000);
});
