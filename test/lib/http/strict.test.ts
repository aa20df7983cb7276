import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { editDistance, prefersStrict, suggestion } from '../../../src/lib/http/ignored-fields.js';

// D16: ignored fields named in Lanebridge-Ignored-Fields; Prefer: handling=strict and strict keys; empty contacts.

const t = useApp();

const strict = { prefer: 'handling=strict' };
const post = (a: Tenant, url: string, payload: unknown, headers: Record<string, string> = {}) =>
  a.request({ method: 'POST', url, payload: payload as never, headers });

describe('D16: ignored fields are named (lenient, the default)', () => {
  it('names unknown body fields, nested ones and query parameters, and still answers as before', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/carriers?dry_run=1', {
      external_reference_id: 'CAR-9',
      nmae: 'typo',
      name: 'Swift',
      address: { city: 'Dallas', zip: '75201' },
      contacts: [
        { first_name: 'Ann', phone_number: '555' },
        { primary_email: 'b@x.test', title: 'Ops' },
      ],
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['lanebridge-ignored-fields']).toBe('query.dry_run, body.nmae, body.address.zip, body.contacts[0].phone_number, body.contacts[1].title');
    expect(res.headers['preference-applied']).toBeUndefined();
    const body = json(res);
    expect(body.name).toBe('Swift');
    expect(body.address).toMatchObject({ city: 'Dallas', postal_code: null });
    expect(body.contacts.map((c: any) => [c.first_name, c.primary_phone, c.primary_email])).toEqual([
      ['Ann', null, null],
      [null, null, 'b@x.test'],
    ]);
  });

  it('a list with a misspelt filter says so (it returned every load before, and still does)', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    for (const ref of ['L1', 'L2']) expect((await a.post('/v2/tms-api/loads', dallasToHouston(ref))).statusCode).toBe(201);
    const res = await a.get('/v2/tms-api/loads?custmer_external_reference_id=NOPE&page_size=10');
    expect(res.statusCode).toBe(200);
    expect(res.headers['lanebridge-ignored-fields']).toBe('query.custmer_external_reference_id');
    expect(json(res).items).toHaveLength(2);
    // A known filter: nothing ignored, no header.
    const known = await a.get('/v2/tms-api/loads?customer_external_reference_id=NOPE');
    expect(known.headers['lanebridge-ignored-fields']).toBeUndefined();
    expect(json(known).items).toHaveLength(0);
    // A route without query parameters ignores any.
    const one = await a.get('/v2/tms-api/loads/L1?expand=stops');
    expect(one.statusCode).toBe(200);
    expect(one.headers['lanebridge-ignored-fields']).toBe('query.expand');
  });

  it('answers without the header when nothing was ignored', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/customers', { external_reference_id: 'C-1', name: 'Acme', phone: '555' });
    expect(res.statusCode).toBe(201);
    expect(res.headers['lanebridge-ignored-fields']).toBeUndefined();
  });

  it('a customer phone sent as phone_number is named (customers use phone)', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/customers', { external_reference_id: 'C-2', name: 'Acme', phone_number: '555' });
    expect(res.statusCode).toBe(201);
    expect(res.headers['lanebridge-ignored-fields']).toBe('body.phone_number');
    expect(json(res).phone).toBeNull();
  });

  it('names batch items’ data fields with their index, for the operation’s schema', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/batch/customers', {
      items: [
        { operation: 'create', customer: { external_reference_id: 'B-1', name: 'One' } },
        { operation: 'create', customer: { external_reference_id: 'B-2', name: 'Two', phone_number: '1' }, note: 'x' },
        { operation: 'upsert', customer: { external_reference_id: 'B-1', nme: 'typo' } },
      ],
      dry: true,
    });
    expect(res.statusCode).toBe(200);
    expect(json(res).success_count).toBe(3);
    expect(res.headers['lanebridge-ignored-fields']).toBe('body.items[1].note, body.dry, body.items[1].customer.phone_number, body.items[2].customer.nme');
  });

  it('also on an error answer, and on PUT', async () => {
    const a = await newTenant(t);
    const res = await a.put('/v2/tms-api/customers/NONE', { name: 'x', colour: 'red' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['lanebridge-ignored-fields']).toBe('body.colour');
  });

  it('counts them per key, route and field for the integration health page', async () => {
    const a = await newTenant(t);
    await a.post('/v2/tms-api/customers?trace=1', { external_reference_id: 'K-1', name: 'A', phone_number: '1' });
    await a.post('/v2/tms-api/customers', { external_reference_id: 'K-2', name: 'B', phone_number: '2' });
    await post(a, '/v2/tms-api/batch/customers', {
      items: [
        { operation: 'create', customer: { external_reference_id: 'K-3', name: 'C', phone_number: '3' } },
        { operation: 'create', customer: { external_reference_id: 'K-4', name: 'D', phone_number: '4' } },
      ],
    });
    // Strict requests refuse rather than ignore: not counted.
    await post(a, '/v2/tms-api/customers', { external_reference_id: 'K-5', name: 'E', phone_number: '5' }, strict);
    const rows = await ignoredCounts(a);
    expect(rows).toEqual([
      { key_id: a.keyId, route: 'POST /v2/tms-api/customers', field: 'body.phone_number', count: 2 },
      { key_id: a.keyId, route: 'POST /v2/tms-api/batch/customers', field: 'body.items[].customer.phone_number', count: 1 },
      { key_id: a.keyId, route: 'POST /v2/tms-api/customers', field: 'query.trace', count: 1 },
    ]);
  });
});

/** What the dashboard reads: the usage recorder's table once flushed (most counted first). */
async function ignoredCounts(a: Tenant) {
  await t.usage.flush();
  const rows = await t.usage.ignoredFields(a.orgId, '2000-01-01T00:00:00Z');
  return rows.map((r) => ({ key_id: r.key_id, route: r.route, field: r.field, count: Number(r.count) }));
}

describe('D16: Prefer: handling=strict', () => {
  it('refuses unknown fields with 422 unknown_field, a "did you mean", and Preference-Applied; nothing is written', async () => {
    const a = await newTenant(t);
    const res = await post(
      a,
      '/v2/tms-api/carriers?dryrun=1',
      { external_reference_id: 'CAR-S', name: 'Swift', emial: 'a@b.test', contacts: [{ first_name: 'Ann', phone_number: '555', primary_phnoe: '1' }] },
      strict,
    );
    expect(res.statusCode).toBe(422);
    expect(res.headers['preference-applied']).toBe('handling=strict');
    expect(res.headers['lanebridge-ignored-fields']).toBeUndefined();
    expect(json(res)).toEqual({
      detail: [
        { type: 'unknown_field', loc: ['query', 'dryrun'], msg: "Unknown field 'dryrun'" },
        { type: 'unknown_field', loc: ['body', 'emial'], msg: "Unknown field 'emial'; did you mean 'email'?" },
        { type: 'unknown_field', loc: ['body', 'contacts', 0, 'phone_number'], msg: "Unknown field 'phone_number' in contacts[0]" },
        {
          type: 'unknown_field',
          loc: ['body', 'contacts', 0, 'primary_phnoe'],
          msg: "Unknown field 'primary_phnoe' in contacts[0]; did you mean 'primary_phone'?",
        },
      ],
    });
    expect((await a.get('/v2/tms-api/carriers/CAR-S')).statusCode).toBe(404);
  });

  it('suggests the filter a misspelt query parameter meant', async () => {
    const a = await newTenant(t);
    const res = await a.request({ method: 'GET', url: '/v2/tms-api/loads?custmer_external_reference_id=X', headers: strict });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      {
        type: 'unknown_field',
        loc: ['query', 'custmer_external_reference_id'],
        msg: "Unknown field 'custmer_external_reference_id'; did you mean 'customer_external_reference_id'?",
      },
    ]);
  });

  it('names the unknown fields and the schema problems in one 422', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/customers', { external_reference_id: 'X', nmae: 'typo' }, strict);
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      { type: 'unknown_field', loc: ['body', 'nmae'], msg: "Unknown field 'nmae'; did you mean 'name'?" },
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required' },
    ]);
  });

  it('answers as usual when nothing is unknown, with Preference-Applied', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/customers', { external_reference_id: 'OK', name: 'Fine' }, { prefer: 'respond-async, handling=strict; x=1' });
    expect(res.statusCode).toBe(201);
    expect(res.headers['preference-applied']).toBe('handling=strict');
  });

  it('in a batch, an item with an unknown field fails alone (D6), the others are applied', async () => {
    const a = await newTenant(t);
    const res = await post(
      a,
      '/v2/tms-api/batch/customers',
      {
        items: [
          { operation: 'create', customer: { external_reference_id: 'S-1', name: 'One' } },
          { operation: 'create', customer: { external_reference_id: 'S-2', nam: 'Two' } },
          { operation: 'create', customer: { external_reference_id: 'S-3', name: 'Three' } },
        ],
      },
      strict,
    );
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body).toMatchObject({ success_count: 2, error_count: 1 });
    expect(body.results[1]).toEqual({
      index: 1,
      external_reference_id: 'S-2',
      operation: 'create',
      success: false,
      id: null,
      error: {
        status: 422,
        detail: [
          { type: 'unknown_field', loc: ['body', 'items', 1, 'customer', 'nam'], msg: "Unknown field 'nam' in items[1].customer; did you mean 'name'?" },
        ],
      },
    });
    expect((await a.get('/v2/tms-api/customers/S-2')).statusCode).toBe(404);
    expect((await a.get('/v2/tms-api/customers/S-3')).statusCode).toBe(200);
  });

  it('in a batch, an item after items with hundreds of unknown fields is still refused (each item is walked on its own)', async () => {
    const a = await newTenant(t);
    const wide = (ref: string) => ({ external_reference_id: ref, name: 'Wide', ...Object.fromEntries(Array.from({ length: 990 }, (_, i) => [`x${i}`, 1])) });
    const res = await post(
      a,
      '/v2/tms-api/batch/customers',
      {
        items: [
          { operation: 'create', customer: wide('W-1') },
          { operation: 'create', customer: wide('W-2') },
          { operation: 'create', customer: { external_reference_id: 'W-3', name: 'c', nmae: 'typo' } },
        ],
      },
      strict,
    );
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body).toMatchObject({ success_count: 0, error_count: 3 });
    expect(body.results[0].error).toMatchObject({ status: 422, truncated: true });
    expect(body.results[0].error.detail).toHaveLength(100);
    expect(body.results[2].error).toEqual({
      status: 422,
      detail: [
        { type: 'unknown_field', loc: ['body', 'items', 2, 'customer', 'nmae'], msg: "Unknown field 'nmae' in items[2].customer; did you mean 'name'?" },
      ],
    });
    expect((await a.get('/v2/tms-api/customers/W-3')).statusCode).toBe(404);
  });

  it('a "__proto__" key (as sent, or spelled with escapes) is an unknown field: named when lenient, refused when strict', async () => {
    const a = await newTenant(t);
    const headers = { 'content-type': 'application/json' };
    // Lenient: dropped as before, and now named like any other ignored field.
    const lenient = await a.request({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers,
      payload: '{"external_reference_id":"P-1","name":"x","nmae":"y","__proto__":{"phone":"666"}}',
    });
    expect(lenient.statusCode, lenient.body).toBe(201);
    expect(lenient.headers['lanebridge-ignored-fields']).toBe('body.nmae, body.__proto__');
    expect(json(lenient).phone).toBeNull();
    // Strict: 422 unknown_field, nothing written (it was 201 with Preference-Applied).
    const refused = await a.request({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { ...headers, ...strict },
      payload: '{"external_reference_id":"P-2","name":"x","\\u005f_proto__":{"phone":"666"}}',
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(json(refused).detail).toEqual([{ type: 'unknown_field', loc: ['body', '__proto__'], msg: "Unknown field '__proto__'" }]);
    expect((await a.get('/v2/tms-api/customers/P-2')).statusCode).toBe(404);
    // In a batch item's data: that item fails alone.
    const batch = await a.request({
      method: 'POST',
      url: '/v2/tms-api/batch/customers',
      headers: { ...headers, ...strict },
      payload:
        '{"items":[{"operation":"create","customer":{"external_reference_id":"P-3","name":"x"}},{"operation":"create","customer":{"external_reference_id":"P-4","name":"x","__proto__":{"phone":"666"}}}]}',
    });
    expect(batch.statusCode, batch.body).toBe(200);
    expect(json(batch)).toMatchObject({ success_count: 1, error_count: 1 });
    expect(json(batch).results[1].error).toEqual({
      status: 422,
      detail: [{ type: 'unknown_field', loc: ['body', 'items', 1, 'customer', '__proto__'], msg: "Unknown field '__proto__' in items[1].customer" }],
    });
    expect((await a.get('/v2/tms-api/customers/P-4')).statusCode).toBe(404);
  });

  it('an unknown field of the batch envelope refuses the request', async () => {
    const a = await newTenant(t);
    const res = await post(
      a,
      '/v2/tms-api/batch/customers',
      { itmes: [], items: [{ operation: 'create', customer: { external_reference_id: 'E-1', name: 'One' } }] },
      strict,
    );
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([{ type: 'unknown_field', loc: ['body', 'itmes'], msg: "Unknown field 'itmes'; did you mean 'items'?" }]);
    expect((await a.get('/v2/tms-api/customers/E-1')).statusCode).toBe(404);
  });

  it('handling=lenient, another preference or none: lenient', () => {
    expect(prefersStrict(undefined)).toBe(false);
    expect(prefersStrict('handling=lenient')).toBe(false);
    expect(prefersStrict('return=minimal')).toBe(false);
    expect(prefersStrict('Handling="STRICT"')).toBe(true);
    expect(prefersStrict(['return=minimal', 'handling=strict'])).toBe(true);
    // RFC 7240: the first occurrence wins.
    expect(prefersStrict('handling=lenient, handling=strict')).toBe(false);
  });

  it('suggests names one or two edits away only (a swap is one edit)', () => {
    expect(editDistance('nmae', 'name')).toBe(1);
    expect(editDistance('custmer_id', 'customer_id')).toBe(1);
    expect(editDistance('phone_number', 'phone')).toBeGreaterThan(2);
    expect(suggestion('emial', ['name', 'email', 'phone'])).toBe('email');
    expect(suggestion('Nmae', ['name'])).toBe('name');
    expect(suggestion('phone_number', ['first_name', 'primary_phone'])).toBeNull();
  });
});

describe('D16: strict keys', () => {
  it('a key made strict refuses unknown fields without Prefer, from its next request on', async () => {
    const a = await newTenant(t);
    const lenient = await a.post('/v2/tms-api/customers', { external_reference_id: 'K-1', name: 'A', nmae: 'x' });
    expect(lenient.statusCode).toBe(201);
    const summary = await t.services.accounts.setKeyStrict(a.orgId, a.keyId, true);
    expect(summary.strict).toBe(true);
    const refused = await a.post('/v2/tms-api/customers', { external_reference_id: 'K-2', name: 'A', nmae: 'x' });
    expect(refused.statusCode).toBe(422);
    expect(json(refused).detail).toEqual([{ type: 'unknown_field', loc: ['body', 'nmae'], msg: "Unknown field 'nmae'; did you mean 'name'?" }]);
    // A strict key's reads too (loads fold the key check into their statement on PostgreSQL).
    const list = await a.get('/v2/tms-api/loads?custmer_id=1');
    expect(list.statusCode).toBe(422);
    // Prefer: handling=lenient does not loosen a strict key.
    expect((await post(a, '/v2/tms-api/customers', { external_reference_id: 'K-3', name: 'A', nmae: 'x' }, { prefer: 'handling=lenient' })).statusCode).toBe(
      422,
    );
    await t.services.accounts.setKeyStrict(a.orgId, a.keyId, false);
    const again = await a.post('/v2/tms-api/customers', { external_reference_id: 'K-4', name: 'A', nmae: 'x' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['lanebridge-ignored-fields']).toBe('body.nmae');
  });

  it('a key created strict is strict; rotation keeps it', async () => {
    const a = await newTenant(t);
    const created = await t.services.accounts.createKey(a.orgId, {
      name: 'strict',
      externalSystem: 'test',
      scopes: ['read:customers', 'write:customers'],
      strict: true,
    });
    expect(created.strict).toBe(true);
    const rotated = await t.services.accounts.rotateKey(a.orgId, created.id);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/tms-api/customers',
      headers: { 'x-api-key': rotated.key },
      payload: { external_reference_id: 'R-1', name: 'A', nmae: 'x' },
    });
    expect(res.statusCode).toBe(422);
    expect((await t.services.accounts.listKeys(a.orgId)).find((k) => k.id === rotated.id)?.strict).toBe(true);
  });
});

describe('D16: a contact with no name, email or phone is refused in every mode', () => {
  const empty = { external_reference_id: 'CAR-E', name: 'Swift', contacts: [{ first_name: 'Ann' }, { name: 'Bob', phone_number: '555', email: 'bob@x.test' }] };
  const refusal = {
    type: 'value_error',
    loc: ['body', 'contacts', 1],
    msg: 'Value error, a contact needs at least one of first_name, last_name, primary_email or primary_phone',
  };

  it('on create (lenient: the fields sent under other names are named too)', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/carriers', empty);
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([refusal]);
    expect(res.headers['lanebridge-ignored-fields']).toBe('body.contacts[1].name, body.contacts[1].phone_number, body.contacts[1].email');
    expect((await a.get('/v2/tms-api/carriers/CAR-E')).statusCode).toBe(404);
  });

  it('on update, blank strings count as empty', async () => {
    const a = await newTenant(t);
    expect((await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-U', name: 'Swift', contacts: [{ first_name: 'Ann' }] })).statusCode).toBe(201);
    const res = await a.put('/v2/tms-api/carriers/CAR-U', {
      contacts: [{ first_name: 'Ann' }, { first_name: '  ', primary_email: null, is_primary_contact: true }],
    });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([refusal]);
    expect(json(await a.get('/v2/tms-api/carriers/CAR-U')).contacts).toHaveLength(1);
  });

  it('in a batch item, which fails alone', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/batch/carriers', {
      items: [
        { operation: 'create', carrier: empty },
        { operation: 'create', carrier: { external_reference_id: 'CAR-OK', name: 'Fine', contacts: [{ primary_phone: '555' }] } },
      ],
    });
    const body = json(res);
    expect(body.results[0].error).toEqual({ status: 422, detail: [{ ...refusal, loc: ['body', 'items', 0, 'carrier', 'contacts', 1] }] });
    expect(body.results[1].success).toBe(true);
  });

  it('in strict mode too', async () => {
    const a = await newTenant(t);
    const res = await post(a, '/v2/tms-api/carriers', { external_reference_id: 'CAR-E', name: 'Swift', contacts: [{}] }, strict);
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([{ ...refusal, loc: ['body', 'contacts', 0] }]);
  });
});
