import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTenant, startApp, type TestApp } from './helpers.js';

// The typed client used from another project as docs/client.md says: `npm pack` in clients/typescript
// (which builds dist/ with tsc), the tarball laid out as an install does, then a plain JavaScript consumer and a
// TypeScript one checked by tsc.
const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const CLIENT = resolve('clients/typescript');
const TSC = resolve('node_modules/typescript/bin/tsc');

let t: TestApp;
let baseUrl: string;
let project: string;
beforeAll(async () => {
  t = await startApp();
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
  await t.close();
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

  it('a TypeScript consumer gets the types from the package: a wrong path or field does not compile', async () => {
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] }, include: ['*.ts'] }));
    const good = `import { createLanebridgeClient, type Schemas } from '@lanebridge/client';
const client = createLanebridgeClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
export async function f(): Promise<string | undefined> {
  const { data } = await client.GET('/v2/tms-api/loads/{external_reference_id}', { params: { path: { external_reference_id: 'L-1' } } });
  const stop: Schemas['Stop'] | undefined = data?.stops[0];
  return stop?.location_external_reference_id ?? data?.status;
}
`;
    writeFileSync(join(project, 'good.ts'), good);
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 });
    writeFileSync(join(project, 'bad.ts'), `import { createLanebridgeClient } from '@lanebridge/client';
const client = createLanebridgeClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
export const a = client.GET('/v2/tms-api/no-such-path', {});
export const b = client.POST('/v2/tms-api/customers', { body: { external_reference_id: 'X', nmae: 'typo' } });
`);
    const failed = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project, timeout: 120_000 }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    rmSync(join(project, 'bad.ts'));
    expect(failed).toContain("bad.ts(3,");
    expect(failed).toContain('no-such-path');
    expect(failed).toContain("bad.ts(4,");
    expect(failed).toContain('nmae');
  }, 180_000);
});
