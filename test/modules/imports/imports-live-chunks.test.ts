import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readVersions } from '../../../src/lib/db/versions.js';
import { letTimePass, useApp, isPostgres, newTenant, type Tenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';

// On SQLite a write beside an import waits for the chunk in flight (one writer). While the API's writes
// arrive (an authenticated API write in the last second), chunks are sized to IMPORT_LIVE_CHUNK_MS
// instead of IMPORT_CHUNK_MS, from 8 rows; reads, refused requests and the imports API's own calls do not count. On PostgreSQL writes run on connections of their own and the
// chunks keep their size. Each chunk is one transaction, and each transaction that writes loads moves
// the organization's `loads` counter once: the counter counts the chunks.

const dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-live-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// Chunks sized to 5 s (the 100 rows below are one chunk of 128), or to 1 ms while writes arrive.
const t = useApp({ importsDir: dir, importChunkRows: 1000, importChunkMs: 5_000, importLiveChunkMs: 1 }, { importRunner: 'manual', webhookDelivery: 'manual' });

const BASE = '/v2/tms-api/imports';

/** An import of 100 new loads, queued; its id. */
async function queued(a: Tenant, prefix: string): Promise<string> {
  const created = await a.post(BASE, { resource: 'loads' });
  expect(created.statusCode, created.body).toBe(201);
  const { id } = created.json();
  const file = Array.from({ length: 100 }, (_, i) => JSON.stringify(dallasToHouston(`${prefix}-${i}`))).join('\n') + '\n';
  expect(
    (await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/1`, payload: file, headers: { 'content-type': 'application/x-ndjson' } })).statusCode,
  ).toBe(200);
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
  it(
    isPostgres()
      ? 'keeps its chunks’ size (PostgreSQL)'
      : 'takes short chunks while authenticated writes arrive; reads and refused requests do not count (SQLite)',
    async () => {
      const a = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
      await seedFreight(a);

      // No API write in the last second (the upload's own calls do not count); reads, a request without a
      // key and an invalid body arrive just before it runs.
      const quietId = await queued(a, 'QUIET');
      await letTimePass(1_100);
      expect((await a.get('/v2/tms-api/loads?limit=1')).statusCode).toBe(200);
      expect((await t.app.inject({ method: 'PUT', url: '/v2/tms-api/loads/QUIET-0', payload: { description: 'no key' } })).statusCode).toBe(401);
      expect((await a.put('/v2/tms-api/loads/QUIET-0', { weight: 'heavy' })).statusCode).toBe(422);
      expect(await chunksOf(a, quietId)).toBe(1);

      // A write every 100 ms while it runs, by another organization (its writes move its own counters,
      // not those counting this import's chunks; the writes arriving are the process's).
      const b = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
      await seedFreight(b);
      expect((await b.post('/v2/tms-api/loads', dallasToHouston('B-0'))).statusCode).toBe(201);
      const liveId = await queued(a, 'LIVE');
      let writing = true;
      let writes = 0;
      const writer = (async () => {
        while (writing) {
          const put = await b.put('/v2/tms-api/loads/B-0', { description: `changed beside an import ${writes++}` });
          expect(put.statusCode, put.body).toBe(200);
          await letTimePass(100);
        }
      })();
      let chunks: number;
      try {
        chunks = await chunksOf(a, liveId);
      } finally {
        writing = false;
        await writer;
      }
      if (isPostgres()) expect(chunks).toBe(1);
      // 100 rows in chunks of 8 to 16 (those that take IMPORT_LIVE_CHUNK_MS: 8, the least).
      else expect(chunks).toBeGreaterThanOrEqual(7);
      expect(writes).toBeGreaterThan(0);

      const last = await a.get('/v2/tms-api/loads/LIVE-99');
      expect(last.statusCode, last.body).toBe(200);
      expect(last.json().external_reference_id).toBe('LIVE-99');
    },
  );
});
