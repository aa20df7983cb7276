import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant } from '../../helpers.js';

const t = useApp();

const base = '/v2/tms-api/locations';

const FIELDS = [
  'id',
  'external_reference_id',
  'name',
  'address_line1',
  'address_line2',
  'city',
  'state',
  'postal_code',
  'country',
  'latitude',
  'longitude',
  'email',
  'phone_number',
  'weekday_open_hours',
  'weekday_close_hours',
  'weekend_open_hours',
  'weekend_close_hours',
  'internal_notes',
  'timezone',
  'geocode_source',
  'created_at',
  'updated_at',
];

describe('locations: create and geocoding routes', () => {
  it('postal route: ZIP + state fills coordinates, time zone, state as US-TX; every field present', async () => {
    const a = await newTenant(t);
    const res = await a.post(base, {
      external_reference_id: 'LOC-DAL-1',
      name: 'Dallas Cross-Dock',
      address_line1: '1 Commerce St',
      city: 'Dallas',
      postal_code: '75201',
      state: 'TX',
      weekday_open_hours: '07:00',
      weekday_close_hours: '17:30',
      weekend_open_hours: '00:00',
      weekend_close_hours: '24:00',
      internal_notes: 'Dock 4 for reefers',
    });
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(Object.keys(body).sort()).toEqual([...FIELDS].sort());
    expect(body).toMatchObject({
      state: 'US-TX',
      country: 'US',
      postal_code: '75201',
      geocode_source: 'postal_code',
      timezone: 'America/Chicago',
      address_line2: null,
      email: null,
      weekday_open_hours: '07:00',
      weekend_close_hours: '24:00',
    });
    expect(body.id).toMatch(/^loc_/);
    expect(body.latitude).toBeCloseTo(32.79, 1);
    expect(body.longitude).toBeCloseTo(-96.8, 1);
    expect(json(await a.get(`${base}/LOC-DAL-1`))).toEqual(body);
  });

  it('postal route accepts ZIP+4, US-TX form, Puerto Rico and Canadian postal codes', async () => {
    const a = await newTenant(t);
    const zip4 = json(await a.post(base, { external_reference_id: 'Z4', name: 'z', postal_code: '75201-1234', state: 'us-tx' }));
    expect(zip4).toMatchObject({ state: 'US-TX', postal_code: '75201-1234', geocode_source: 'postal_code' });
    const pr = json(await a.post(base, { external_reference_id: 'PR', name: 'San Juan', postal_code: '00901', state: 'PR' }));
    expect(pr).toMatchObject({ state: 'US-PR', country: 'US', timezone: 'America/Puerto_Rico' });
    const ca = json(await a.post(base, { external_reference_id: 'TOR', name: 'Toronto', postal_code: 'M5V 2T6', state: 'ON', country: 'ca' }));
    expect(ca).toMatchObject({ state: 'CA-ON', country: 'CA', timezone: 'America/Toronto' });
    expect(ca.latitude).toBeCloseTo(43.6, 0);
  });

  it('coordinate route infers state and time zone; country defaults to US', async () => {
    const a = await newTenant(t);
    const body = json(await a.post(base, { external_reference_id: 'CHI', name: 'Chicago', latitude: 41.8781, longitude: -87.6298 }));
    expect(body).toMatchObject({
      state: 'US-IL',
      country: 'US',
      geocode_source: 'coordinates',
      timezone: 'America/Chicago',
      latitude: 41.8781,
      longitude: -87.6298,
    });
  });

  it.each([
    ['Kansas City, Missouri', 39.0997, -94.5786, 'US', 'US-MO'],
    ['Kansas City, Kansas', 39.1141, -94.6275, 'US', 'US-KS'],
    ['Texarkana, Texas', 33.4251, -94.0477, 'US', 'US-TX'],
    ['Texarkana, Arkansas', 33.4418, -94.0377, 'US', 'US-AR'],
    ['Detroit', 42.3314, -83.0458, 'US', 'US-MI'],
    ['Windsor', 42.3149, -83.0364, 'CA', 'CA-ON'],
    ['El Paso', 31.7619, -106.485, 'US', 'US-TX'],
    ['Ciudad Juárez', 31.6904, -106.4245, 'MX', 'MX-CHH'],
    ['Mexico City', 19.4326, -99.1332, 'MX', 'MX-CMX'],
    ['Jersey City', 40.7178, -74.0431, 'US', 'US-NJ'],
    ['Manhattan', 40.7831, -73.9712, 'US', 'US-NY'],
  ])('resolves %s to its own subdivision', async (name, latitude, longitude, country, state) => {
    const a = await newTenant(t);
    const res = await a.post(base, { external_reference_id: 'B', name, latitude, longitude, country });
    expect(res.statusCode).toBe(201);
    expect(json(res)).toMatchObject({ state, country });
  });

  it('resolves a point just off the simplified coastline (end of Santa Monica pier, Key West)', async () => {
    const a = await newTenant(t);
    const pier = json(await a.post(base, { external_reference_id: 'PIER', name: 'pier', latitude: 34.0083, longitude: -118.4988 }));
    expect(pier.state).toBe('US-CA');
    const key = json(await a.post(base, { external_reference_id: 'KEY', name: 'key west', latitude: 24.5551, longitude: -81.78 }));
    expect(key.state).toBe('US-FL');
  });

  it('coordinates keep a state as sent; coordinates that resolve nowhere are still geocoded with state null', async () => {
    const a = await newTenant(t);
    const sent = json(await a.post(base, { external_reference_id: 'S', name: 's', latitude: 32.78, longitude: -96.8, state: 'TX' }));
    expect(sent.state).toBe('US-TX');
    const sea = json(await a.post(base, { external_reference_id: 'SEA', name: 'mid-Atlantic', latitude: 35, longitude: -50 }));
    expect(sea).toMatchObject({ state: null, country: 'US', geocode_source: 'coordinates' });
  });

  it('coordinates win over a postal code when both are sent', async () => {
    const a = await newTenant(t);
    const body = json(
      await a.post(base, { external_reference_id: 'BOTH', name: 'b', latitude: 41.8781, longitude: -87.6298, postal_code: '75201', state: 'IL' }),
    );
    expect(body).toMatchObject({ geocode_source: 'coordinates', state: 'US-IL', postal_code: '75201', latitude: 41.8781 });
  });
});

describe('locations: validation', () => {
  async function issues(body: Record<string, unknown>) {
    const a = await newTenant(t);
    const res = await a.post(base, { external_reference_id: 'V', name: 'v', ...body });
    expect(res.statusCode).toBe(422);
    return json(res).detail as { type: string; loc: (string | number)[]; msg: string }[];
  }

  it('requires a geocoding route', async () => {
    expect(await issues({})).toEqual([{ type: 'value_error', loc: ['body', 'latitude'], msg: expect.stringContaining('a location must be geocodable') }]);
  });

  it('requires state on the postal route', async () => {
    expect(await issues({ postal_code: '75201' })).toEqual([
      { type: 'missing', loc: ['body', 'state'], msg: expect.stringContaining('state is required when the location is geocoded by postal_code') },
    ]);
  });

  it('refuses a postal code of another state, an unknown one, and Mexican postal codes, saying why', async () => {
    const mismatch = await issues({ postal_code: '75201', state: 'OK' });
    expect(mismatch).toEqual([{ type: 'value_error', loc: ['body', 'postal_code'], msg: expect.stringContaining('is in US-TX') }]);
    const unknown = await issues({ postal_code: '00000', state: 'TX' });
    expect(unknown[0]).toMatchObject({ type: 'value_error', loc: ['body', 'postal_code'] });
    expect(unknown[0]!.msg).toMatch(/00000/);
    const mx = await issues({ postal_code: '06600', state: 'CMX', country: 'MX' });
    expect(mx).toEqual([{ type: 'value_error', loc: ['body', 'postal_code'], msg: expect.stringContaining('send latitude and longitude') }]);
  });

  it('refuses unknown subdivisions and subdivisions of another country', async () => {
    const unknown = await issues({ latitude: 32.7, longitude: -96.8, state: 'XX' });
    expect(unknown[0]).toMatchObject({ type: 'value_error', loc: ['body', 'state'] });
    const other = await issues({ postal_code: 'M5V 2T6', state: 'ON' });
    expect(other).toEqual([{ type: 'value_error', loc: ['body', 'state'], msg: expect.stringContaining('CA-ON') }]);
    const qualified = await issues({ latitude: 43.6, longitude: -79.3, state: 'CA-ON', country: 'US' });
    expect(qualified[0]!.loc).toEqual(['body', 'state']);
  });

  it('refuses an unknown country', async () => {
    const bad = await issues({ latitude: 10, longitude: 10, country: 'ZZ' });
    expect(bad[0]).toMatchObject({ type: 'value_error', loc: ['body', 'country'] });
  });

  it('checks coordinate ranges and that latitude and longitude come together', async () => {
    expect(await issues({ latitude: 91, longitude: -181 })).toEqual([
      { type: 'less_than_equal', loc: ['body', 'latitude'], msg: 'Input should be less than or equal to 90' },
      { type: 'greater_than_equal', loc: ['body', 'longitude'], msg: 'Input should be greater than or equal to -180' },
    ]);
    expect(await issues({ latitude: 30 })).toEqual([
      { type: 'value_error', loc: ['body', 'longitude'], msg: expect.stringContaining('latitude and longitude go together') },
    ]);
    expect((await issues({ latitude: '30', longitude: -97 }))[0]).toMatchObject({ type: 'float_parsing', loc: ['body', 'latitude'] });
  });

  it('checks hours as HH:MM (close may be 24:00) and internal_notes length', async () => {
    const res = await issues({
      latitude: 32.7,
      longitude: -96.8,
      weekday_open_hours: '24:00',
      weekday_close_hours: '7:00',
      weekend_open_hours: '12:60',
      weekend_close_hours: '24:01',
      internal_notes: 'n'.repeat(2001),
    });
    expect(res.map((i) => [i.type, i.loc.join('.')])).toEqual([
      ['string_pattern_mismatch', 'body.weekday_open_hours'],
      ['string_pattern_mismatch', 'body.weekday_close_hours'],
      ['string_pattern_mismatch', 'body.weekend_open_hours'],
      ['string_pattern_mismatch', 'body.weekend_close_hours'],
      ['string_too_long', 'body.internal_notes'],
    ]);
  });

  it('409 on a duplicate, 404 on unknown get/update', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'D', name: 'd', latitude: 30, longitude: -97 });
    const dup = await a.post(base, { external_reference_id: 'D', name: 'd', latitude: 30, longitude: -97 });
    expect(json(dup)).toEqual({ detail: "Location with external_reference_id 'D' already exists" });
    expect(json(await a.get(`${base}/NOPE`))).toEqual({ detail: "Location with external_reference_id 'NOPE' not found" });
    expect((await a.put(`${base}/NOPE`, { name: 'x' })).statusCode).toBe(404);
  });
});

describe('locations: update and re-geocoding', () => {
  it('a partial update of other fields leaves the geocode alone', async () => {
    const a = await newTenant(t);
    const created = json(await a.post(base, { external_reference_id: 'L', name: 'l', postal_code: '75201', state: 'TX' }));
    const body = json(await a.put(`${base}/L`, { name: 'Renamed', weekday_open_hours: '06:00', email: 'dock@x.test' }));
    expect(body).toMatchObject({
      name: 'Renamed',
      weekday_open_hours: '06:00',
      email: 'dock@x.test',
      latitude: created.latitude,
      state: 'US-TX',
      geocode_source: 'postal_code',
    });
  });

  it('a new postal code re-geocodes (state must still match)', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'L', name: 'l', postal_code: '75201', state: 'TX' });
    const houston = json(await a.put(`${base}/L`, { postal_code: '77002' }));
    expect(houston).toMatchObject({ postal_code: '77002', state: 'US-TX' });
    expect(houston.latitude).toBeCloseTo(29.75, 1);
    const wrong = await a.put(`${base}/L`, { postal_code: '60601' });
    expect(wrong.statusCode).toBe(422);
    expect(json(wrong).detail[0]).toMatchObject({ loc: ['body', 'postal_code'] });
    const moved = json(await a.put(`${base}/L`, { postal_code: '60601', state: 'IL' }));
    expect(moved).toMatchObject({ state: 'US-IL', timezone: 'America/Chicago' });
    expect(json(await a.get(`${base}/L`))).toEqual(moved);
  });

  it('new coordinates re-geocode, infer the state again, and assume US when country is omitted', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'L', name: 'l', postal_code: '75201', state: 'TX' });
    const kc = json(await a.put(`${base}/L`, { latitude: 39.0997, longitude: -94.5786 }));
    expect(kc).toMatchObject({ state: 'US-MO', country: 'US', geocode_source: 'coordinates' });
    await a.post(base, { external_reference_id: 'T', name: 't', postal_code: 'M5V 2T6', state: 'ON', country: 'CA' });
    const vancouver = json(await a.put(`${base}/T`, { latitude: 49.2827, longitude: -123.1207, country: 'CA' }));
    expect(vancouver).toMatchObject({ state: 'CA-BC', country: 'CA', timezone: 'America/Vancouver' });
    const noCountry = json(await a.put(`${base}/T`, { latitude: 49.2827, longitude: -123.1207 }));
    expect(noCountry).toMatchObject({ country: 'US', state: null });
  });

  it('refuses to change external_reference_id', async () => {
    const a = await newTenant(t);
    await a.post(base, { external_reference_id: 'L', name: 'l', latitude: 30, longitude: -97 });
    const res = await a.put(`${base}/L`, { external_reference_id: 'OTHER' });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail[0].loc).toEqual(['body', 'external_reference_id']);
  });

  it('deletes by reference or id', async () => {
    const a = await newTenant(t);
    const l = json(await a.post(base, { external_reference_id: 'L', name: 'l', latitude: 30, longitude: -97 }));
    expect((await a.del(`${base}/${l.id}`)).statusCode).toBe(204);
    expect((await a.get(`${base}/L`)).statusCode).toBe(404);
  });
});

describe('locations: list', () => {
  it('filters by state (TX or US-TX), city (case-insensitive), name_contains, postal_code, country; sorts', async () => {
    const a = await newTenant(t);
    const rows = [
      { external_reference_id: 'A', name: 'Dallas North', city: 'Dallas', postal_code: '75201', state: 'TX' },
      { external_reference_id: 'B', name: 'Houston Port', city: 'Houston', postal_code: '77002', state: 'TX' },
      { external_reference_id: 'C', name: 'Chicago Rail', city: 'Chicago', postal_code: '60601', state: 'IL' },
      { external_reference_id: 'D', name: 'Toronto DC', city: 'Toronto', postal_code: 'M5V 2T6', state: 'ON', country: 'CA' },
    ];
    for (const r of rows) expect((await a.post(base, r)).statusCode).toBe(201);
    const refs = async (q: string) => json(await a.get(`${base}?${q}`)).items.map((l: any) => l.external_reference_id);
    expect(await refs('state=TX')).toEqual(['A', 'B']);
    expect(await refs('state=US-TX&sort=-name')).toEqual(['B', 'A']);
    expect(await refs('state=ON&country=CA')).toEqual(['D']);
    expect(await refs('city=dallas')).toEqual(['A']);
    expect(await refs('name_contains=RAIL')).toEqual(['C']);
    expect(await refs('postal_code=77002')).toEqual(['B']);
    expect(await refs('country=ca')).toEqual(['D']);
    expect(await refs('sort=city')).toEqual(['C', 'A', 'B', 'D']);
    // US-TX (ties by id, descending), US-IL, CA-ON
    expect(await refs('sort=-state')).toEqual(['B', 'A', 'C', 'D']);
    const bad = await a.get(`${base}?state=XX`);
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0]).toMatchObject({ type: 'value_error', loc: ['query', 'state'] });
  });
});

describe('batch locations', () => {
  it('applies creates, upserts and updates per item, with the geocoding rules and the US default', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/batch/locations', {
      items: [
        { operation: 'create', location: { external_reference_id: 'L1', name: 'Dallas', postal_code: '75201', state: 'TX' } },
        { operation: 'create', external_reference_id: 'L2', location: { name: 'Nowhere' } },
        { operation: 'upsert', external_reference_id: 'L3', location: { name: 'KC', latitude: 39.1141, longitude: -94.6275 } },
        { operation: 'update', external_reference_id: 'L1', location: { postal_code: '73301' } },
        { operation: 'update', external_reference_id: 'L1', location: { weekday_open_hours: '08:00' } },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.results.map((r: any) => r.success)).toEqual([true, false, true, true, true]);
    expect(body.results[1].error).toEqual({
      status: 422,
      detail: [{ type: 'value_error', loc: ['body', 'items', 1, 'location', 'latitude'], msg: expect.stringContaining('geocodable') }],
    });
    expect(json(await a.get(`${base}/L3`))).toMatchObject({ state: 'US-KS', country: 'US' });
    expect(json(await a.get(`${base}/L1`))).toMatchObject({ postal_code: '73301', state: 'US-TX', weekday_open_hours: '08:00' });
    expect((await a.get(`${base}/L2`)).statusCode).toBe(404);
  });
});
