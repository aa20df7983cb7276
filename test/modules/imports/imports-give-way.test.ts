import { mkdtempSync, rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { letTimePass, waitFor, useApp, isPostgres, newTenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';

// On SQLite an import gives way to the requests this process is answering: right before each chunk's
// transaction it waits until none is in flight (at most IMPORT_CHUNK_MS). On the one connection a request that arrived during
// a chunk otherwise queued its transaction behind the next chunk too (docs/imports.md). On PostgreSQL a
// request's statements run on a pooled connection of their own, and the import does not wait.

const dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-give-way-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// Chunks of 10 rows; the wait for quiet bounded by 5 s, so a chunk that starts while a request is in
// flight shows. Without live chunks (IMPORT_LIVE_CHUNK_MS=0): the writes of the setup would otherwise
// bound the wait by the live chunk's 10 ms (test/modules/imports/imports-live-chunks.test.ts).
const t = useApp({ importsDir: dir, importChunkRows: 10, importChunkMs: 5_000, importLiveChunkMs: 0 }, { importRunner: 'manual', webhookDelivery: 'manual' });

const BASE = '/v2/tms-api/imports';

describe('an import beside a request in flight', () => {
  it(
    isPostgres()
      ? 'runs to its end while the request is in flight (PostgreSQL)'
      : 'begins no chunk until the request has been answered, then runs to its end (SQLite)',
    async () => {
      const a = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
      await seedFreight(a);
      const created = await a.post(BASE, { resource: 'loads' });
      expect(created.statusCode, created.body).toBe(201);
      const { id } = created.json();
      const file = Array.from({ length: 50 }, (_, i) => JSON.stringify(dallasToHouston(`GW-${i}`))).join('\n') + '\n';
      expect(
        (await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/1`, payload: file, headers: { 'content-type': 'application/x-ndjson' } })).statusCode,
      ).toBe(200);
      expect((await a.post(`${BASE}/${id}/complete`, undefined)).statusCode).toBe(200);

      // A request whose body is still arriving: in flight from its first byte.
      const body = new PassThrough();
      const held = a.request({ method: 'POST', url: '/v2/tms-api/loads', payload: body, headers: { 'content-type': 'application/json' } });
      await letTimePass(50); // the request reaches the server (its count of requests in flight is not exposed)

      let drained = false;
      const running = t.imports.runner.drain().then(() => (drained = true));
      if (isPostgres()) {
        // Within one chunk's wait (5 s): the runner did not wait for the request at any of its 5 chunks.
        const began = Date.now();
        await running;
        expect(Date.now() - began).toBeLessThan(4_000);
        expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed', rows_processed: 50 });
      } else {
        // Claimed (running), then a moment in which chunks of 10 rows would have ended the import.
        await waitFor(async () => (await a.get(`${BASE}/${id}`)).json().status === 'running', { timeout: 2000 }).catch(() => {}); // the expectation below says
        await letTimePass(500);
        const during = (await a.get(`${BASE}/${id}`)).json();
        // No chunk begins while the request is in flight.
        expect(during).toMatchObject({ status: 'running', rows_processed: 0 });
        expect(drained).toBe(false);
      }

      body.end(JSON.stringify(dallasToHouston('GW-LIVE')));
      const answer = await held;
      expect(answer.statusCode, answer.body).toBe(201);
      expect(answer.json().external_reference_id).toBe('GW-LIVE');
      await running;
      const done = (await a.get(`${BASE}/${id}`)).json();
      expect(done).toMatchObject({ status: 'completed', rows_total: 50, rows_processed: 50, rows_succeeded: 50, rows_failed: 0 });
      const last = await a.get('/v2/tms-api/loads/GW-49');
      expect(last.statusCode, last.body).toBe(200);
      expect(last.json().external_reference_id).toBe('GW-49');
    },
  );
});
