import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, uid } from '../../helpers.js';

const t = useApp();

const base = '/v2/tms-api/customers';

describe('customers: create and get', () => {
  it('creates a customer (201) with defaults and returns every field', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, { external_reference_id: 'CUST-ACME-001', name: 'Acme Manufacturing', phone: '+1-555-0100' });
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body).toMatchObject({
      external_reference_id: 'CUST-ACME-001',
      name: 'Acme Manufacturing',
      phone: '+1-555-0100',
      reference_number: null,
      domain: null,
      customer_type: null,
      is_active: true,
    });
    expect(body.id).toMatch(/^cust_[0-9a-z]{26}$/);
    expect(body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(body.updated_at).toBe(body.created_at);
    const got = await a.get(`${base}/CUST-ACME-001`);
    expect(got.statusCode).toBe(200);
    expect(json(got)).toEqual(body);
  });

  it('answers 409 with the D1 text for a duplicate external_reference_id', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'CUST-ACME-001', name: 'Acme' });
    const res = await a.post(base, { external_reference_id: 'CUST-ACME-001', name: 'Other' });
    expect(res.statusCode).toBe(409);
    expect(json(res)).toEqual({ detail: "Customer with external_reference_id 'CUST-ACME-001' already exists" });
    const list = json(await a.get(base));
    expect(list.items).toHaveLength(1);
    expect(list.items[0].name).toBe('Acme');
  });

  it('lets two organizations use the same external_reference_id, and never shows one the other', async () => {
    const a = await newTenant(t);
    const b = await newTenant(t);
    expect((await a.post(base, { external_reference_id: 'SHARED', name: 'A' })).statusCode).toBe(201);
    expect((await b.post(base, { external_reference_id: 'SHARED', name: 'B' })).statusCode).toBe(201);
    expect(json(await a.get(`${base}/SHARED`)).name).toBe('A');
    expect(json(await b.get(`${base}/SHARED`)).name).toBe('B');
    const onlyA = await a.post(base, { external_reference_id: 'ONLY-A', name: 'A2' });
    expect((await b.get(`${base}/ONLY-A`)).statusCode).toBe(404);
    expect((await b.put(`${base}/ONLY-A`, { name: 'hijack' })).statusCode).toBe(404);
    expect((await b.del(`${base}/${json(onlyA).id}`)).statusCode).toBe(404);
    expect(json(await b.get(base)).items.map((c: any) => c.name)).toEqual(['B']);
  });

  it('answers 422 Field required for each missing required field', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, {});
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      { type: 'missing', loc: ['body', 'external_reference_id'], msg: 'Field required' },
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required' },
    ]);
  });

  it.each([
    ['reference_number', 100],
    ['domain', 255],
    ['phone', 50],
    ['customer_type', 50],
  ])('enforces the %s length limit of %i characters', async (field, limit) => {
    const a = await newTenant(t);
    const ok = await a.post(base, { external_reference_id: uid(), name: 'n', [field]: 'x'.repeat(limit) });
    expect(ok.statusCode).toBe(201);
    expect(json(ok)[field]).toHaveLength(limit);
    const res = await a.post(base, { external_reference_id: uid(), name: 'n', [field]: 'x'.repeat(limit + 1) });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([{ type: 'string_too_long', loc: ['body', field], msg: `String should have at most ${limit} characters` }]);
  });

  it('refuses wrong types with pydantic-style entries', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, { external_reference_id: 42, name: ['x'], is_active: 'yes' });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([
      { type: 'string_type', loc: ['body', 'external_reference_id'], msg: 'Input should be a valid string' },
      { type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string' },
      { type: 'bool_parsing', loc: ['body', 'is_active'], msg: 'Input should be a valid boolean, unable to interpret input' },
    ]);
  });

  it('ignores unknown body fields', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, { external_reference_id: 'C1', name: 'n', favourite_colour: 'blue' });
    expect(res.statusCode).toBe(201);
    expect(json(res)).not.toHaveProperty('favourite_colour');
  });

  it('answers 404 with the D1 text for an unknown customer', async () => {
    const a = await newTenant(t);
    const res = await a.get(`${base}/NOPE-1`);
    expect(res.statusCode).toBe(404);
    expect(json(res)).toEqual({ detail: "Customer with external_reference_id 'NOPE-1' not found" });
  });

  it('keeps one record and answers 409 to the rest when the same id is created concurrently', async () => {
    const a = await newTenant(t);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => a.post(base, { external_reference_id: 'RACE-1', name: `racer ${i}` })));
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    expect(json(await a.get(base)).pagination.total).toBe(1);
  });
});

describe('customers: update and delete', () => {
  it('changes only the fields sent, and null clears an optional field', async () => {
    const a = await newTenant(t);
    const created = json(await a.post(base, { external_reference_id: 'C1', name: 'Acme', phone: '1', domain: 'acme.test', customer_type: 'shipper' }));
    t.clock.advance(5);
    const res = await a.put(`${base}/C1`, { phone: '2', domain: null, is_active: false });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body).toMatchObject({ id: created.id, name: 'Acme', phone: '2', domain: null, customer_type: 'shipper', is_active: false });
    expect(body.created_at).toBe(created.created_at);
    expect(body.updated_at > created.updated_at).toBe(true);
    expect(json(await a.get(`${base}/C1`))).toEqual(body);
  });

  it('leaves updated_at alone when nothing changes', async () => {
    const a = await newTenant(t);
    const created = json(await a.post(base, { external_reference_id: 'C1', name: 'Acme' }));
    t.clock.advance(5);
    const body = json(await a.put(`${base}/C1`, { name: 'Acme' }));
    expect(body.updated_at).toBe(created.updated_at);
  });

  it('refuses a different external_reference_id in the body (422) and accepts the same one', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'C1', name: 'Acme' });
    const res = await a.put(`${base}/C1`, { external_reference_id: 'C2', name: 'x' });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'external_reference_id'] });
    expect(json(await a.get(`${base}/C1`)).name).toBe('Acme');
    expect((await a.put(`${base}/C1`, { external_reference_id: 'C1', name: 'Acme 2' })).statusCode).toBe(200);
  });

  it('refuses null for the required name and over-long values on update', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'C1', name: 'Acme' });
    const res = await a.put(`${base}/C1`, { name: null, phone: 'x'.repeat(51) });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail.map((d: any) => [d.type, d.loc.join('.')])).toEqual([
      ['string_type', 'body.name'],
      ['string_too_long', 'body.phone'],
    ]);
  });

  it('answers 404 to an update of an unknown customer', async () => {
    const a = await newTenant(t);
    const res = await a.put(`${base}/GHOST`, { name: 'x' });
    expect(res.statusCode).toBe(404);
    expect(json(res)).toEqual({ detail: "Customer with external_reference_id 'GHOST' not found" });
  });

  it('deletes by external_reference_id or by service id (204), then 404', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'C1', name: 'one' });
    const two = json(await a.post(base, { external_reference_id: 'C2', name: 'two' }));
    const byRef = await a.del(`${base}/C1`);
    expect(byRef.statusCode).toBe(204);
    expect(byRef.body).toBe('');
    const byId = await a.del(`${base}/${two.id}`);
    expect(byId.statusCode).toBe(204);
    expect((await a.get(`${base}/C1`)).statusCode).toBe(404);
    expect((await a.get(`${base}/C2`)).statusCode).toBe(404);
    const again = await a.del(`${base}/C1`);
    expect(again.statusCode).toBe(404);
    expect(json(again)).toEqual({ detail: "Customer with external_reference_id 'C1' not found" });
  });
});

describe('customers: list', () => {
  async function seed() {
    const a = await newTenant(t);
    const names = ['Delta Foods', 'alpha Steel', 'Charlie Paper', 'bravo Logistics', 'Echo Paper Mills'];
    for (const [i, name] of names.entries()) {
      await a.post(base, {
        external_reference_id: `C${i}`,
        name,
        is_active: i % 2 === 0,
        customer_type: i < 2 ? 'shipper' : 'consignee',
      });
      t.clock.advance(3);
    }
    return a;
  }

  it('returns both pagination shapes, default page 1 of 50 in created_at order', async () => {
    const a = await seed();
    const body = json(await a.get(base));
    expect(body.items.map((c: any) => c.external_reference_id)).toEqual(['C0', 'C1', 'C2', 'C3', 'C4']);
    expect(body.pagination).toEqual({
      page: 1,
      page_size: 50,
      total: 5,
      total_items: 5,
      total_pages: 1,
      has_more: false,
      has_next: false,
      has_previous: false,
    });
  });

  it('pages with page and page_size, and a page past the end is empty', async () => {
    const a = await seed();
    const p2 = json(await a.get(`${base}?page=2&page_size=2`));
    expect(p2.items.map((c: any) => c.external_reference_id)).toEqual(['C2', 'C3']);
    expect(p2.pagination).toEqual({
      page: 2,
      page_size: 2,
      total: 5,
      total_items: 5,
      total_pages: 3,
      has_more: true,
      has_next: true,
      has_previous: true,
    });
    const p3 = json(await a.get(`${base}?page=3&page_size=2`));
    expect(p3.pagination).toMatchObject({ has_next: false, has_more: false, has_previous: true });
    const past = await a.get(`${base}?page=9&page_size=2`);
    expect(past.statusCode).toBe(200);
    expect(json(past)).toMatchObject({ items: [], pagination: { page: 9, total: 5, has_next: false } });
  });

  it('filters by name_contains (case-insensitive), is_active and customer_type together', async () => {
    const a = await seed();
    const byName = json(await a.get(`${base}?name_contains=PAPER`));
    expect(byName.items.map((c: any) => c.name)).toEqual(['Charlie Paper', 'Echo Paper Mills']);
    const combined = json(await a.get(`${base}?name_contains=paper&is_active=true&customer_type=consignee`));
    expect(combined.items.map((c: any) => c.name)).toEqual(['Charlie Paper', 'Echo Paper Mills']);
    const inactive = json(await a.get(`${base}?is_active=false`));
    expect(inactive.items.map((c: any) => c.external_reference_id)).toEqual(['C1', 'C3']);
    const wildcard = json(await a.get(`${base}?name_contains=${encodeURIComponent('%')}`));
    expect(wildcard.items).toEqual([]);
  });

  it('sorts by name ascending and descending, ties broken by id', async () => {
    const a = await seed();
    const asc = json(await a.get(`${base}?sort=name`)).items.map((c: any) => c.name);
    expect(asc).toEqual(['Charlie Paper', 'Delta Foods', 'Echo Paper Mills', 'alpha Steel', 'bravo Logistics']);
    const desc = json(await a.get(`${base}?sort=-name`)).items.map((c: any) => c.name);
    expect(desc).toEqual([...asc].reverse());
    const byCreatedDesc = json(await a.get(`${base}?sort=-created_at`)).items.map((c: any) => c.external_reference_id);
    expect(byCreatedDesc).toEqual(['C4', 'C3', 'C2', 'C1', 'C0']);
  });

  it('keeps a stable order on ties across pages', async () => {
    const a = await newTenant(t);
    for (let i = 0; i < 7; i++) await a.post(base, { external_reference_id: `T${i}`, name: 'Same Name' });
    const seen: string[] = [];
    for (let page = 1; page <= 4; page++) {
      seen.push(...json(await a.get(`${base}?sort=name&page_size=2&page=${page}`)).items.map((c: any) => c.id));
    }
    expect(seen).toHaveLength(7);
    expect(new Set(seen).size).toBe(7);
    expect(seen).toEqual([...seen].sort());
  });

  it('supports updated_since and created_since for delta sync', async () => {
    const a = await seed();
    t.clock.advance(10);
    const mark = t.clock.now().toISOString();
    t.clock.advance(10);
    await a.put(`${base}/C1`, { name: 'alpha Steel Renamed' });
    await a.post(base, { external_reference_id: 'C9', name: 'New' });
    const updated = json(await a.get(`${base}?updated_since=${encodeURIComponent(mark)}`));
    expect(updated.items.map((c: any) => c.external_reference_id)).toEqual(['C1', 'C9']);
    const created = json(await a.get(`${base}?created_since=${encodeURIComponent(mark)}`));
    expect(created.items.map((c: any) => c.external_reference_id)).toEqual(['C9']);
  });

  it('answers 422 with query locs for bad paging, sort and filter values', async () => {
    const a = await newTenant(t);
    const res = await a.get(`${base}?page=0&page_size=101&sort=phone&is_active=maybe&updated_since=yesterday`);
    expect(res.statusCode).toBe(422);
    const detail = json(res).detail;
    expect(detail).toEqual(
      expect.arrayContaining([
        { type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1' },
        { type: 'less_than_equal', loc: ['query', 'page_size'], msg: 'Input should be less than or equal to 100' },
        expect.objectContaining({ type: 'enum', loc: ['query', 'sort'] }),
        expect.objectContaining({ type: 'bool_parsing', loc: ['query', 'is_active'] }),
        expect.objectContaining({ type: 'datetime_parsing', loc: ['query', 'updated_since'] }),
      ]),
    );
    expect(detail).toHaveLength(5);
    const zero = await a.get(`${base}?page_size=0`);
    expect(json(zero).detail).toEqual([{ type: 'greater_than_equal', loc: ['query', 'page_size'], msg: 'Input should be greater than or equal to 1' }]);
    const notInt = await a.get(`${base}?page=abc`);
    expect(json(notInt).detail[0]).toMatchObject({ type: 'int_parsing', loc: ['query', 'page'] });
  });
});
