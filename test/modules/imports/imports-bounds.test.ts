import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgres, newTenant, startAppOn, type Tenant, type TestApp } from '../../helpers.js';
import { freshPgDatabase, pgAdminUrl } from '../../reliability/support.js';

// D21's imports bullet (docs/imports.md, "Bounds"). The app has a database of its own on PostgreSQL:
// its runner drains every organization's imports and its retention deletes them.

let t: TestApp;
let dir: string;
let own: { url: string; drop(): Promise<void> } | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lanebridge-imports-bounds-'));
  if (isPostgres()) own = await freshPgDatabase(pgAdminUrl()!, `imports_bounds_${process.pid}`);
  t = await startAppOn(
    own?.url ?? null,
    { importsDir: dir, importChunkRows: 50, importChunkMs: 0, importMaxUploadBytes: 200_000, importPartTimeoutMs: 400 },
    { importRunner: 'manual' },
  );
});
afterAll(async () => {
  await t.close();
  await own?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const BASE = '/v2/tms-api/imports';
const tenant = () => newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
const putPart = (a: Tenant, id: string, n: number, payload: string | Buffer, headers: Record<string, string> = {}) =>
  a.request({ method: 'PUT', url: `${BASE}/${id}/parts/${n}`, payload, headers: { 'content-type': 'application/x-ndjson', ...headers } });

async function created(a: Tenant, body: Record<string, unknown>): Promise<string> {
  const res = await a.post(BASE, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

/** Creates, uploads one part and completes an import of customers; returns its id. */
async function queued(a: Tenant, body: Record<string, unknown>, part: string | Buffer, type = 'application/x-ndjson'): Promise<string> {
  const id = await created(a, { resource: 'customers', ...body });
  const up = await putPart(a, id, 1, part, { 'content-type': type });
  expect(up.statusCode, up.body).toBe(200);
  const done = await a.post(`${BASE}/${id}/complete`, undefined);
  expect(done.statusCode, done.body).toBe(200);
  return id;
}

const errorLines = async (a: Tenant, id: string) =>
  (await a.get(`${BASE}/${id}/errors`)).body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { row: number; external_reference_id: string | null; detail: unknown });

describe('CSV column paths', () => {
  it.each([
    ['x.100000000.y', 'names position 100000000; stops, rates and contacts count from 1 to at most 99'],
    ['stops.100.name', 'names position 100; stops, rates and contacts count from 1 to at most 99'],
    ['a.b.c.d.e.f.g', 'is a field path of 7 parts; a path has at most 6 (such as stops.2.contacts.1.email)'],
    [`${'x.'.repeat(50_000)}y`, 'is a field path of 50001 parts; a path has at most 6 (such as stops.2.contacts.1.email)'],
    ['stops.0.stop_type', 'names position "0"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['contacts.01.name', 'names position "01"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['stops.1e2.stop_type', 'names position "1e2"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['stops.+100000000.x', 'names position "+100000000"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['stops.-1.x', 'names position "-1"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['stops..x', 'has an empty part in its field path; write it as names and positions joined by single dots (such as stops.2.early_arrival)'],
    ['name', 'fills the same field as the column "name": drop one, or map it to another field in csv.columns'],
  ])('%# a column past the bounds is refused at complete with 422 naming it, nothing queued', async (column, says) => {
    const a = await tenant();
    const id = await created(a, { resource: 'customers', format: 'csv' });
    const csv = `external_reference_id,name,${column}\nC-1,One,1\n`;
    expect((await putPart(a, id, 1, csv, { 'content-type': 'text/csv' })).statusCode).toBe(200);
    const done = await a.post(`${BASE}/${id}/complete`, undefined);
    expect(done.statusCode).toBe(422);
    const name = JSON.stringify(column.length > 100 ? `${column.slice(0, 100)}…` : column);
    expect(done.json()).toEqual({ detail: [{ type: 'value_error', loc: ['body'], msg: `Value error, the CSV column ${name} ${says}` }] });
    expect((await a.get(`${BASE}/${id}`)).json().status).toBe('awaiting_upload');
  });

  it.each([
    ['contacts.x.first_name', 'names position "x"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['contacts.Infinity.first_name', 'names position "Infinity"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['contacts.\u0661.first_name', 'names position "\u0661"; stops, rates and contacts count from 1 to at most 99, written as plain digits'],
    ['contacts. 1.first_name', 'fills the same field as the column "contacts.1.first_name": drop one, or map it to another field in csv.columns'],
  ])('%# a carrier column the record cannot place (a name for a position, a field filled twice) is refused at complete', async (column, says) => {
    const a = await tenant();
    const id = await created(a, { resource: 'carriers', format: 'csv' });
    expect(
      (await putPart(a, id, 1, `external_reference_id,name,contacts.1.first_name,${column}\nCAR-1,One,Ann,Bob\n`, { 'content-type': 'text/csv' })).statusCode,
    ).toBe(200);
    const done = await a.post(`${BASE}/${id}/complete`, undefined);
    expect(done.statusCode).toBe(422);
    expect(done.json()).toEqual({ detail: [{ type: 'value_error', loc: ['body'], msg: `Value error, the CSV column ${JSON.stringify(column)} ${says}` }] });
  });

  it('takes stops.99 (within the bounds)', async () => {
    const a = await tenant();
    const id = await created(a, { resource: 'customers', format: 'csv' });
    expect((await putPart(a, id, 1, 'external_reference_id,name,contacts.99.name\nC-1,One,Ann\n', { 'content-type': 'text/csv' })).statusCode).toBe(200);
    expect((await a.post(`${BASE}/${id}/complete`, undefined)).statusCode).toBe(200);
  });
});

describe('a part for an id this service never makes', () => {
  it('is 404 before the database is asked (a NUL in the id was a 500 on PostgreSQL)', async () => {
    const a = await tenant();
    for (const id of ['%00', 'imp_%00', `imp_${'x'.repeat(70)}`, 'IMP_01']) {
      const res = await putPart(a, id, 1, '{}');
      expect(res.statusCode, id).toBe(404);
      expect(res.json(), id).toEqual({ detail: `Import with id '${decodeURIComponent(id)}' not found` });
    }
  });
});

describe('quotas', () => {
  it('refuses a fourth import awaiting its upload with 409 naming the limit; one completed frees a place', async () => {
    const a = await tenant();
    const ids = [await created(a, { resource: 'customers' }), await created(a, { resource: 'customers' }), await created(a, { resource: 'customers' })];
    const fourth = await a.post(BASE, { resource: 'customers' });
    expect(fourth.statusCode).toBe(409);
    expect(fourth.json()).toEqual({
      detail:
        'This organization has 3 imports awaiting their upload, the most it may have at once: complete or cancel one (POST /v2/tms-api/imports/{id}/complete or /cancel) first',
    });
    expect((await a.get(`${BASE}?status=awaiting_upload`)).json().pagination.total).toBe(3);
    expect((await a.post(`${BASE}/${ids[0]}/cancel`, undefined)).statusCode).toBe(200);
    expect((await a.post(BASE, { resource: 'customers' })).statusCode).toBe(201);
    // Another organization has places of its own.
    expect((await (await tenant()).post(BASE, { resource: 'customers' })).statusCode).toBe(201);
  });

  it('refuses a part past IMPORT_MAX_UPLOAD_BYTES (200,000 here) of the organization with 413 naming the limit, keeping nothing of it', async () => {
    const a = await tenant();
    const first = await created(a, { resource: 'customers' });
    const second = await created(a, { resource: 'customers' });
    expect((await putPart(a, first, 1, 'x'.repeat(120_000))).json()).toEqual({ id: first, part: 1, bytes: 120_000 });
    const over = await putPart(a, second, 1, 'y'.repeat(100_000));
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({
      detail:
        'The unfinished imports of this organization may hold at most 200000 bytes of parts in all (IMPORT_MAX_UPLOAD_BYTES); they hold 120000 bytes without this part (this part was not kept): complete, cancel or wait for an import first',
    });
    expect((await a.get(`${BASE}/${second}`)).json()).toMatchObject({ parts: 0, bytes_total: 0 });
    // A part sent again replaces its bytes: 190,000 in place of 120,000.
    expect((await putPart(a, first, 1, 'z'.repeat(190_000))).statusCode).toBe(200);
    expect((await a.get(`${BASE}/${first}`)).json()).toMatchObject({ parts: 1, bytes_total: 190_000 });
    expect((await putPart(a, second, 1, 'y'.repeat(10_001))).statusCode).toBe(413);
    expect((await putPart(a, second, 1, 'y'.repeat(10_000))).statusCode).toBe(200);
  });
});

describe('the errors file', () => {
  it('keeps the first 10,000 refused rows (rows_failed counts all) and cuts each reference to 256 characters', async () => {
    const a = await tenant();
    const long = `R${'x'.repeat(999)}`;
    const lines = [JSON.stringify({ external_reference_id: long }), ...Array.from({ length: 10_049 }, () => 'x')];
    const id = await queued(a, {}, Buffer.from(`${lines.join('\n')}\n`));
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed_with_errors', rows_failed: 10_050, rows_processed: 10_050 });
    const errors = await errorLines(a, id);
    expect(errors).toHaveLength(10_000);
    expect(errors[0]).toEqual({
      row: 1,
      external_reference_id: long.slice(0, 256),
      detail: [{ type: 'string_too_long', loc: ['body', 'external_reference_id'], msg: 'String should have at most 255 characters' }],
    });
    expect(errors[1]).toEqual({ row: 2, external_reference_id: null, detail: expect.stringMatching(/^Malformed JSON body: /) });
    expect(errors[9_999]!.row).toBe(10_000);
  });

  it('goes with its import and its parts 30 days after the import ended', async () => {
    const a = await tenant();
    const id = await queued(a, {}, '{"external_reference_id":"C-1"}\n');
    await t.imports.runner.drain();
    expect((await errorLines(a, id)).map((e) => e.row)).toEqual([1]);
    t.clock.advance(29 * 86_400_000);
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${id}`)).statusCode).toBe(200);
    t.clock.advance(2 * 86_400_000);
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${id}`)).json()).toEqual({ detail: `Import with id '${id}' not found` });
    expect((await a.get(`${BASE}/${id}/errors`)).statusCode).toBe(404);
    const left = await t.store.db.selectFrom('import_errors').select('row').where('import_id', '=', id).execute();
    expect(left).toEqual([]);
    expect(existsSync(join(dir, id))).toBe(false);
  });
});

describe('imports of different organizations', () => {
  it('run side by side: a 1-row import of one ends while a long one of another runs', async () => {
    const a = await tenant();
    const b = await tenant();
    const rows = Array.from({ length: 1_500 }, (_, i) => JSON.stringify({ external_reference_id: `C-${i}`, name: `Customer ${i}` }));
    const long = await queued(a, {}, `${rows.join('\n')}\n`);
    const short = await queued(b, {}, '{"external_reference_id":"C-1","name":"One"}\n');
    await t.imports.runner.drain();
    const [l, s] = [(await a.get(`${BASE}/${long}`)).json(), (await b.get(`${BASE}/${short}`)).json()];
    expect(l).toMatchObject({ status: 'completed', rows_succeeded: 1_500 });
    expect(s).toMatchObject({ status: 'completed', rows_succeeded: 1 });
    expect(Date.parse(s.finished_at)).toBeLessThan(Date.parse(l.finished_at));
    expect(Date.parse(s.started_at)).toBeLessThan(Date.parse(l.finished_at));
  });
});

describe('strict imports', () => {
  it('created with strict: true, refuses rows with unknown fields, naming them', async () => {
    const a = await tenant();
    const lines = ['{"external_reference_id":"C-1","name":"One","nmae":"x"}', '{"external_reference_id":"C-2","name":"Two"}'];
    const id = await queued(a, { strict: true }, `${lines.join('\n')}\n`);
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ strict: true });
    await t.imports.runner.drain();
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ status: 'completed_with_errors', rows_succeeded: 1, rows_failed: 1 });
    expect(await errorLines(a, id)).toEqual([
      { row: 1, external_reference_id: 'C-1', detail: [{ type: 'unknown_field', loc: ['body', 'nmae'], msg: "Unknown field 'nmae'; did you mean 'name'?" }] },
    ]);
    expect((await a.get('/v2/tms-api/customers/C-1')).statusCode).toBe(404);
  });

  it('created by a strict key, refuses a CSV row whose column is no field', async () => {
    const a = await tenant();
    await t.services.accounts.setKeyStrict(a.orgId, a.keyId, true);
    const id = await queued(a, { format: 'csv' }, 'external_reference_id,name,colour\nC-1,One,red\nC-2,Two,\n', 'text/csv');
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ strict: true });
    await t.imports.runner.drain();
    expect(await errorLines(a, id)).toEqual([
      { row: 1, external_reference_id: 'C-1', detail: [{ type: 'unknown_field', loc: ['body', 'colour'], msg: "Unknown field 'colour'" }] },
    ]);
    expect((await a.get('/v2/tms-api/customers/C-2')).statusCode).toBe(200);
  });
});

describe('invalid UTF-8', () => {
  it('refuses an NDJSON line with its row number and byte offset, never replaced', async () => {
    const a = await tenant();
    const file = Buffer.concat([
      Buffer.from('{"external_reference_id":"C-1","name":"One"}\n'),
      Buffer.from('{"external_reference_id":"C-2","name":"Caf\xe9"}\n', 'latin1'),
    ]);
    const id = await queued(a, {}, file);
    await t.imports.runner.drain();
    expect(await errorLines(a, id)).toEqual([
      {
        row: 2,
        external_reference_id: null,
        detail: 'The line is not UTF-8 at its byte 42 (counted from 0): save the file as UTF-8 (a Windows-1252 or Latin-1 export is not)',
      },
    ]);
    expect((await a.get('/v2/tms-api/customers/C-2')).statusCode).toBe(404);
  });

  it('refuses a Windows-1252 CSV record naming its column and byte, the others go in', async () => {
    const a = await tenant();
    const file = Buffer.concat([Buffer.from('external_reference_id,name\nC-1,Zoë\n'), Buffer.from('C-2,Ren\xe9e\n', 'latin1')]);
    const id = await queued(a, { format: 'csv' }, file, 'text/csv');
    await t.imports.runner.drain();
    expect(await errorLines(a, id)).toEqual([
      {
        row: 2,
        external_reference_id: null,
        detail: 'The column "name" is not UTF-8 at its byte 3 (counted from 0): save the file as UTF-8 (a Windows-1252 or Latin-1 export is not)',
      },
    ]);
    expect((await a.get('/v2/tms-api/customers/C-1')).json().name).toBe('Zoë');
  });
});

describe('part uploads', () => {
  it('an Idempotency-Key takes the bytes into account: the same bytes replay, other bytes are 422', async () => {
    const a = await tenant();
    const id = await created(a, { resource: 'customers' });
    const key = { 'idempotency-key': 'part-1-once' };
    const first = await putPart(a, id, 1, 'abc\n', key);
    expect(first.json()).toEqual({ id, part: 1, bytes: 4 });
    const again = await putPart(a, id, 1, 'abc\n', key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual({ id, part: 1, bytes: 4 });
    const other = await putPart(a, id, 1, 'other bytes\n', key);
    expect(other.statusCode).toBe(422);
    expect(other.json().detail[0]).toMatchObject({ type: 'idempotency_key_reused', loc: ['header', 'idempotency-key'] });
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ bytes_total: 4 });
    // An empty body is an empty part, as before.
    expect((await putPart(a, id, 2, '')).json()).toEqual({ id, part: 2, bytes: 0 });
  });

  it('a part that does not arrive within its time (400 ms here, 10 minutes by default) is answered 408', async () => {
    const a = await tenant();
    const id = await created(a, { resource: 'customers' });
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${address}${BASE}/${id}/parts/1`,
        { method: 'PUT', headers: { ...a.headers, 'content-type': 'application/x-ndjson', 'content-length': '1000' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      // A tenth of the body, then nothing.
      req.write('x'.repeat(100));
    });
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({ detail: 'The part did not arrive within 0.4 seconds: send it again, or in smaller parts' });
    expect((await a.get(`${BASE}/${id}`)).json()).toMatchObject({ bytes_total: 0 });
  });
});
