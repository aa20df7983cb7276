import { beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { useDashboardApp, Visitor, apiAs, orgWithUser, seedAs } from './support.js';

/**
 * Issue 19 through app.inject, on both engines: detail pages (location, carrier, customer, D7 lane),
 * maps as inline SVG with a path per lane, charts, the Loads list's filters, sorting and its page past
 * the end, a stop outside its location's hours, integration health (usage per key, failed writes with
 * their 422 detail, single and batch), and an empty organization.
 */

let visitor: Visitor;
let emptyVisitor: Visitor;
let key = '';
const DAY = 86_400_000;

const iso = (ms: number) => new Date(ms).toISOString();

const api = (method: string, url: string, body?: unknown) => apiAs(t, key, method, url, body);
const seed = (url: string, body: unknown) => seedAs(t, key, url, body);

const t = useDashboardApp();
beforeAll(async () => {
  const org = await orgWithUser(t);
  key = (await t.services.accounts.createKey(org.orgId, { name: 'Ops sync', externalSystem: 'McLeod', scopes: [...SCOPES] })).key;
  visitor = new Visitor(t);
  await visitor.signIn(org.email, org.password);
  const empty = await orgWithUser(t, { connect: false });
  emptyVisitor = new Visitor(t);
  await emptyVisitor.signIn(empty.email, empty.password);

  const now = t.clock.now().getTime();
  await seed('/locations', {
    external_reference_id: 'LOC-DAL',
    name: 'Dallas DC',
    city: 'Dallas',
    state: 'TX',
    latitude: 32.7767,
    longitude: -96.797,
    weekday_open_hours: '08:00',
    weekday_close_hours: '17:00',
    weekend_open_hours: '09:00',
    weekend_close_hours: '12:00',
  });
  await seed('/locations', {
    external_reference_id: 'LOC-FTW',
    name: 'Fort Worth Yard',
    city: 'Fort Worth',
    state: 'TX',
    latitude: 32.7555,
    longitude: -97.3308,
  });
  await seed('/locations', {
    external_reference_id: 'LOC-HOU',
    name: 'Houston Port',
    city: 'Houston',
    state: 'TX',
    latitude: 29.7604,
    longitude: -95.3698,
    weekday_open_hours: '06:00',
    weekday_close_hours: '18:00',
  });
  await seed('/locations', { external_reference_id: 'LOC-CHI', name: 'Chicago Hub', city: 'Chicago', state: 'IL', latitude: 41.8781, longitude: -87.6298 });
  await seed('/customers', { external_reference_id: 'CUST-ACME', name: 'Acme Retail' });
  await seed('/customers', { external_reference_id: 'CUST-OTHER', name: 'Other Goods' });
  await seed('/carriers', {
    external_reference_id: 'CAR-ALAMO',
    name: 'Alamo Trucking',
    dot_number: 'DOT100001',
    contacts: [
      { first_name: 'Sam', last_name: 'Second', primary_email: 'sam@alamo.example', is_primary_contact: false },
      { first_name: 'Rosa', last_name: 'Diaz', primary_email: 'rosa@alamo.example', primary_phone: '+1 214 555 0100', is_primary_contact: true },
    ],
  });
  await seed('/carriers', { external_reference_id: 'CAR-BLUE', name: 'Bluebonnet Freight', dot_number: 'DOT200002', phone_number: '+1 713 555 0199' });
  const delivered = (ref: string, carrier: string, from: string, to: string, daysAgo: number, amount: number, equipment = 'DRY_VAN') =>
    seed('/loads', {
      external_reference_id: ref,
      equipment_type: equipment,
      transport_mode: 'FTL',
      customer_external_reference_id: 'CUST-ACME',
      carrier_external_reference_id: carrier,
      status: 'DELIVERED',
      financial_rates: [{ rate_entity: 'CARRIER', amount }],
      stops: [
        {
          stop_type: 'Pickup',
          location_external_reference_id: from,
          early_arrival: iso(now - (daysAgo + 1) * DAY),
          late_arrival: iso(now - (daysAgo + 1) * DAY + 3_600_000),
        },
        {
          stop_type: 'Delivery',
          location_external_reference_id: to,
          early_arrival: iso(now - daysAgo * DAY),
          late_arrival: iso(now - daysAgo * DAY + 3_600_000),
        },
      ],
    });
  await delivered('H-DAL-1', 'CAR-ALAMO', 'LOC-DAL', 'LOC-HOU', 3, 900);
  await delivered('H-DAL-2', 'CAR-ALAMO', 'LOC-DAL', 'LOC-HOU', 10, 950);
  await delivered('H-FTW-1', 'CAR-BLUE', 'LOC-FTW', 'LOC-HOU', 5, 1000);
  await delivered('H-CHI-1', 'CAR-BLUE', 'LOC-CHI', 'LOC-DAL', 8, 2100, 'REEFER');
  await seed('/market-rates', {
    origin: { location_external_reference_id: 'LOC-DAL' },
    destination: { location_external_reference_id: 'LOC-HOU' },
    equipment_type: 'DRY_VAN',
    rate_per_mile: 2.75,
    rate_per_mile_high: 3.1,
    source: 'DAT',
    as_of: iso(now - 2 * DAY),
  });
  // Open, with a pickup at 03:00 Dallas time on a weekday-or-weekend: outside either hours.
  await seed('/loads', {
    external_reference_id: 'OPEN-1',
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'CUST-OTHER',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'LOC-DAL', early_arrival: '2026-03-04T09:00:00Z', late_arrival: '2026-03-04T10:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'LOC-HOU', early_arrival: '2026-03-05T15:00:00Z', late_arrival: '2026-03-05T18:00:00Z' },
    ],
  });
  // Failed writes: a single 422, a batch with one bad item.
  const bad = await api('POST', '/customers', { external_reference_id: 'CUST-BAD' });
  expect(bad.statusCode).toBe(422);
  const batch = await api('POST', '/batch/customers', {
    items: [
      { operation: 'create', customer: { external_reference_id: 'CUST-OK', name: 'Fine' } },
      { operation: 'create', customer: { external_reference_id: 'CUST-BAD-2', name: 'x'.repeat(300) } },
    ],
  });
  expect(batch.statusCode).toBe(200);
  expect(batch.json().error_count).toBe(1);
}, 60_000);

const bodyOf = async (v: Visitor, url: string, status = 200) => {
  const res = await v.get(url);
  expect(res.statusCode, `${url}: ${res.body.slice(0, 500)}`).toBe(status);
  return res.body;
};

describe('detail pages', () => {
  it('a location: hours, time zone, coordinates, a map with its point, the loads through it', async () => {
    const body = await bodyOf(visitor, '/locations/LOC-DAL');
    expect(body).toContain('<h1>Dallas DC');
    expect(body).toContain('America/Chicago');
    expect(body).toContain('32.77670, -96.79700');
    expect(body).toContain('08:00–17:00');
    expect(body).toMatch(/<svg class="map" id="location-map"[^>]*role="img"/);
    expect((body.match(/data-point/g) ?? []).length).toBe(1);
    expect(body).toMatch(/<path class="land" d="M[\d.]+ [\d.]+L/);
    for (const ref of ['H-DAL-1', 'H-DAL-2', 'OPEN-1', 'H-CHI-1']) expect(body).toContain(`href="/loads/${ref}"`);
    expect(body).not.toContain('href="/loads/H-FTW-1"');
    await bodyOf(visitor, '/locations/NOPE', 404);
  });

  it('a carrier: contacts with phone and email, the lanes it has run (linked to D7 lanes), its loads', async () => {
    const body = await bodyOf(visitor, '/carriers/CAR-ALAMO');
    expect(body).toContain('<h1>Alamo Trucking');
    expect(body).toContain('href="tel:+1 214 555 0100"');
    expect(body).toContain('href="mailto:rosa@alamo.example"');
    expect(body).toContain('href="/lanes/LOC-DAL/LOC-HOU/DRY_VAN"');
    expect((body.match(/data-line/g) ?? []).length).toBe(1);
    expect(body).toContain('href="/loads/H-DAL-2"');
    await bodyOf(visitor, '/carriers/NOPE', 404);
  });

  it('a carrier: the open loads whose current recommendations name it, with its rank', async () => {
    await t.recommendations.sweep();
    await t.recommendations.idle();
    const body = await bodyOf(visitor, '/carriers/CAR-BLUE');
    const section = body.slice(body.indexOf('id="carrier-recommended"'), body.indexOf('id="carrier-loads"'));
    expect(section).toContain('href="/loads/OPEN-1"');
    expect(section).toMatch(/<td class="num">2<\/td><\/tr>/);
  });

  it('a customer: its loads', async () => {
    const body = await bodyOf(visitor, '/customers/CUST-OTHER');
    expect(body).toContain('<h1>Other Goods');
    expect(body).toContain('href="/loads/OPEN-1"');
    expect(body).not.toContain('href="/loads/H-DAL-1"');
  });

  it('a D7 lane: Fort Worth history counts on the Dallas lane, carriers ranked as recommendations, charts, snapshots', async () => {
    const body = await bodyOf(visitor, '/lanes/LOC-DAL/LOC-HOU/DRY_VAN');
    expect(body).toContain('within 100 miles');
    // D7: Fort Worth is ~31 miles from Dallas, so its load is on the lane.
    for (const ref of ['H-DAL-1', 'H-DAL-2', 'H-FTW-1']) expect(body).toContain(`href="/loads/${ref}"`);
    expect(body).not.toContain('href="/loads/H-CHI-1"');
    // The same ranking as the load's recommendations.
    const rec = (await api('GET', '/loads/OPEN-1/carrier-recommendations')).json() as
      { carrier_recommendations?: { carrier_external_reference_id: string }[] } | { carrier_external_reference_id: string }[];
    const ranked = (Array.isArray(rec) ? rec : (rec.carrier_recommendations ?? [])).map((r) => r.carrier_external_reference_id);
    expect(ranked).toEqual(['CAR-ALAMO', 'CAR-BLUE']);
    const table = body.slice(body.indexOf('id="lane-carriers"'), body.indexOf('id="lane-charts"'));
    expect(table.indexOf('CAR-ALAMO')).toBeGreaterThan(0);
    expect(table.indexOf('CAR-ALAMO')).toBeLessThan(table.indexOf('CAR-BLUE'));
    expect(table).toContain('mailto:rosa@alamo.example');
    expect(table).toContain('tel:+1 713 555 0199');
    expect(body).toMatch(/<svg class="chart" id="lane-volume"/);
    expect((body.match(/class="bar s0"/g) ?? []).length).toBeGreaterThanOrEqual(2);
    expect(body).toMatch(/<svg class="chart" id="lane-rates"/);
    expect(body).toContain('DAT');
    expect(body).toContain('$2.75');
  });

  it('the load page: a route map, links to carrier, customer and locations, recommendations with contacts, a stop outside hours flagged', async () => {
    const body = await bodyOf(visitor, '/loads/OPEN-1');
    expect(body).toMatch(/<svg class="map" id="route-map"/);
    expect((body.match(/data-point/g) ?? []).length).toBe(2);
    expect((body.match(/data-line/g) ?? []).length).toBe(1);
    expect(body).toContain('href="/customers/CUST-OTHER"');
    expect(body).toContain('href="/carriers/CAR-ALAMO"');
    expect(body).toContain('+1 214 555 0100');
    // 09:00Z is 03:00 in Dallas: outside 08:00–17:00. Houston's window 09:00–12:00 local fits 06:00–18:00.
    expect((body.match(/data-outside-hours/g) ?? []).length).toBe(1);
    expect(body).toContain('starts and ends outside weekday hours 08:00–17:00');
  });
});

describe('lists', () => {
  it('Lanes: a map with a visible path per lane, each row linking to its D7 lane, the relation to D7 explained', async () => {
    const body = await bodyOf(visitor, '/lanes');
    expect(body).toContain('Recommendations use another definition');
    // No internal decision numbers on a page users read (issue 30).
    expect(body).not.toMatch(/\bD\d{1,2}a?\b/);
    const rows = (body.match(/<tr><th scope="row">/g) ?? []).length;
    expect(rows).toBe(3); // DAL→HOU and FTW→HOU are separate grid groups; CHI→DAL reefer
    expect((body.match(/data-line/g) ?? []).length).toBe(rows);
    expect(body).toContain('href="/lanes/LOC-CHI/LOC-DAL/REEFER"');
  });

  it('Locations: a point per location on the map, names linking to their pages', async () => {
    const body = await bodyOf(visitor, '/locations');
    expect((body.match(/data-point/g) ?? []).length).toBe(4);
    expect(body).toContain('href="/locations/LOC-HOU"');
  });

  it('Loads: filters by equipment, customer, carrier, states and pickup dates; sortable; a page past the end says so', async () => {
    const refs = (body: string) => [...body.matchAll(/<th scope="row"><a href="\/loads\/([^"]+)"/g)].map((m) => m[1]);
    expect(refs(await bodyOf(visitor, '/loads?equipment=REEFER'))).toEqual(['H-CHI-1']);
    expect(refs(await bodyOf(visitor, '/loads?customer=CUST-OTHER'))).toEqual(['OPEN-1']);
    expect(refs(await bodyOf(visitor, '/loads?carrier=CAR-BLUE')).sort()).toEqual(['H-CHI-1', 'H-FTW-1']);
    expect(refs(await bodyOf(visitor, '/loads?origin=IL'))).toEqual(['H-CHI-1']);
    expect(refs(await bodyOf(visitor, '/loads?destination=US-TX&carrier=CAR-BLUE')).sort()).toEqual(['H-CHI-1', 'H-FTW-1']);
    expect(refs(await bodyOf(visitor, '/loads?from=2026-03-04&to=2026-03-04'))).toEqual(['OPEN-1']);
    const asc = refs(await bodyOf(visitor, '/loads?sort=external_reference_id'));
    expect(asc).toEqual([...asc].sort());
    const desc = refs(await bodyOf(visitor, '/loads?sort=-external_reference_id'));
    expect(desc).toEqual([...asc].reverse());
    const past = await bodyOf(visitor, '/loads?page=9');
    expect(past).toContain('Page 9 is past the end: there is 1 page of loads');
  });
});

describe('integration health on the Overview', () => {
  it('requests per day and per key, the last request time, failed writes with reference, status and 422 detail', async () => {
    const body = await bodyOf(visitor, '/');
    expect(body).toContain('Integration health');
    const perKey = body.slice(body.indexOf('id="keys-usage"'), body.indexOf('id="failed-writes-title"'));
    expect(perKey).toContain('Ops sync');
    expect(perKey).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(body).toMatch(/<svg class="chart" id="usage-key_/);
    const failed = body.slice(body.indexOf('id="failed-writes"'));
    expect(failed).toContain('2 failed writes');
    expect(failed).toContain('customers: CUST-BAD');
    expect(failed).toContain('body.name: Field required');
    expect(failed).toContain('customers: CUST-BAD-2');
    expect(failed).toContain('batch item 1');
    expect(failed).not.toContain('CUST-OK');
    const perDay = body.slice(body.indexOf('id="requests-per-day"'), body.indexOf('id="keys-usage-title"'));
    const today = new Date(t.clock.now()).toISOString().slice(0, 10);
    const row = perDay.slice(perDay.indexOf(today));
    // At least the seeding requests, and the one 422 among the 4xx.
    expect(Number(/<td class="num">([\d,]+)<\/td>/.exec(row)![1]!.replace(/,/g, ''))).toBeGreaterThanOrEqual(15);
  });
});

describe('hostile data', () => {
  it('is shown as text on the detail pages, in map titles and in the failed-writes log', async () => {
    const evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>';
    await seed('/locations', { external_reference_id: 'LOC-EVIL', name: evil, latitude: 35, longitude: -97 });
    await seed('/carriers', {
      external_reference_id: 'CAR-EVIL',
      name: evil,
      contacts: [{ first_name: evil, primary_email: 'x@example.com', primary_phone: '<b>0</b>"><i>', is_primary_contact: true }],
    });
    await api('POST', '/customers', { external_reference_id: evil });
    for (const url of ['/locations/LOC-EVIL', '/locations', '/carriers/CAR-EVIL', '/']) {
      const body = await bodyOf(visitor, url);
      expect(body, url).not.toContain('<script>alert');
      expect(body, url).not.toContain('<img src=x');
    }
  });
});

describe('an empty organization', () => {
  it('renders every page without errors, with empty states pointing to the API docs', async () => {
    for (const url of ['/', '/loads', '/locations', '/carriers', '/customers', '/lanes']) {
      const body = await bodyOf(emptyVisitor, url);
      if (url !== '/') expect(body, url).toContain('href="/docs"');
    }
    await bodyOf(emptyVisitor, '/locations/LOC-DAL', 404);
    await bodyOf(emptyVisitor, '/lanes/LOC-DAL/LOC-HOU/DRY_VAN', 404);
  });
});
