import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { letTimePass, waitFor, useApp, isPostgres, newTenant, startApp, startAppOn, type Tenant } from '../../helpers.js';
import { freshPgDatabase, pgAdminUrl } from '../../reliability/support.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { startReceiver } from '../webhooks/support.js';
import { Visitor } from '../../dashboard/support.js';

// D15: imports. The runner is driven by hand here (drain); test/modules/imports/imports-resume.test.ts kills a real worker.

const dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const t = useApp({ importsDir: dir, webhookAllowInsecure: true, importChunkRows: 1000 }, { importRunner: 'manual', webhookDelivery: 'manual' });

const BASE = '/v2/tms-api/imports';

async function tenant(): Promise<Tenant> {
  const a = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
  await seedFreight(a);
  for (const ref of ['CAR-2', 'CAR-3'])
    expect((await a.post('/v2/tms-api/carriers', { external_reference_id: ref, name: `Carrier ${ref}` })).statusCode).toBe(201);
  expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'AUS', name: 'Austin', postal_code: '78701', state: 'TX' })).statusCode).toBe(201);
  return a;
}

/** Load i of the history: every third delivered with a carrier (lane history), the others open. */
function historyLoad(i: number) {
  const day = String(1 + (i % 28)).padStart(2, '0');
  const toAustin = i % 5 === 0;
  return dallasToHouston(`L-${i}`, {
    ...(i % 3 === 0 ? { status: 'DELIVERED', carrier_external_reference_id: `CAR-${1 + (i % 3 === 0 ? (i / 3) % 3 : 0)}` } : {}),
    ...(toAustin ? { stops: [dallasToHouston('x').stops[0], { ...dallasToHouston('x').stops[1], location_external_reference_id: 'AUS' }] } : {}),
    financial_rates: [{ rate_entity: 'CARRIER', amount: 1000 + (i % 7) * 50 }],
    description: `history ${day}`,
  });
}

/** Creates, uploads (one part per text) and completes an import; returns its id. */
async function runImport(a: Tenant, create: Record<string, unknown>, parts: (string | Buffer)[], contentType = 'application/x-ndjson'): Promise<string> {
  const created = await a.post(BASE, create);
  expect(created.statusCode, created.body).toBe(201);
  const { id, status } = created.json();
  expect(status).toBe('awaiting_upload');
  for (const [i, part] of parts.entries()) {
    const res = await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/${i + 1}`, payload: part, headers: { 'content-type': contentType } });
    expect(res.statusCode, res.body).toBe(200);
  }
  const done = await a.post(`${BASE}/${id}/complete`, undefined);
  expect(done.statusCode, done.body).toBe(200);
  expect(done.json().status).toBe('queued');
  return id;
}

const errorLines = async (a: Tenant, id: string) => {
  const res = await a.get(`${BASE}/${id}/errors`);
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
  return res.body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { row: number; external_reference_id: string | null; detail: unknown });
};

describe('NDJSON: 10,000 loads with 37 bad rows', () => {
  it('completes with errors: 9,963 loads, an error file of 37 lines with row numbers and D1 details, one import.completed event and no per-row webhooks', async () => {
    const a = await tenant();
    const receiver = await startReceiver();
    const hook = await a.post('/v2/tms-api/webhook-endpoints', { url: receiver.url });
    expect(hook.statusCode, hook.body).toBe(201);
    await t.webhooks.worker.drain();
    const before = receiver.received.length;
    const { next_after: afterSeed } = (await a.get('/v2/tms-api/events?limit=500')).json();

    // Bad rows at 7, 277, 547, … (every 270th), four kinds of fault in turn.
    const bad = new Map<number, number>();
    for (let k = 0; k < 37; k++) bad.set(7 + 270 * k, k % 4);
    const lines: string[] = [];
    for (let row = 1; row <= 10_000; row++) {
      const load = historyLoad(row);
      const fault = bad.get(row);
      if (fault === 0) lines.push(`{"external_reference_id":"L-${row}", oops}`);
      else if (fault === 1) lines.push(JSON.stringify({ ...load, transport_mode: undefined }));
      else if (fault === 2) lines.push(JSON.stringify({ ...load, customer_external_reference_id: 'NO-SUCH-CUSTOMER' }));
      else if (fault === 3) lines.push(JSON.stringify({ ...load, equipment_type: 'SPACESHIP' }));
      else lines.push(JSON.stringify(load));
    }
    // Two parts, cut in the middle of a line (a record may span parts).
    const text = `${lines.join('\n')}\n`;
    const cut = Math.floor(text.length / 2);
    const id = await runImport(a, { resource: 'loads', format: 'ndjson' }, [text.slice(0, cut), text.slice(cut)]);
    await t.imports.runner.drain();

    const res = await a.get(`${BASE}/${id}`);
    expect(res.statusCode).toBe(200);
    const imp = res.json();
    expect(imp).toMatchObject({
      id,
      resource: 'loads',
      format: 'ndjson',
      emit_events: 'summary',
      status: 'completed_with_errors',
      parts: 2,
      rows_total: 10_000,
      rows_processed: 10_000,
      rows_succeeded: 9_963,
      rows_failed: 37,
      percent: 100,
      eta_seconds: 0,
      error: null,
    });
    expect(imp.bytes_total).toBe(Buffer.byteLength(text));
    expect(imp.started_at).not.toBeNull();
    expect(imp.finished_at).not.toBeNull();
    expect((await a.get('/v2/tms-api/loads?page_size=1')).json().pagination.total).toBe(9_963);
    expect((await a.get('/v2/tms-api/loads/L-7')).statusCode).toBe(404);
    expect((await a.get('/v2/tms-api/loads/L-8')).json().description).toBe('history 09');

    const errors = await errorLines(a, id);
    expect(errors).toHaveLength(37);
    expect(errors.map((e) => e.row)).toEqual([...bad.keys()]);
    const byRow = new Map(errors.map((e) => [e.row, e]));
    expect(byRow.get(7)).toEqual({ row: 7, external_reference_id: null, detail: expect.stringMatching(/^Malformed JSON body: /) });
    expect(byRow.get(277)).toEqual({
      row: 277,
      external_reference_id: 'L-277',
      detail: [{ type: 'missing', loc: ['body', 'transport_mode'], msg: 'Field required' }],
    });
    expect(byRow.get(547)).toEqual({
      row: 547,
      external_reference_id: 'L-547',
      detail: [{ type: 'value_error', loc: ['body', 'customer_external_reference_id'], msg: expect.stringContaining('NO-SUCH-CUSTOMER') }],
    });
    expect(byRow.get(817)).toMatchObject({ row: 817, external_reference_id: 'L-817', detail: [{ type: 'enum', loc: ['body', 'equipment_type'] }] });

    // summary: no per-row event, one import.completed with the counts.
    const feed = (await a.get(`/v2/tms-api/events?after=${afterSeed}&limit=500`)).json();
    expect(feed.items.map((e: { type: string }) => e.type)).toEqual(['import.completed']);
    expect(feed.items[0].data).toMatchObject({ id, status: 'completed_with_errors', rows_succeeded: 9_963, rows_failed: 37, rows_total: 10_000 });
    await t.webhooks.worker.drain();
    const sent = receiver.received.slice(before).map((r) => JSON.parse(r.body).type);
    expect(sent).toEqual(['import.completed']);
    await receiver.close();

    // D2 list, newest last by default.
    const list = (await a.get(BASE)).json();
    expect(list.items.map((i: { id: string }) => i.id)).toEqual([id]);
    expect(list.pagination).toMatchObject({ total: 1, page: 1 });
  }, 240_000);
});

describe('PostgreSQL: the statistics of the tables an import grows', () => {
  // Plans made from an empty table's statistics outlived it: a load looked up by reference read all of
  // the organization's loads through (org_id, id), in the import and in every request beside it.
  it.runIf(isPostgres())(
    'are brought up to date by the import (ANALYZE), so a load is found by its reference index',
    async () => {
      // A database of its own: the row estimate is compared with a count of every organization's loads,
      // which other test files (run at the same time) would move.
      const own = await freshPgDatabase(pgAdminUrl()!, `imports_stats_${process.pid}`);
      const ownDir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-stats-'));
      const app = await startAppOn(own.url, { importsDir: ownDir, importChunkRows: 1000 }, { importRunner: 'manual', webhookDelivery: 'manual' });
      try {
        const a = await newTenant(app, undefined, { perMinute: 100_000, perDay: 1_000_000 });
        await seedFreight(a);
        for (const ref of ['CAR-2', 'CAR-3'])
          expect((await a.post('/v2/tms-api/carriers', { external_reference_id: ref, name: `Carrier ${ref}` })).statusCode).toBe(201);
        expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'AUS', name: 'Austin', postal_code: '78701', state: 'TX' })).statusCode).toBe(
          201,
        );
        const estimate = async () =>
          Number((await sql<{ n: number }>`select reltuples as n from pg_class where oid = 'loads'::regclass`.execute(app.store.db)).rows[0]!.n);
        // Never analyzed (autovacuum is off on the CI machines; where it is on, it may have been).
        const before = await estimate();
        const lines = Array.from({ length: 3_000 }, (_, i) => JSON.stringify(historyLoad(20_000 + i)));
        const created = await a.post(BASE, { resource: 'loads', format: 'ndjson' });
        const id = created.json().id as string;
        expect(
          (
            await a.request({
              method: 'PUT',
              url: `${BASE}/${id}/parts/1`,
              payload: `${lines.join('\n')}\n`,
              headers: { 'content-type': 'application/x-ndjson' },
            })
          ).statusCode,
        ).toBe(200);
        expect((await a.post(`${BASE}/${id}/complete`, undefined)).statusCode).toBe(200);
        await app.imports.runner.drain();
        expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed', rows_succeeded: 3_000 });
        // Under 30,000 rows ANALYZE reads them all: the estimate is the count.
        expect(before).not.toBe(3_000);
        expect(await estimate()).toBe(3_000);
        // The plan every connection keeps for the lookup (generic: made once for any reference).
        const plan = await app.store.db.connection().execute(async (c) => {
          await sql`set plan_cache_mode = force_generic_plan`.execute(c);
          await sql`prepare lookup_by_ref(text, text) as select * from loads where org_id = $1 and external_reference_id = $2`.execute(c);
          try {
            return (await sql<{ 'QUERY PLAN': string }>`explain execute lookup_by_ref('org', 'ref')`.execute(c)).rows.map((r) => r['QUERY PLAN']).join('\n');
          } finally {
            await sql`deallocate lookup_by_ref`.execute(c);
            await sql`reset plan_cache_mode`.execute(c);
          }
        });
        expect(plan).toContain('loads_org_ref_uq');
      } finally {
        await app.close();
        await own.drop();
        rmSync(ownDir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

describe('CSV', () => {
  it('reads quoted commas, embedded newlines, a UTF-8 BOM, CRLF and a column map; bad rows are listed by record number', async () => {
    const a = await tenant();
    const header = [
      'Load #',
      'Equipment',
      'transport_mode',
      'Customer',
      'description',
      'weight',
      'stops.1.stop_type',
      'stops.1.location_external_reference_id',
      'stops.1.early_arrival',
      'stops.1.late_arrival',
      'stops.2.stop_type',
      'stops.2.location_external_reference_id',
      'stops.2.early_arrival',
      'stops.2.late_arrival',
      'status',
      'carrier_external_reference_id',
    ];
    const stops = ['Pickup', 'DAL', '2026-03-02T08:00:00Z', '2026-03-02T10:00:00Z', 'Delivery', 'HOU', '2026-03-03T08:00:00Z', '2026-03-03T12:00:00Z'];
    const rows = [
      ['C-1', 'DRY_VAN', 'FTL', 'CUST-1', '"Pallets, 12 of them"', '1200.5', ...stops, 'DELIVERED', 'CAR-1'],
      ['C-2', 'REEFER', 'FTL', 'CUST-1', '"First line\r\nsecond line, with ""quotes"""', '', ...stops, '', ''],
      ['C-3', 'DRY_VAN', 'FTL', 'CUST-1', 'no weight', 'heavy', ...stops, '', ''],
      ['C-4', 'DRY_VAN', 'FTL', 'CUST-1', 'late before early', '10', ...stops.slice(0, 7), '2026-03-01T00:00:00Z', '', ''],
      ['C-5', 'DRY_VAN', 'FTL', 'CUST-1', 'plain', '7', ...stops, 'active', ''],
    ];
    const csv = `\ufeff${[header.map((h) => (h.includes('#') ? `"${h}"` : h)).join(','), ...rows.map((r) => r.join(','))].join('\r\n')}\r\n`;
    const id = await runImport(
      a,
      {
        resource: 'loads',
        format: 'csv',
        csv: { columns: { 'Load #': 'external_reference_id', Equipment: 'equipment_type', Customer: 'customer_external_reference_id' } },
      },
      [csv],
      'text/csv',
    );
    await t.imports.runner.drain();
    const imp = (await a.get(`${BASE}/${id}`)).json();
    expect(imp).toMatchObject({ status: 'completed_with_errors', rows_total: 5, rows_processed: 5, rows_succeeded: 3, rows_failed: 2 });

    const c1 = (await a.get('/v2/tms-api/loads/C-1')).json();
    expect(c1).toMatchObject({
      description: 'Pallets, 12 of them',
      weight: 1200.5,
      equipment_type: 'DRY_VAN',
      status: 'DELIVERED',
      carrier_external_reference_id: 'CAR-1',
    });
    expect(c1.stops.map((s: { location_external_reference_id: string }) => s.location_external_reference_id)).toEqual(['DAL', 'HOU']);
    const c2 = (await a.get('/v2/tms-api/loads/C-2')).json();
    expect(c2).toMatchObject({ description: 'First line\r\nsecond line, with "quotes"', weight: null, equipment_type: 'REEFER', status: 'ACTIVE' });
    expect((await a.get('/v2/tms-api/loads/C-5')).json().status).toBe('ACTIVE');

    const errors = await errorLines(a, id);
    expect(errors.map((e) => [e.row, e.external_reference_id])).toEqual([
      [3, 'C-3'],
      [4, 'C-4'],
    ]);
    expect(errors[0]!.detail).toMatchObject([{ loc: ['body', 'weight'] }]);
    expect(JSON.stringify(errors[1]!.detail)).toContain('late_arrival');
  }, 60_000);

  it('a missing required column is 422 at complete, one entry per field, and nothing is written', async () => {
    const a = await tenant();
    const created = (await a.post(BASE, { resource: 'loads', format: 'csv' })).json();
    const csv =
      'external_reference_id,equipment_type,stops.1.stop_type,stops.1.location_external_reference_id,stops.1.early_arrival\nM-1,DRY_VAN,Pickup,DAL,2026-03-02T08:00:00Z\n';
    expect((await a.request({ method: 'PUT', url: `${BASE}/${created.id}/parts/1`, payload: csv, headers: { 'content-type': 'text/csv' } })).statusCode).toBe(
      200,
    );
    const res = await a.post(`${BASE}/${created.id}/complete`, undefined);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail.map((d: { type: string; loc: unknown[] }) => [d.type, d.loc])).toEqual([
      ['missing', ['body', 'transport_mode']],
      ['missing', ['body', 'customer_external_reference_id']],
      ['missing', ['body', 'stops', 0, 'late_arrival']],
    ]);
    expect(res.json().detail[0].msg).toMatch(/no column for 'transport_mode'/);
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${created.id}`)).json()).toMatchObject({ status: 'awaiting_upload', rows_processed: 0 });
    expect((await a.get('/v2/tms-api/loads?page_size=1')).json().pagination.total).toBe(0);
  });

  it('a column naming a prototype (__proto__.x) is 422 at complete and reaches no object (it crashed the server once)', async () => {
    const a = await tenant();
    const customersBefore = (await a.get('/v2/tms-api/customers?page_size=1')).json().pagination.total;
    const created = (await a.post(BASE, { resource: 'customers', format: 'csv' })).json();
    const csv = 'external_reference_id,name,__proto__.lb_polluted\nA-1,Acme,yes\n';
    expect((await a.request({ method: 'PUT', url: `${BASE}/${created.id}/parts/1`, payload: csv, headers: { 'content-type': 'text/csv' } })).statusCode).toBe(
      200,
    );
    const res = await a.post(`${BASE}/${created.id}/complete`, undefined);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].msg).toMatch(/column "__proto__.lb_polluted"/);
    await t.imports.runner.drain();
    expect(({} as Record<string, unknown>).lb_polluted).toBeUndefined();
    expect((await a.get('/v2/tms-api/customers?page_size=1')).json().pagination.total).toBe(customersBefore);
  });

  it('a header of more than 500 columns is 422 at complete, answered at once', async () => {
    const a = await tenant();
    const created = (await a.post(BASE, { resource: 'loads', format: 'csv' })).json();
    const stops = Array.from({ length: 6000 }, (_, i) => `stops.${i + 1}.stop_number`).join(',');
    const csv = `external_reference_id,equipment_type,transport_mode,customer_external_reference_id,${stops}\n`;
    expect((await a.request({ method: 'PUT', url: `${BASE}/${created.id}/parts/1`, payload: csv, headers: { 'content-type': 'text/csv' } })).statusCode).toBe(
      200,
    );
    const began = Date.now();
    const res = await a.post(`${BASE}/${created.id}/complete`, undefined);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].msg).toBe('Value error, the CSV header has 6004 columns; at most 500 are accepted');
    expect(Date.now() - began).toBeLessThan(2000);
  });
});

describe('one running import per organization', () => {
  it('answers 409 for a second import while one is queued or running; after cancel, another starts', async () => {
    const a = await tenant();
    const first = await runImport(a, { resource: 'customers' }, ['{"external_reference_id":"C-9","name":"Nine"}\n']);
    const second = await a.post(BASE, { resource: 'customers' });
    expect(second.statusCode).toBe(409);
    expect(second.json().detail).toBe(
      `Import ${first} is queued for this organization; one import runs at a time: wait for it to finish or cancel it (POST /v2/tms-api/imports/${first}/cancel)`,
    );
    // Another organization is not held up.
    const b = await tenant();
    expect((await b.post(BASE, { resource: 'customers' })).statusCode).toBe(201);

    const cancelled = await a.post(`${BASE}/${first}/cancel`, undefined);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'cancelled' });
    expect((await a.post(`${BASE}/${first}/cancel`, undefined)).statusCode).toBe(409);
    await t.imports.runner.drain();
    expect((await a.get('/v2/tms-api/customers/C-9')).statusCode).toBe(404);
    const third = await runImport(a, { resource: 'customers' }, ['{"external_reference_id":"C-9","name":"Nine"}\n']);
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${third}`)).json()).toMatchObject({ status: 'completed', rows_succeeded: 1 });
    expect((await a.get('/v2/tms-api/customers/C-9')).json().name).toBe('Nine');

    // D17: each import created and the one cancelled are in the audit log, by the key that asked, once each.
    const audit = (await a.get('/v2/tms-api/audit-log?action=import.&page_size=100')).json();
    expect(
      audit.items.map((e: { action: string; target: unknown; actor: { type: string; id: string } }) => [e.action, e.target, e.actor.type, e.actor.id]),
    ).toEqual([
      ['import.created', { type: 'import', id: third }, 'key', a.keyId],
      ['import.cancelled', { type: 'import', id: first }, 'key', a.keyId],
      ['import.created', { type: 'import', id: first }, 'key', a.keyId],
    ]);
    // The other organization's import is in its own log only.
    expect((await b.get('/v2/tms-api/audit-log?action=import.created')).json().items).toHaveLength(1);
  });

  it('refuses what is not an import request', async () => {
    const a = await tenant();
    const bad = await a.post(BASE, { resource: 'trucks' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['body', 'resource']);
    const { id } = (await a.post(BASE, { resource: 'loads' })).json();
    expect((await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/1`, payload: '{}', headers: { 'content-type': 'application/json' } })).statusCode).toBe(
      415,
    );
    expect((await a.request({ method: 'PUT', url: `${BASE}/${id}/parts/0`, payload: 'x', headers: { 'content-type': 'text/csv' } })).statusCode).toBe(422);
    const none = await a.post(`${BASE}/${id}/complete`, undefined);
    expect(none.statusCode).toBe(422);
    expect(none.json().detail[0].msg).toMatch(/no part was uploaded/);
    expect((await a.get(`${BASE}/imp_nope`)).json()).toEqual({ detail: "Import with id 'imp_nope' not found" });
    const other = await tenant();
    expect((await other.get(`${BASE}/${id}`)).statusCode).toBe(404);
    const noScope = await newTenant(t, ['read:loads']);
    const forbidden = await noScope.get(BASE);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.message).toBe('API key does not have the required scope: write:imports');
  });
});

describe('recommendations', () => {
  it('after an import equal those after the same loads through /batch/loads', async () => {
    const viaImport = await tenant();
    const viaBatch = await tenant();
    const loads = Array.from({ length: 600 }, (_, i) => historyLoad(i + 1));
    const id = await runImport(viaImport, { resource: 'loads' }, [loads.map((l) => JSON.stringify(l)).join('\n')]);
    await t.imports.runner.drain();
    expect((await viaImport.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed', rows_succeeded: 600 });
    for (let i = 0; i < loads.length; i += 100) {
      const res = await viaBatch.post('/v2/tms-api/batch/loads', { items: loads.slice(i, i + 100).map((load) => ({ operation: 'upsert', load })) });
      expect(res.json().success_count).toBe(100);
    }
    const strip = (recs: Record<string, unknown>[]) =>
      recs.map(({ carrier_id: _c, score, ...rest }) => ({ ...rest, score: Math.round((score as number) * 1e4) / 1e4 }));
    for (const ref of ['L-1', 'L-5', 'L-10', 'L-599']) {
      const x = (await viaImport.get(`/v2/tms-api/loads/${ref}/carrier-recommendations`)).json();
      const y = (await viaBatch.get(`/v2/tms-api/loads/${ref}/carrier-recommendations`)).json();
      expect(x.carrier_recommendations.length).toBeGreaterThan(0);
      expect(strip(x.carrier_recommendations)).toEqual(strip(y.carrier_recommendations));
    }
  }, 120_000);
});

describe('dashboard', () => {
  it('the Imports page shows each import with its progress and counts, follows a running one, and offers the refused rows', async () => {
    const a = await tenant();
    const password = 'correct horse imports';
    await t.services.accounts.createUser(a.orgId, { email: `ops-${a.orgId}@example.com`, name: 'Olive Ops', password });
    const v = new Visitor(t);
    await v.signIn(`ops-${a.orgId}@example.com`, password);
    const queued = await runImport(a, { resource: 'customers' }, ['{"external_reference_id":"D-1","name":"One"}\n{"external_reference_id":"D-2"}\n']);
    const waiting = await v.get('/imports');
    expect(waiting.statusCode).toBe(200);
    expect(waiting.body).toContain('<meta http-equiv="refresh" content="2">');
    expect(waiting.body).toContain(queued);
    await t.imports.runner.drain();
    const done = await v.get('/imports');
    expect(done.body).not.toContain('http-equiv="refresh"');
    expect(done.body).toContain('completed with errors');
    expect(done.body).toMatch(/<progress max="2" value="2"/);
    expect(done.body).toContain(`href="/imports/${queued}/errors"`);
    const file = await v.get(`/imports/${queued}/errors`);
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-disposition']).toBe(`attachment; filename="${queued}-errors.ndjson"`);
    expect(
      file.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([{ row: 2, external_reference_id: 'D-2', detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required' }] }]);
  });
});

describe('abandoned uploads', () => {
  it('an import still awaiting its upload 24 h after its last part is cancelled with the reason and its parts removed; a part counts as activity', async () => {
    let now = Date.parse('2026-11-01T00:00:00.000Z');
    const own = mkdtempSync(join(tmpdir(), 'lanebridge-imports-expiry-'));
    const app = await startApp(
      { importsDir: own, importUploadExpiryMs: 24 * 3_600_000 },
      { importRunner: 'manual', webhookDelivery: 'manual', clock: { now: () => new Date(now) } },
    );
    try {
      const a = await newTenant(app, undefined, { perMinute: 100_000, perDay: 1_000_000 });
      const put = (id: string, n: number) =>
        a.request({
          method: 'PUT',
          url: `${BASE}/${id}/parts/${n}`,
          payload: '{"external_reference_id":"C-1","name":"One"}\n',
          headers: { 'content-type': 'application/x-ndjson' },
        });
      const left = (await a.post(BASE, { resource: 'customers' })).json().id as string;
      const busy = (await a.post(BASE, { resource: 'customers' })).json().id as string;
      expect((await put(left, 1)).statusCode).toBe(200);
      expect((await put(busy, 1)).statusCode).toBe(200);
      now += 20 * 3_600_000;
      // 20 h on: another part of one of them; nothing has expired yet.
      expect((await put(busy, 2)).statusCode).toBe(200);
      await app.imports.runner.drain();
      expect((await a.get(`${BASE}/${left}`)).json().status).toBe('awaiting_upload');
      now += 5 * 3_600_000;
      // 25 h after the first's last part, 5 h after the second's.
      await app.imports.runner.drain();
      const expired = (await a.get(`${BASE}/${left}`)).json();
      expect(expired).toMatchObject({ status: 'cancelled' });
      expect(expired.error).toBe(
        `Expired: no POST /v2/tms-api/imports/${left}/complete within 24 h of its last part; its parts were removed: send the file again in a new import`,
      );
      expect(await app.imports.files.parts(left)).toEqual([]);
      expect((await a.get(`${BASE}/${busy}`)).json().status).toBe('awaiting_upload');
      expect((await app.imports.files.parts(busy)).map((p: { n: number }) => p.n)).toEqual([1, 2]);
      // A part sent to the expired import is refused and not kept.
      const late = await put(left, 2);
      expect(late.statusCode).toBe(409);
      expect(await app.imports.files.parts(left)).toEqual([]);
    } finally {
      await app.close();
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('a part still streaming in when the import is completed', () => {
  /** Starts PUT part `n` with a body that streams until `finish` is called; resolves once its staged file is on disk. */
  async function slowPart(a: Tenant, id: string, n: number, first: string) {
    const body = new PassThrough();
    body.write(first);
    const answer = a.request({ method: 'PUT', url: `${BASE}/${id}/parts/${n}`, payload: body, headers: { 'content-type': 'application/x-ndjson' } });
    const staged = () => {
      try {
        return readdirSync(join(dir, id)).some((f) => f.endsWith('.tmp'));
      } catch {
        return false;
      }
    };
    await waitFor(staged, { timeout: 2000, interval: 10, what: 'the staged part file' });
    return { answer, finish: (rest: string) => body.end(rest) };
  }

  it('is refused and never replaces the part the completion counted: the runner imports what was there at complete', async () => {
    const a = await tenant();
    const created = (await a.post(BASE, { resource: 'customers' })).json().id as string;
    const put = await a.request({
      method: 'PUT',
      url: `${BASE}/${created}/parts/1`,
      payload: '{"external_reference_id":"RACE-A1","name":"A1"}\n{"external_reference_id":"RACE-A2","name":"A2"}\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(put.statusCode, put.body).toBe(200);
    // Part 1 sent again, still streaming when complete arrives.
    const late = await slowPart(a, created, 1, '{"external_reference_id":"RACE-B1","name":"B1"}\n');
    const done = await a.post(`${BASE}/${created}/complete`, undefined);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ status: 'queued', bytes_total: put.json().bytes });
    late.finish('{"external_reference_id":"RACE-B2","name":"B2"}\n');
    const refused = await late.answer;
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toBe(`Import ${created} is queued: parts are taken only before POST /imports/${created}/complete (this part was not kept)`);
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${created}`)).json()).toMatchObject({ status: 'completed', rows_succeeded: 2 });
    expect((await a.get('/v2/tms-api/customers/RACE-A1')).statusCode).toBe(200);
    expect((await a.get('/v2/tms-api/customers/RACE-B1')).statusCode).toBe(404);
  });

  it('whose folder is removed by hand meanwhile is refused with a message that says so, and can be sent again', async () => {
    const a = await tenant();
    const id = (await a.post(BASE, { resource: 'customers' })).json().id as string;
    const part = await slowPart(a, id, 1, '{"external_reference_id":"GONE-1","name":"G1"}\n');
    rmSync(join(dir, id), { recursive: true, force: true });
    part.finish('');
    const refused = await part.answer;
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toBe(
      `Import ${id}'s uploaded parts were removed from the imports folder while this part streamed in (this part was not kept): send it again`,
    );
    const again = await a.request({
      method: 'PUT',
      url: `${BASE}/${id}/parts/1`,
      payload: '{"external_reference_id":"GONE-1","name":"G1"}\n',
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(again.statusCode, again.body).toBe(200);
  });
});

describe('the database unable to take a write of a running import', () => {
  it('is a pause, not a failure: the import is given back and resumes after its checkpoint, ending as an uninterrupted run', async () => {
    const a = await tenant();
    const lines = Array.from({ length: 2500 }, (_, i) => JSON.stringify(historyLoad(i))).join('\n') + '\n';
    const id = await runImport(a, { resource: 'loads' }, [lines]);
    // The write that marks it finished meets a lock held past its wait (SQLite's "database is locked";
    // PostgreSQL's lock_timeout), once.
    // (The recommendations follow-up, the other writer of the organization, held off meanwhile.)
    const write = t.pipeline.write;
    const schedule = t.recommendations.schedule;
    t.recommendations.schedule = async () => undefined;
    let refused = 0;
    t.pipeline.write = (async (...args: Parameters<typeof write>) => {
      // Only the runner's closing write (other writers of the process, such as usage recording, pass).
      if (new Error().stack?.includes('at finish (') && refused++ === 0)
        throw Object.assign(new Error('database is locked'), { code: isPostgres() ? '55P03' : 'SQLITE_BUSY' });
      return write(...args);
    }) as typeof write;
    try {
      await t.imports.runner.drain(id);
    } finally {
      t.pipeline.write = write;
      t.recommendations.schedule = schedule;
    }
    expect(refused).toBe(1);
    const paused = (await a.get(`${BASE}/${id}`)).json();
    expect(paused).toMatchObject({ status: 'running', rows_processed: 2500, error: null });
    // Left alone for a moment (2 s), then resumed: nothing is written twice, one import.completed.
    await letTimePass(2100);
    await t.imports.runner.drain(id);
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed', rows_total: 2500, rows_succeeded: 2500, rows_failed: 0, error: null });
    const stored = await t.store.db
      .selectFrom('loads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', a.orgId)
      .where('external_reference_id', 'like', 'L-%')
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(2500);
    const completed = await t.store.db.selectFrom('events').select('type').where('org_id', '=', a.orgId).where('type', '=', 'import.completed').execute();
    expect(completed).toHaveLength(1);
  });
});
