/**
 * D21, one request: a body's sizes are checked before its schema runs and before JSON.parse builds it
 * (docs/api.md "Bounds of a request"), a 422 lists at most 100 problems, and bytes that are not UTF-8
 * are refused with their offset. Hostile bodies go over real HTTP beside another tenant's GET (inject
 * would serialize them), so a held event loop shows as a slow GET.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedFreight, dallasToHouston } from '../../fixtures.js';
import { useApp, newTenant, type Tenant } from '../../helpers.js';

let base: string;
let hostile: Tenant;
let bystander: Tenant;

const t = useApp();
beforeAll(async () => {
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  hostile = await newTenant(t);
  bystander = await newTenant(t);
  await seedFreight(bystander);
});

async function send(tenant: Tenant, method: string, path: string, body?: string | Uint8Array) {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': tenant.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: body as BodyInit }),
  });
  const json = (await res.json()) as any;
  return { status: res.status, json, ms: performance.now() - started };
}

/** The hostile request, and another tenant's GET sent as it goes: the GET answers within a second. */
async function besideAGet(method: string, path: string, body: string | Uint8Array) {
  const answer = send(hostile, method, path, body);
  const get = await send(bystander, 'GET', '/v2/tms-api/customers/CUST-1');
  expect(get.status).toBe(200);
  expect(get.json.name).toBe('Acme Foods');
  expect(get.ms).toBeLessThan(1000);
  return answer;
}

const invalidStop = '{"stop_type":"Nope","location_external_reference_id":7,"early_arrival":"x","late_arrival":"y"}';
const loadWithStops = (stops: string) =>
  `{"external_reference_id":"L-1","equipment_type":"DRY_VAN","transport_mode":"FTL","customer_external_reference_id":"CUST-1","stops":[${stops}]}`;
const repeat = (unit: string, n: number) => `${unit},`.repeat(n - 1) + unit;

describe('bounds of one request (D21)', () => {
  it('a batch of ~3.5 million {} items under the 10 MiB limit is refused 422 at once, and the server lives', async () => {
    const count = Math.floor((t.config.batchBodyLimitBytes - 12) / 3);
    const body = `{"items":[${repeat('{}', count)}]}`;
    expect(body.length).toBeLessThanOrEqual(t.config.batchBodyLimitBytes);
    expect(body.length).toBeGreaterThan(10_000_000);
    const res = await besideAGet('POST', '/v2/tms-api/batch/loads', body);
    expect(res.status).toBe(422);
    expect(res.json.detail).toEqual([
      {
        type: 'too_long',
        loc: ['body', 'items'],
        msg: 'List too large to read: the body holds more than 50,000 objects and arrays (passed at item 49,998 of this list); no request of this API needs as many (docs/api.md, Bounds of a request)',
      },
    ]);
    // Sending 10 MiB is part of it; the bound is generous for a loaded machine.
    expect(res.ms).toBeLessThan(3000);
    const after = await send(hostile, 'GET', '/v2/tms-api/loads');
    expect(after.status).toBe(200);
  });

  it('10,000 invalid stops: 422 within a second with the first 100 problems and truncated', async () => {
    const res = await besideAGet('POST', '/v2/tms-api/loads', loadWithStops(repeat(invalidStop, 10_000)));
    expect(res.status).toBe(422);
    expect(res.ms).toBeLessThan(1000);
    expect(res.json.truncated).toBe(true);
    expect(res.json.detail).toHaveLength(100);
    expect(res.json.detail[0]).toEqual({ type: 'too_long', loc: ['body', 'stops'], msg: 'List should have at most 100 items after validation, not 10000' });
    // The rest are the problems of the first stops, in order; none past the 100th stop was looked at.
    expect(res.json.detail[1]).toMatchObject({ type: 'enum', loc: ['body', 'stops', 0, 'stop_type'] });
    for (const issue of res.json.detail.slice(1)) expect(issue.loc[2]).toBeLessThan(100);
    const none = await send(hostile, 'GET', '/v2/tms-api/loads/L-1');
    expect(none.status).toBe(404);
  });

  it('a list cut to its bound fails the request even when what is left is valid', async () => {
    const stop = JSON.stringify(dallasToHouston('X').stops[0]);
    const res = await send(bystander, 'POST', '/v2/tms-api/loads', loadWithStops(repeat(stop, 150)).replace('"L-1"', '"L-CUT"'));
    expect(res.status).toBe(422);
    expect(res.json).toEqual({ detail: [{ type: 'too_long', loc: ['body', 'stops'], msg: 'List should have at most 100 items after validation, not 150' }] });
    expect((await send(bystander, 'GET', '/v2/tms-api/loads/L-CUT')).status).toBe(404);
  });

  it('a batch item over its bounds fails alone; an item with more than 100 problems lists 100 and says truncated', async () => {
    const good = JSON.stringify({ operation: 'create', load: dallasToHouston('L-BATCH-OK') });
    const tooMany = `{"operation":"create","load":${loadWithStops(repeat(invalidStop, 150)).replace('"L-1"', '"L-BATCH-150"')}}`;
    const manyProblems = `{"operation":"create","load":${loadWithStops(repeat(invalidStop, 60)).replace('"L-1"', '"L-BATCH-60"')}}`;
    const res = await send(bystander, 'POST', '/v2/tms-api/batch/loads', `{"items":[${good},${tooMany},${manyProblems}]}`);
    expect(res.status).toBe(200);
    expect(res.json.success_count).toBe(1);
    expect(res.json.results[0]).toMatchObject({ success: true, external_reference_id: 'L-BATCH-OK' });
    expect(res.json.results[1].error).toEqual({
      status: 422,
      detail: [{ type: 'too_long', loc: ['body', 'items', 1, 'load', 'stops'], msg: 'List should have at most 100 items after validation, not 150' }],
    });
    expect(res.json.results[2].error.status).toBe(422);
    expect(res.json.results[2].error.truncated).toBe(true);
    expect(res.json.results[2].error.detail).toHaveLength(100);
    expect(res.json.results[2].error.detail[0].loc.slice(0, 5)).toEqual(['body', 'items', 2, 'load', 'stops']);
  });

  it('nesting deeper than 32 levels is refused 422 before it is parsed, naming where', async () => {
    const depth = 500_000;
    const res = await besideAGet('POST', '/v2/tms-api/customers', `{"name":"x","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    expect(res.status).toBe(422);
    expect(res.json.detail).toHaveLength(1);
    expect(res.json.detail[0].type).toBe('value_error');
    expect(res.json.detail[0].loc).toEqual(['body', 'extra', ...Array(31).fill(0)]);
    expect(res.json.detail[0].msg).toBe('Value error, objects and arrays nest more than 32 levels deep here; no field of this API nests more than 7');
    expect(res.ms).toBeLessThan(1000);
  });

  it('an object of more than 1,000 fields is refused 422 before it is parsed (unknown fields, a CSV column map)', async () => {
    const fields = Array.from({ length: 90_000 }, (_, i) => `"f${i}":1`).join(',');
    const res = await besideAGet('POST', '/v2/tms-api/customers', `{"external_reference_id":"CUST-WIDE","name":"x",${fields}}`);
    expect(res.status).toBe(422);
    expect(res.json.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body'],
        msg: 'Value error, this object has more than 1,000 fields; no object of this API has as many (docs/api.md, Bounds of a request)',
      },
    ]);
    expect(res.ms).toBeLessThan(1000);
    const columns = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`col${i}`, 'name']));
    const csv = await send(bystander, 'POST', '/v2/tms-api/imports', JSON.stringify({ resource: 'customers', format: 'csv', csv: { columns } }));
    expect(csv.status).toBe(422);
    expect(csv.json.detail[0].loc).toEqual(['body', 'csv', 'columns']);
  });

  it('bytes that are not UTF-8 are refused 400 with their offset, never replaced', async () => {
    const text = Buffer.from('{"external_reference_id":"CUST-UTF","name":"Caf\u00e9 X"}');
    // "é" is C3 A9; the byte after it (the space) becomes a lone continuation byte.
    const at = text.indexOf(Buffer.from(' X"'));
    text[at] = 0xa9;
    const res = await send(bystander, 'POST', '/v2/tms-api/customers', text);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      detail: `Malformed JSON body: the body is not valid UTF-8 at byte offset ${at} (counted from 0); send the JSON text encoded as UTF-8`,
    });
    expect((await send(bystander, 'GET', '/v2/tms-api/customers/CUST-UTF')).status).toBe(404);

    // An overlong encoding of "/" (C0 AF) and a lone surrogate encoded as UTF-8 (ED A0 80) are not UTF-8 either.
    for (const bad of [
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
    ]) {
      const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bad), Buffer.from('"}')]);
      const refused = await send(bystander, 'POST', '/v2/tms-api/customers', body);
      expect(refused.json.detail).toContain('not valid UTF-8 at byte offset 9 ');
    }

    // Valid multi-byte text is kept as sent.
    const ok = await send(bystander, 'POST', '/v2/tms-api/customers', Buffer.from('{"external_reference_id":"CUST-UTF","name":"Caf\u00e9 \u{1F69A}"}'));
    expect(ok.status).toBe(201);
    expect(ok.json.name).toBe('Caf\u00e9 \u{1F69A}');
  });

  it('a compressed body is refused 415 before it is read; a byte order mark is ignored; an empty body where a route takes none is accepted', async () => {
    const { gzipSync } = await import('node:zlib');
    const headers = { 'x-api-key': hostile.key, 'content-type': 'application/json' };
    const gz = await fetch(`${base}/v2/tms-api/customers`, {
      method: 'POST',
      headers: { ...headers, 'content-encoding': 'gzip' },
      body: gzipSync('{"external_reference_id":"GZ","name":"g"}'),
    });
    expect(gz.status).toBe(415);
    expect(await gz.json()).toEqual({ detail: "Unsupported Content-Encoding 'gzip': send the body uncompressed (no Content-Encoding, or 'identity')" });
    expect((await send(hostile, 'GET', '/v2/tms-api/customers/GZ')).status).toBe(404);

    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"external_reference_id":"BOM","name":"b"}')]);
    const withBom = await send(hostile, 'POST', '/v2/tms-api/customers', bom);
    expect(withBom.status).toBe(201);
    expect(withBom.json).toMatchObject({ external_reference_id: 'BOM', name: 'b' });

    const del = await fetch(`${base}/v2/tms-api/customers/BOM`, { method: 'DELETE', headers });
    expect(del.status).toBe(204);
    expect((await send(hostile, 'GET', '/v2/tms-api/customers/BOM')).status).toBe(404);
    // A route that takes a body still says an empty one is empty.
    const empty = await fetch(`${base}/v2/tms-api/customers`, { method: 'POST', headers, body: '' });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ detail: expect.stringContaining('the body is empty') });
  });
});
