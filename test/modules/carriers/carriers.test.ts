import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant } from '../../helpers.js';

const t = useApp();

const base = '/v2/tms-api/carriers';

const sampleCarrier = {
  external_reference_id: 'CARRIER-001',
  name: 'Swift Transport',
  mc_number: 'MC123456',
  dot_number: 'DOT789012',
  phone_number: '+1-555-0199',
  email: 'dispatch@swift.test',
  address: { address_line1: '1 Main St', city: 'Phoenix', state: 'AZ', postal_code: '85001', country: 'US' },
  contacts: [
    { first_name: 'Ann', last_name: 'Lee', primary_email: 'ann@swift.test', primary_phone: '555-1', is_primary_contact: true },
    { first_name: 'Bob', last_name: 'Ray' },
  ],
};

describe('carriers', () => {
  it('creates a carrier (201) with contacts that carry ids, and an address', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, sampleCarrier);
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body.id).toMatch(/^carrier_/);
    expect(body).toMatchObject({
      external_reference_id: 'CARRIER-001',
      name: 'Swift Transport',
      mc_number: 'MC123456',
      dot_number: 'DOT789012',
      phone_number: '+1-555-0199',
      email: 'dispatch@swift.test',
      address: { address_line1: '1 Main St', address_line2: null, city: 'Phoenix', state: 'AZ', postal_code: '85001', country: 'US' },
    });
    expect(body.contacts).toHaveLength(2);
    expect(body.contacts[0]).toEqual({
      id: expect.stringMatching(/^contact_/),
      first_name: 'Ann',
      last_name: 'Lee',
      primary_email: 'ann@swift.test',
      primary_phone: '555-1',
      is_primary_contact: true,
    });
    expect(body.contacts[1]).toMatchObject({ first_name: 'Bob', primary_email: null, is_primary_contact: false });
    expect(json(await a.get(`${base}/CARRIER-001`))).toEqual(body);
  });

  it('returns address null and no contacts when none were sent', async () => {
    const a = await newTenant(t);
    const body = json(await a.post(base, { external_reference_id: 'C2', name: 'Bare' }));
    expect(body).toMatchObject({ address: null, contacts: [], mc_number: null, dot_number: null });
  });

  it('409 on duplicate, 404 on unknown, 422 on missing fields', async () => {
    const a = await newTenant(t);
    await a.post(base, sampleCarrier);
    const dup = await a.post(base, sampleCarrier);
    expect(dup.statusCode).toBe(409);
    expect(json(dup)).toEqual({ detail: "Carrier with external_reference_id 'CARRIER-001' already exists" });
    const missing = await a.get(`${base}/NOPE`);
    expect(json(missing)).toEqual({ detail: "Carrier with external_reference_id 'NOPE' not found" });
    const bad = await a.post(base, { contacts: [{ first_name: 5 }] });
    expect(json(bad).detail).toEqual([
      { type: 'missing', loc: ['body', 'external_reference_id'], msg: 'Field required' },
      { type: 'missing', loc: ['body', 'name'], msg: 'Field required' },
      { type: 'string_type', loc: ['body', 'contacts', 0, 'first_name'], msg: 'Input should be a valid string' },
    ]);
  });

  it('update replaces contacts: a contact sent with its id keeps it, new ones get new ids, absent ones go', async () => {
    const a = await newTenant(t);
    const created = json(await a.post(base, sampleCarrier));
    const [ann, bob] = created.contacts;
    const res = await a.put(`${base}/CARRIER-001`, {
      phone_number: '+1-555-0000',
      contacts: [{ id: bob.id, first_name: 'Robert', last_name: 'Ray', is_primary_contact: true }, { first_name: 'Cy' }],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.phone_number).toBe('+1-555-0000');
    expect(body.name).toBe('Swift Transport');
    expect(body.contacts.map((c: any) => c.first_name)).toEqual(['Robert', 'Cy']);
    expect(body.contacts[0].id).toBe(bob.id);
    expect(body.contacts[1].id).not.toBe(ann.id);
    expect(body.contacts[1].id).toMatch(/^contact_/);
    expect(json(await a.get(`${base}/CARRIER-001`)).contacts).toEqual(body.contacts);
  });

  it('refuses a contact id that is not one of this carrier’s, and changes nothing', async () => {
    const a = await newTenant(t);
    const other = json(await a.post(base, { ...sampleCarrier, external_reference_id: 'OTHER' }));
    const mine = json(await a.post(base, sampleCarrier));
    const res = await a.put(`${base}/CARRIER-001`, { name: 'Renamed', contacts: [{ id: other.contacts[0].id, first_name: 'Stolen' }] });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([expect.objectContaining({ type: 'value_error', loc: ['body', 'contacts', 0, 'id'] })]);
    expect(json(await a.get(`${base}/CARRIER-001`))).toEqual(mine);
    expect(json(await a.get(`${base}/OTHER`))).toEqual(other);
  });

  it('updates every field but external_reference_id; null clears; address is replaced whole', async () => {
    const a = await newTenant(t);
    await a.post(base, sampleCarrier);
    const body = json(await a.put(`${base}/CARRIER-001`, { name: 'Swift 2', mc_number: null, email: 'new@swift.test', address: { city: 'Tempe' } }));
    expect(body).toMatchObject({ name: 'Swift 2', mc_number: null, email: 'new@swift.test', dot_number: 'DOT789012' });
    expect(body.address).toEqual({ address_line1: null, address_line2: null, city: 'Tempe', state: null, postal_code: null, country: null });
    expect(body.contacts).toHaveLength(2);
    const cleared = json(await a.put(`${base}/CARRIER-001`, { address: null, contacts: [] }));
    expect(cleared.address).toBeNull();
    expect(cleared.contacts).toEqual([]);
    const change = await a.put(`${base}/CARRIER-001`, { external_reference_id: 'NEW-ID' });
    expect(change.statusCode).toBe(422);
  });

  it('lists with name_contains, deprecated mc_number, dot_number filters and sorts, contacts included', async () => {
    const a = await newTenant(t);
    await a.post(base, { ...sampleCarrier, external_reference_id: 'A', name: 'Swift Transport', dot_number: 'DOT3', mc_number: 'MC1' });
    await a.post(base, { external_reference_id: 'B', name: 'Knight Freight', dot_number: 'DOT1', mc_number: 'MC2' });
    await a.post(base, { external_reference_id: 'C', name: 'swiftly Moving', dot_number: 'DOT2' });
    const swift = json(await a.get(`${base}?name_contains=SWIFT&sort=name`));
    expect(swift.items.map((c: any) => c.external_reference_id)).toEqual(['A', 'C']);
    expect(swift.items[0].contacts).toHaveLength(2);
    expect(swift.pagination).toMatchObject({ total: 2, total_items: 2, has_next: false, has_more: false });
    expect(json(await a.get(`${base}?mc_number=MC2`)).items.map((c: any) => c.external_reference_id)).toEqual(['B']);
    expect(json(await a.get(`${base}?dot_number=DOT2`)).items.map((c: any) => c.external_reference_id)).toEqual(['C']);
    expect(json(await a.get(`${base}?sort=dot_number`)).items.map((c: any) => c.dot_number)).toEqual(['DOT1', 'DOT2', 'DOT3']);
    expect(json(await a.get(`${base}?sort=-dot_number`)).items.map((c: any) => c.dot_number)).toEqual(['DOT3', 'DOT2', 'DOT1']);
    const bad = await a.get(`${base}?sort=email`);
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0]).toMatchObject({ type: 'enum', loc: ['query', 'sort'] });
  });

  it('deletes a carrier and its contacts by reference or id', async () => {
    const a = await newTenant(t);
    const created = json(await a.post(base, sampleCarrier));
    expect((await a.del(`${base}/${created.id}`)).statusCode).toBe(204);
    expect((await a.get(`${base}/CARRIER-001`)).statusCode).toBe(404);
    const contacts = await t.store.db.selectFrom('carrier_contacts').selectAll().where('carrier_id', '=', created.id).execute();
    expect(contacts).toEqual([]);
  });
});
