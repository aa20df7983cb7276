// Run by test/modules/webhooks/webhooks.attempt-limits.test.ts as `node --expose-gc --import tsx <this> <json>`: a
// Lanebridge app on a SQLite file of its own delivers one event to each hostile receiver URL given, in
// parallel, while the collector is forced to run every 200 ms; it prints one JSON line: how long the
// deliveries took, this process's resident memory before, at most and after, and the delivery log.
// A process of its own so that its memory is the deliverer's alone and `gc` is there to call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDataStore } from '../../src/lib/db/index.js';
import { SCOPES } from '../../src/modules/accounts/scopes.js';

const { warmUrl, urls } = JSON.parse(process.argv[2]!) as { warmUrl: string; urls: Record<string, string> };
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const dir = mkdtempSync(join(tmpdir(), 'lanebridge-probe-'));
const databaseUrl = join(dir, 'probe.db');
const store = openDataStore(databaseUrl, { poolSize: 2 });
await store.migrate();
const config = { ...loadConfig({}), databaseUrl, webhookAllowInsecure: true };
// Time stands still (but for 1 ms a reading): a failed attempt's retry never comes due during the probe.
let at = Date.now();
const clock = { now: () => new Date(at++) };
const built = await buildApp({ config, store, clock, logger: false, webhookDelivery: 'manual', recommendationFollowUp: 'manual' });
const { accounts } = built.services;
const org = await accounts.createOrganization('Probe');
const key = await accounts.createKey(org.id, { name: 'probe', externalSystem: 'probe', scopes: [...SCOPES] });
const worker = built.webhooks.worker;
const service = built.webhooks.service;
let n = 0;
const write = async () => {
  const res = await built.app.inject({
    method: 'POST',
    url: '/v2/tms-api/customers',
    headers: { 'x-api-key': key.key, 'content-type': 'application/json' },
    payload: { external_reference_id: `PROBE-${++n}`, name: 'Probe' },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
};

// Warm up (undici, the statements, the JIT) on a receiver that answers at once, then measure.
const warm = await service.create(org.id, { url: warmUrl });
await write();
await worker.drain();
await service.update(org.id, warm.id, { status: 'disabled' });
const endpoints = new Map<string, string>();
for (const [name, url] of Object.entries(urls)) endpoints.set(name, (await service.create(org.id, { url })).id);
gc();
gc();
const rssBefore = process.memoryUsage().rss;
let rssMax = rssBefore;
const sampler = setInterval(() => {
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
}, 20);
// A forced collection every 200 ms while the attempts run: what took an AbortSignal.timeout away.
const collector = setInterval(() => {
  gc();
  rssMax = Math.max(rssMax, process.memoryUsage().rss);
}, 200);
const t0 = performance.now();
await write();
await worker.drain();
const drainMs = Math.round(performance.now() - t0);
clearInterval(sampler);
clearInterval(collector);
rssMax = Math.max(rssMax, process.memoryUsage().rss);
gc();
const rssAfter = process.memoryUsage().rss;
const log: Record<string, unknown> = {};
for (const [name, id] of endpoints) {
  const [delivery] = (await service.deliveries(org.id, id, { page: 1, page_size: 1 })).items;
  log[name] = delivery;
}
process.stdout.write(`${JSON.stringify({ drainMs, rssBefore, rssMax, rssAfter, log })}\n`);
await built.app.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
