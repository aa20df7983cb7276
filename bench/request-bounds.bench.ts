/**
 * D21: what the worst bodies of each shape cost one request (docs/reliability.md "One request"): each is
 * sent over real HTTP to an in-process server on SQLite, and the longest the event loop was held while
 * it ran is read off the gaps between ticks of a 5 ms interval, beside the wall time.
 * `npx tsx bench/request-bounds.bench.ts [name-prefix]` (BENCH_CPU_PROFILE=dir: a CPU profile of each).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';

const MiB = 1024 * 1024;
/** `n` copies of `unit` joined by commas: bodies are built as text (a 10 MB array never exists as objects here). */
const repeat = (unit: string, n: number) => (n > 0 ? `${unit},`.repeat(n - 1) + unit : '');
const fitting = (bytes: number, unit: string, frame: number) => Math.floor((bytes - frame) / (unit.length + 1));

const stop = '{"stop_type":"Nope","location_external_reference_id":7,"early_arrival":"x","late_arrival":"y"}';
const load = (stops: string) =>
  `{"external_reference_id":"L-1","equipment_type":"DRY_VAN","transport_mode":"FTL","customer_external_reference_id":"C-1","stops":[${stops}]}`;

/** Name, method, path, body text. */
const cases: [string, string, string, () => string][] = [
  ['batch/loads: 10 MiB of {} items', 'POST', '/v2/tms-api/batch/loads', () => `{"items":[${repeat('{}', fitting(10 * MiB, '{}', 20))}]}`],
  ['batch/loads: 10 MiB of 0 items', 'POST', '/v2/tms-api/batch/loads', () => `{"items":[${repeat('0', fitting(10 * MiB, '0', 20))}]}`],
  ['batch/loads: one 10 MiB number', 'POST', '/v2/tms-api/batch/loads', () => `1${'0'.repeat(10 * MiB - 100)}`],
  [
    'batch/loads: 100 items x invalid stops (10 MiB)',
    'POST',
    '/v2/tms-api/batch/loads',
    () => {
      const perItem = fitting((10 * MiB) / 100, stop, 200);
      return `{"items":[${repeat(`{"operation":"create","load":${load(repeat(stop, perItem))}}`, 100)}]}`;
    },
  ],
  [
    'batch/loads: 100 valid-shaped items, 100 stops of {} each',
    'POST',
    '/v2/tms-api/batch/loads',
    () => `{"items":[${repeat(`{"operation":"create","load":${load(repeat('{}', 100))}}`, 100)}]}`,
  ],
  ['batch/customers: 10 MiB of {} items', 'POST', '/v2/tms-api/batch/customers', () => `{"items":[${repeat('{}', fitting(10 * MiB, '{}', 20))}]}`],
  ['loads: 10,000 invalid stops', 'POST', '/v2/tms-api/loads', () => load(repeat(stop, 10_000))],
  ['loads: 1 MiB of {} stops', 'POST', '/v2/tms-api/loads', () => load(repeat('{}', fitting(MiB, '{}', 200)))],
  ['loads: 1 MiB of invalid stops', 'POST', '/v2/tms-api/loads', () => load(repeat(stop, fitting(MiB, stop, 200)))],
  ['loads: 1 MiB of {} rates', 'POST', '/v2/tms-api/loads', () => `{"financial_rates":[${repeat('{}', fitting(MiB, '{}', 40))}]}`],
  ['loads: 1 MiB description', 'POST', '/v2/tms-api/loads', () => `{"description":"${'x'.repeat(MiB - 40)}"}`],
  ['loads: 1 MiB early_arrival', 'POST', '/v2/tms-api/loads', () => load(`{"early_arrival":"2025-01-01T${'1'.repeat(MiB - 400)}"}`)],
  [
    'loads: 1 MiB of unknown fields',
    'POST',
    '/v2/tms-api/loads',
    () => `{${Array.from({ length: fitting(MiB, '"f000000":0', 10) }, (_, i) => `"f${String(i).padStart(6, '0')}":0`).join(',')}}`,
  ],
  [
    'loads: 1 MiB of unknown fields, strict',
    'POST',
    '/v2/tms-api/loads',
    () => `{${Array.from({ length: fitting(MiB, '"f000000":0', 10) }, (_, i) => `"f${String(i).padStart(6, '0')}":0`).join(',')}}`,
  ],
  ['loads: 1 MiB deep nesting in an unknown field', 'POST', '/v2/tms-api/loads', () => `{"x":${'['.repeat(MiB / 2 - 20)}${']'.repeat(MiB / 2 - 20)}}`],
  ['loads: 1 MiB deep nesting in stops', 'POST', '/v2/tms-api/loads', () => `{"stops":${'['.repeat(MiB / 2 - 20)}${']'.repeat(MiB / 2 - 20)}}`],
  ['loads: 1 MiB of \\u0000 strings in stops', 'POST', '/v2/tms-api/loads', () => load(repeat('"\\u0000"', fitting(MiB, '"\\u0000"', 200)))],
  ['carriers: 1 MiB of {} contacts', 'POST', '/v2/tms-api/carriers', () => `{"name":"c","contacts":[${repeat('{}', fitting(MiB, '{}', 40))}]}`],
  [
    'customers: 1 MiB of unknown fields',
    'POST',
    '/v2/tms-api/customers',
    () => `{${Array.from({ length: fitting(MiB, '"f000000":0', 10) }, (_, i) => `"f${String(i).padStart(6, '0')}":0`).join(',')}}`,
  ],
  [
    'tracking-events: 1 MiB occurred_at',
    'POST',
    '/v2/tms-api/loads/L-1/tracking-events',
    () => `{"event_id":"e","stop_number":1,"occurred_at":"${'1'.repeat(MiB - 60)}"}`,
  ],
  [
    'webhook-endpoints: 1 MiB of event types',
    'POST',
    '/v2/tms-api/webhook-endpoints',
    () => `{"url":"https://example.com/h","event_types":[${repeat('"nope"', fitting(MiB, '"nope"', 60))}]}`,
  ],
  [
    'imports: 1 MiB of csv columns',
    'POST',
    '/v2/tms-api/imports',
    () =>
      `{"resource":"loads","format":"csv","csv":{"columns":{${Array.from({ length: fitting(MiB, '"c000000":"x"', 60) }, (_, i) => `"c${String(i).padStart(6, '0')}":""`).join(',')}}}}`,
  ],
  ['invalid UTF-8 at the end of 1 MiB', 'POST', '/v2/tms-api/loads', () => `{"description":"${'x'.repeat(MiB - 40)}\u00ff"}`],
];

async function main() {
  const only = process.argv[2];
  const dir = mkdtempSync(join(tmpdir(), 'lanebridge-bounds-'));
  const config = { ...loadConfig({}), databaseUrl: join(dir, 'bench.db') };
  const store = openDataStore(config.databaseUrl, { poolSize: 5 });
  await store.migrate();
  const built = await buildApp({ logger: false, importRunner: 'manual', config, store });
  const { accounts } = built.services;
  const org = await accounts.createOrganization('bounds bench');
  const { key } = await accounts.createKey(org.id, { name: 'b', externalSystem: 'bench', scopes: [...SCOPES], perMinute: 100_000, perDay: 1_000_000 });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  // BENCH_CPU_PROFILE=dir: a CPU profile of each measured request (not of the start-up) is written there.
  const profiler = process.env.BENCH_CPU_PROFILE ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
  }
  // The longest gap between ticks of a 5 ms interval: how long the event loop was held at once.
  let last = performance.now();
  let held = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    held = Math.max(held, now - last - 5);
    last = now;
  }, 5);
  console.log('| body | bytes | status | wall ms | longest event-loop hold ms | answer |');
  console.log('|---|---|---|---|---|---|');
  for (const [name, method, path, make] of cases) {
    if (only && !name.startsWith(only)) continue;
    let text = make();
    // The last case carries a byte that is not UTF-8: replace its marker with 0xFF after encoding.
    const bytes = Buffer.from(text);
    if (name.startsWith('invalid UTF-8')) bytes[bytes.length - 3] = 0xff;
    text = '';
    const strict: Record<string, string> = name.endsWith('strict') ? { prefer: 'handling=strict' } : {};
    const send = () => fetch(`${address}${path}`, { method, body: bytes, headers: { 'x-api-key': key, 'content-type': 'application/json', ...strict } });
    // Once to warm up (the first request of a route compiles its serializers), then measured.
    await (await send()).text();
    if (profiler) await profiler.post('Profiler.start');
    last = performance.now();
    held = 0;
    const t0 = performance.now();
    const res = await send();
    const answer = await res.text();
    const wall = performance.now() - t0;
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(join(process.env.BENCH_CPU_PROFILE!, `${name.replace(/[^a-z0-9]+/gi, '-')}.cpuprofile`), JSON.stringify(profile));
    }
    // The tick due when the answer arrived may still be waiting: let it run.
    await new Promise((resolve) => setTimeout(resolve, 10));
    console.log(`| ${name} | ${bytes.length} | ${res.status} | ${wall.toFixed(0)} | ${held.toFixed(0)} | ${answer.slice(0, 100).replace(/\|/g, '\\|')} |`);
  }
  clearInterval(ticker);
  await built.app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

await main();
