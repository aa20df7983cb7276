import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readVersions } from '../src/lib/db/versions.js';
import { isPostgres, newTenant, startApp, type Tenant, type TestApp } from './helpers.js';
import { dallasToHouston, seedFreight } from './fixtures.js';

// On SQLite a write beside an import waits for the chunk in flight (one writer). While the API's writes
// arrive (one in the last second), chunks are sized to IMPORT_LIVE_CHUNK_MS instead of IMPORT_CHUNK_MS,
// from 8 rows; reads (GET) do not count. On PostgreSQL writes run on connections of their own and the
// chunks keep their size. Each chunk is one transaction, and each transaction that writes loads moves
// the organization's `loads` counter once: the counter counts the chunks.

let t: TestApp;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-live-'));
  // Chunks sized to 5 s (the 100 rows below are one chunk of 128), or to 1 ms while writes arrive.
  t = await startApp({ importsDir: dir, importChunkRows: 1000, importChunkMs: 5_000, importLiveChunkMs: 1 }, { importRunner: 'manual', webhookDelivery: 'manual' });
});
afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const BASE = '/v2/tms-api/imports';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An import of 100 new loads, queued; its id. */
async function queued(a: Tenant, prefix: string): Promise<string> {
  const created = await a.post(BASE, { resource: 'loads' });
  expect(created.statusCode, created.body).toBe(201);
  const { id } = created.json();
  const file = Array.from({ length: 100 }, (_, i) => JSON.stringify(dallasToHouston(`${prefix}-${i}`))).join('\n') + '\n';
  expect((await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/1`, payload: file, headers: { 'content-type': 'application/x-ndjson' } })).statusCode).toBe(200);
  expect((await a.post(`${BASE}/${id}/complete`, undefined)).statusCode).toBe(200);
  return id;
}

/** Runs the import; how many chunks (transactions writing loads) it took. */
async function chunksOf(a: Tenant, id: string): Promise<number> {
  const before = (await readVersions(t.store.db, a.orgId)).loads;
  await t.imports.runner.drain();
  const done = (await a.get(`${BASE}/${id}`)).json();
  expect(done).toMatchObject({ status: 'completed', rows_processed: 100, rows_succeeded: 100 });
  return (await readVersions(t.store.db, a.orgId)).loads - before;
}

describe('an import while the API’s writes arrive', () => {
  it(isPostgres() ? 'keeps its chunks’ size (PostgreSQL)' : 'takes short chunks, and its usual ones once writes stop or only reads arrive (SQLite)', async () => {
    const a = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
    await seedFreight(a);

    // No write in the last second (the upload's own requests are more than a second old); reads only.
    const quietId = await queued(a, 'QUIET');
    await sleep(1_100);
    expect((await a.get('/v2/tms-api/loads?limit=1')).statusCode).toBe(200);
    expect(await chunksOf(a, quietId)).toBe(1);

    // A write just before it runs.
    const liveId = await queued(a, 'LIVE');
    const put = await a.put('/v2/tms-api/loads/QUIET-0', { description: 'changed beside an import' });
    expect(put.statusCode, put.body).toBe(200);
    const chunks = await chunksOf(a, liveId);
    if (isPostgres()) expect(chunks).toBe(1);
    // 100 rows in chunks of 8 (the least), for as long as the last write is under a second old.
    else expect(chunks).toBeGreaterThanOrEqual(5);

    const last = await a.get('/v2/tms-api/loads/LIVE-99');
    expect(last.statusCode, last.body).toBe(200);
    expect(last.json().external_reference_id).toBe('LIVE-99');
  });
});
