import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant } from '../helpers.js';
import { dallasToHouston, seedFreight } from '../fixtures.js';

// Issue 30's API edges: date-only pickup_date_to, GET/PUT by service id, the 401 message, events after the newest.

const t = useApp();

describe('pickup_date_to with a bare date includes that day', () => {
  it('a pickup at 08:00 on the day is in; the day before is out; a time keeps its meaning', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    // First pickup early_arrival 2026-03-02T08:00:00Z.
    expect((await a.post('/v2/tms-api/loads', dallasToHouston('L-1'))).statusCode).toBe(201);
    const refs = async (q: string) => {
      const res = await a.get(`/v2/tms-api/loads?${q}`);
      expect(res.statusCode, res.body).toBe(200);
      return json(res).items.map((l: any) => l.external_reference_id);
    };
    expect(await refs('pickup_date_to=2026-03-02')).toEqual(['L-1']);
    expect(await refs('pickup_date_from=2026-03-02&pickup_date_to=2026-03-02')).toEqual(['L-1']);
    expect(await refs('pickup_date_to=2026-03-01')).toEqual([]);
    expect(await refs('pickup_date_to=2026-03-02T07:59:59Z')).toEqual([]);
    expect(await refs('pickup_date_to=2026-03-02T08:00:00Z')).toEqual(['L-1']);
    // pickup_date_from with a bare date is still that day's start.
    expect(await refs('pickup_date_from=2026-03-03')).toEqual([]);
    // An impossible date is still refused.
    const bad = await a.get('/v2/tms-api/loads?pickup_date_to=2026-02-30');
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0]).toMatchObject({ type: 'datetime_parsing', loc: ['query', 'pickup_date_to'] });
  });
});

describe('GET and PUT take the service id, as DELETE does', () => {
  it('customers, carriers, locations and loads by id; the recommendations too', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    const load = json(await a.post('/v2/tms-api/loads', dallasToHouston('L-ID')));
    for (const [collection, ref] of [
      ['customers', 'CUST-1'],
      ['carriers', 'CAR-1'],
      ['locations', 'DAL'],
      ['loads', 'L-ID'],
    ] as const) {
      const byRef = json(await a.get(`/v2/tms-api/${collection}/${ref}`));
      const byId = await a.get(`/v2/tms-api/${collection}/${byRef.id}`);
      expect(byId.statusCode, `${collection} ${byId.body}`).toBe(200);
      expect(json(byId)).toEqual(byRef);
    }
    const put = await a.put(`/v2/tms-api/customers/${json(await a.get('/v2/tms-api/customers/CUST-1')).id}`, {
      name: 'Acme Renamed',
      external_reference_id: 'CUST-1',
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(json(put)).toMatchObject({ external_reference_id: 'CUST-1', name: 'Acme Renamed' });
    const putLoad = await a.put(`/v2/tms-api/loads/${load.id}`, { description: 'by id' });
    expect(putLoad.statusCode, putLoad.body).toBe(200);
    expect(json(putLoad)).toMatchObject({ external_reference_id: 'L-ID', description: 'by id' });
    const recs = await a.get(`/v2/tms-api/loads/${load.id}/carrier-recommendations`);
    expect(recs.statusCode, recs.body).toBe(200);
    expect(json(recs).external_reference_id).toBe('L-ID');
  });

  it('a reference that looks like an id wins over an id; an unknown id is the D1 404 naming it', async () => {
    const a = await newTenant(t);
    const first = json(await a.post('/v2/tms-api/customers', { external_reference_id: 'FIRST', name: 'First' }));
    // Another customer whose reference is the first one's id.
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: first.id, name: 'Tricky' })).statusCode).toBe(201);
    expect(json(await a.get(`/v2/tms-api/customers/${first.id}`)).name).toBe('Tricky');
    const missing = await a.get('/v2/tms-api/customers/cust_01jzzzzzzzzzzzzzzzzzzzzzzz');
    expect(missing.statusCode).toBe(404);
    expect(json(missing)).toEqual({ detail: "Customer with external_reference_id 'cust_01jzzzzzzzzzzzzzzzzzzzzzzz' not found" });
    // Another organization's id is not found.
    const b = await newTenant(t);
    expect((await b.get(`/v2/tms-api/customers/${first.id}`)).statusCode).toBe(404);
    expect((await b.put(`/v2/tms-api/customers/${first.id}`, { name: 'x' })).statusCode).toBe(404);
  });
});

describe('the 401 names the header', () => {
  it('missing and wrong keys', async () => {
    for (const headers of [{}, { 'x-api-key': 'lbk_nope' }, { authorization: 'Bearer lbk_x' }]) {
      const res = await t.app.inject({ method: 'GET', url: '/v2/tms-api/customers', headers });
      expect(res.statusCode).toBe(401);
      expect(json(res)).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key: send it in the X-API-Key header' } });
    }
  });
});

describe('events: an after past the newest event', () => {
  it('is a 422 that says so (a restored database); after = the newest is an empty page', async () => {
    const a = await newTenant(t);
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'E-1', name: 'One' })).statusCode).toBe(201);
    expect((await a.post('/v2/tms-api/customers', { external_reference_id: 'E-2', name: 'Two' })).statusCode).toBe(201);
    const all = json(await a.get('/v2/tms-api/events'));
    const newest = all.next_after;
    expect(all.items).toHaveLength(2);
    expect(json(await a.get(`/v2/tms-api/events?after=${newest}`))).toEqual({ items: [], next_after: newest, has_more: false });
    const past = await a.get(`/v2/tms-api/events?after=${newest + 5}`);
    expect(past.statusCode).toBe(422);
    expect(json(past)).toEqual({
      detail: [
        {
          type: 'less_than_equal',
          loc: ['query', 'after'],
          msg: `after (${newest + 5}) is past the newest event of this organization (sequence ${newest}): the feed was probably restored from an older backup; resynchronise with the list endpoints and updated_since, then continue from after=${newest}`,
        },
      ],
    });
    // A new organization has none: any after above 0 is past it.
    const b = await newTenant(t);
    expect((await b.get('/v2/tms-api/events?after=1')).statusCode).toBe(422);
    expect((await b.get('/v2/tms-api/events?after=0')).statusCode).toBe(200);
  });
});
