import { beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/modules/accounts/scopes.js';
import { mainPlaceIn, nearestPlace } from '../../src/geo/index.js';
import { useDashboardApp, Visitor, apiAs, orgWithUser, seedAs } from './support.js';

/**
 * Issue 30's dashboard content, through app.inject on both engines: a rep matched to a user shows the
 * user's name, event rows link to their record (and not to a deleted one), maps label their places
 * without piling labels on each other, a location sent with only coordinates shows its nearest city,
 * the Overview's failed writes come ten at a time with stable newer/older pages, and lanes are named
 * by the areas of both ends rather than by the locations of the latest load.
 */

let visitor: Visitor;
let key = '';
let orgId = '';
const DAY = 86_400_000;
const unique = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const repEmail = `rosa-${unique}@broker.example`;

const iso = (ms: number) => new Date(ms).toISOString();

const api = (method: string, url: string, body?: unknown) => apiAs(t, key, method, url, body);
const seed = (url: string, body: unknown) => seedAs(t, key, url, body);

const bodyOf = async (url: string, status = 200) => {
  // As a browser does, the fragment stays on this side.
  const res = await visitor.get(url.replace(/#.*$/, ''));
  expect(res.statusCode, `${url}: ${res.body.slice(0, 500)}`).toBe(status);
  return res.body;
};

/** The text between an element's opening tag (found by a fragment of it) and the next closing `</tag>`. */
function section(body: string, start: string, end: string): string {
  const from = body.indexOf(start);
  expect(from, start).toBeGreaterThanOrEqual(0);
  return body.slice(from, body.indexOf(end, from));
}

// A retention other than the default: the Events page says the one in force.
const t = useDashboardApp({ config: { eventRetentionDays: 45 } });
beforeAll(async () => {
  const org = await orgWithUser(t);
  orgId = org.orgId;
  key = (await t.services.accounts.createKey(orgId, { name: 'Content sync', externalSystem: 'McLeod', scopes: [...SCOPES] })).key;
  visitor = new Visitor(t);
  await visitor.signIn(org.email, org.password);
  // A user the loads' reps are matched to (no password: only matched, never signs in).
  await t.services.accounts.createUser(orgId, { email: repEmail, name: 'Rosa Diaz' });

  const now = t.clock.now().getTime();
  await seed('/locations', { external_reference_id: 'C-DAL', name: 'Dallas DC', city: 'Dallas', state: 'TX', latitude: 32.7767, longitude: -96.797 });
  // Irving is 10 miles from Dallas: its label must find its own spot on a route map.
  await seed('/locations', { external_reference_id: 'C-IRV', name: 'Irving Dock', city: 'Irving', state: 'TX', latitude: 32.814, longitude: -96.9489 });
  await seed('/locations', { external_reference_id: 'C-PAS', name: 'Pasadena Yard', city: 'Pasadena', state: 'TX', latitude: 29.6911, longitude: -95.2091 });
  // Coordinates only (no city, no postal code): the dashboard names the nearest city.
  await seed('/locations', { external_reference_id: 'C-COORD', name: 'Field Drop 7', latitude: 32.7767, longitude: -96.797 });
  // Mexico has no offline city data: no "near" there.
  await seed('/locations', { external_reference_id: 'C-MTY', name: 'Monterrey Cross-dock', country: 'MX', latitude: 25.6866, longitude: -100.3161 });
  await seed('/customers', { external_reference_id: 'C-CUST', name: 'Content Customer' });
  await seed('/carriers', { external_reference_id: 'C-CAR', name: 'Content Carrier' });

  // Irving → Pasadena, delivered: the lane's cells are Dallas's and Houston's.
  await seed('/loads', {
    external_reference_id: 'C-HIST',
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'C-CUST',
    carrier_external_reference_id: 'C-CAR',
    status: 'DELIVERED',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'C-IRV', early_arrival: iso(now - 4 * DAY), late_arrival: iso(now - 4 * DAY + 3_600_000) },
      { stop_type: 'Delivery', location_external_reference_id: 'C-PAS', early_arrival: iso(now - 3 * DAY), late_arrival: iso(now - 3 * DAY + 3_600_000) },
    ],
  });
  // Four stops, the first and third at one location, two 10 miles apart; reps: one matches the user by email.
  await seed('/loads', {
    external_reference_id: 'C-ROUTE',
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'C-CUST',
    sales_rep: { name: 'R. Diaz', email: repEmail.toUpperCase(), external_reference_id: 'EMP-7' },
    dispatcher_rep: { name: 'Pat Nobody', email: 'pat@elsewhere.example' },
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'C-DAL', early_arrival: '2026-12-01T14:00:00Z', late_arrival: '2026-12-01T16:00:00Z' },
      { stop_type: 'Pickup', location_external_reference_id: 'C-IRV', early_arrival: '2026-12-01T17:00:00Z', late_arrival: '2026-12-01T18:00:00Z' },
      { stop_type: 'Pickup', location_external_reference_id: 'C-DAL', early_arrival: '2026-12-01T19:00:00Z', late_arrival: '2026-12-01T20:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'C-PAS', early_arrival: '2026-12-02T14:00:00Z', late_arrival: '2026-12-02T16:00:00Z' },
    ],
  });
  await seed('/market-rates', {
    origin: { location_external_reference_id: 'C-IRV' },
    destination: { location_external_reference_id: 'C-PAS' },
    equipment_type: 'DRY_VAN',
    rate_per_mile: 2.5,
  });
  // A load created, then deleted: its events stay, its page is gone.
  await seed('/loads', {
    external_reference_id: 'C-GONE',
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    customer_external_reference_id: 'C-CUST',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'C-DAL', early_arrival: '2026-12-03T14:00:00Z', late_arrival: '2026-12-03T16:00:00Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'C-PAS', early_arrival: '2026-12-04T14:00:00Z', late_arrival: '2026-12-04T16:00:00Z' },
    ],
  });
  const deleted = await api('POST', '/batch/loads', { items: [{ operation: 'delete', external_reference_id: 'C-GONE' }] });
  expect(deleted.statusCode, deleted.body).toBe(200);
  expect(deleted.json().error_count).toBe(0);
}, 60_000);

describe('reps matched to users', () => {
  it("a rep matched to a user shows the user's name, the email beneath and the rep as sent; an unmatched rep as sent", async () => {
    const body = await bodyOf('/loads/C-ROUTE');
    const sales = section(body, '<dt>Sales rep</dt>', '</dd>');
    expect(sales).toContain('<span data-rep-user>Rosa Diaz</span>');
    expect(sales).toContain(repEmail);
    expect(sales).toContain(`sent as R. Diaz &lt;${repEmail.toUpperCase()}&gt; (EMP-7)`);
    const dispatcher = section(body, '<dt>Dispatcher rep</dt>', '</dd>');
    expect(dispatcher).not.toContain('data-rep-user');
    expect(dispatcher).toContain('Pat Nobody &lt;pat@elsewhere.example&gt;');
  });
});

describe('events link to their records', () => {
  it('each row links to its record while it exists; a deleted load is named, not linked; a market rate links to its lane', async () => {
    expect((await visitor.get('/events')).body).toContain('Events are kept 45 days.');
    const body = await bodyOf('/events');
    const rows = [
      ...body.matchAll(/<tr><td class="num">\d+<\/td><td class="nowrap">[^<]*<\/td><td><code>([a-z_.]+)<\/code><\/td><td>(.*?)<\/td>\s*<td><details>/gs),
    ].map((m) => ({ type: m[1]!, cell: m[2]! }));
    const cellOf = (type: string, ref: string) => rows.find((r) => r.type === type && r.cell.includes(ref))?.cell;
    expect(cellOf('customer.created', 'C-CUST')).toBe('<a href="/customers/C-CUST" data-record-link>C-CUST</a>');
    expect(cellOf('carrier.created', 'C-CAR')).toBe('<a href="/carriers/C-CAR" data-record-link>C-CAR</a>');
    expect(cellOf('location.created', 'C-COORD')).toBe('<a href="/locations/C-COORD" data-record-link>C-COORD</a>');
    expect(cellOf('load.created', 'C-ROUTE')).toBe('<a href="/loads/C-ROUTE" data-record-link>C-ROUTE</a>');
    // The deleted load: both its events name it, neither links to the page that would be a 404.
    for (const type of ['load.created', 'load.deleted']) {
      const cell = cellOf(type, 'C-GONE');
      expect(cell, type).toBe('C-GONE <span class="muted">(load no longer exists)</span>');
    }
    const rate = rows.find((r) => r.type === 'market_rate.created')!.cell;
    expect(rate).toContain('<a href="/lanes/C-IRV/C-PAS/DRY_VAN" data-record-link>C-IRV → C-PAS, Dry van</a>');
    // Every link goes to a page that answers.
    for (const m of body.matchAll(/<a href="([^"]+)" data-record-link>/g)) await bodyOf(m[1]!.replace(/&amp;/g, '&'));
  });
});

describe('maps label their places', () => {
  it('a route map writes each stop location once (stops sharing one are numbered together), the labels apart, and lists them for screen readers', async () => {
    const body = await bodyOf('/loads/C-ROUTE');
    const map = section(body, '<svg class="map" id="route-map"', '</svg>');
    const labels = [...map.matchAll(/<text class="map-label" x="([\d.]+)" y="([\d.]+)" text-anchor="(start|middle|end)">([^<]+)<\/text>/g)].map((m) => ({
      x: Number(m[1]),
      y: Number(m[2]),
      anchor: m[3]!,
      text: m[4]!,
    }));
    expect(labels.map((l) => l.text).sort()).toEqual(['1, 3. Dallas DC', '2. Irving Dock', '4. Pasadena Yard']);
    // No two labels' glyphs overlap: 13 px text, about 0.55 em a character, capitals 9.5 px above the baseline, descenders 3 below.
    const boxes = labels.map((l) => {
      const w = l.text.length * 13 * 0.55;
      const x1 = l.anchor === 'start' ? l.x : l.anchor === 'end' ? l.x - w : l.x - w / 2;
      return { x1, x2: x1 + w, y1: l.y - 9.5, y2: l.y + 3 };
    });
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i]!, boxes[j]!];
        expect(a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2, `${labels[i]!.text} overlaps ${labels[j]!.text}`).toBe(false);
      }
    }
    // Drawn text inside an image: the places are in the map's description too.
    expect(map).toMatch(/<desc id="route-map-desc">[^<]*Places on the map: 1, 3\. Dallas DC; 2\. Irving Dock; 4\. Pasadena Yard\.<\/desc>/);
    // Each stop keeps its own marker and title.
    expect((map.match(/data-point/g) ?? []).length).toBe(4);
  });

  it('the Lanes map names both ends of its lanes by their areas', async () => {
    const body = await bodyOf('/lanes');
    const map = section(body, '<svg class="map" id="lanes-map"', '</svg>');
    const labels = [...map.matchAll(/<text class="map-label"[^>]*>([^<]+)<\/text>/g)].map((m) => m[1]);
    expect(labels.sort()).toEqual(['Dallas, TX', 'Houston, TX']);
  });

  it('the Locations map names its few locations', async () => {
    const body = await bodyOf('/locations');
    const map = section(body, '<svg class="map" id="locations-map"', '</svg>');
    expect([...map.matchAll(/<text class="map-label"[^>]*>([^<]+)<\/text>/g)].map((m) => m[1]).sort()).toEqual([
      'Dallas DC',
      'Field Drop 7',
      'Irving Dock',
      'Monterrey Cross-dock',
      'Pasadena Yard',
    ]);
  });
});

describe('a location made from coordinates', () => {
  it('shows its nearest city on its page, in the Locations list and on a map title; not when it has a city or is outside the US', async () => {
    const page = await bodyOf('/locations/C-COORD');
    expect(section(page, '<dt>Address</dt>', '</dd>')).toContain('<span data-near-city>near Dallas, TX</span>');
    const list = await bodyOf('/locations');
    const row = section(list, '<th scope="row"><a href="/locations/C-COORD">', '</tr>');
    expect(row).toContain('<span data-near-city>near Dallas, TX</span>');
    expect(list).toContain('<title>Field Drop 7 (near Dallas, TX)</title>');
    expect(section(list, '<th scope="row"><a href="/locations/C-DAL">', '</tr>')).not.toContain('data-near-city');
    expect(section(list, '<th scope="row"><a href="/locations/C-MTY">', '</tr>')).not.toContain('data-near-city');
    expect(await bodyOf('/locations/C-MTY')).not.toContain('data-near-city');
  });
});

describe('failed writes on the Overview', () => {
  it('ten at a time, newest first, with older and newer pages that stay put when new failures arrive', async () => {
    for (let i = 0; i < 23; i++) expect((await api('POST', '/customers', { external_reference_id: `FW-${String(i).padStart(2, '0')}` })).statusCode).toBe(422);
    const refsOf = (body: string) => [...section(body, 'id="failed-writes"', '</table>').matchAll(/customers: (FW-\d\d)/g)].map((m) => m[1]!);
    const olderLink = (body: string) => /<a href="([^"]+)" rel="next">Older failed writes/.exec(body)?.[1]?.replace(/&amp;/g, '&');
    const newerLink = (body: string) => /<a href="([^"]+)" rel="prev">← Newer failed writes/.exec(body)?.[1]?.replace(/&amp;/g, '&');

    const first = await bodyOf('/');
    expect(first).toContain('23 failed writes (single requests and batch items) in the last 7 days, newest first; 1–10 shown');
    const page1 = refsOf(first);
    expect(page1).toEqual(['FW-22', 'FW-21', 'FW-20', 'FW-19', 'FW-18', 'FW-17', 'FW-16', 'FW-15', 'FW-14', 'FW-13']);
    expect(newerLink(first)).toBeUndefined();
    const toPage2 = olderLink(first)!;
    expect(toPage2).toMatch(/^\/\?failed_before=[^#]+#failed-writes-title$/);

    const second = await bodyOf(toPage2);
    expect(second).toContain('11–20 shown');
    expect(refsOf(second)).toEqual(['FW-12', 'FW-11', 'FW-10', 'FW-09', 'FW-08', 'FW-07', 'FW-06', 'FW-05', 'FW-04', 'FW-03']);
    const third = await bodyOf(olderLink(second)!);
    expect(refsOf(third)).toEqual(['FW-02', 'FW-01', 'FW-00']);
    expect(third).toContain('21–23 of 23');
    expect(olderLink(third)).toBeUndefined();
    expect(refsOf(await bodyOf(newerLink(third)!))).toEqual(refsOf(second));
    expect(refsOf(await bodyOf(newerLink(second)!))).toEqual(page1);

    // New failures arrive: the same older link still shows the same rows, now further down the list.
    for (const ref of ['FW-90', 'FW-91']) expect((await api('POST', '/customers', { external_reference_id: ref })).statusCode).toBe(422);
    const again = await bodyOf(toPage2);
    expect(refsOf(again)).toEqual(refsOf(second));
    expect(again).toContain('13–22 shown');
    expect(refsOf(await bodyOf('/')).slice(0, 2)).toEqual(['FW-91', 'FW-90']);
    // A malformed cursor is the newest page, not an error.
    expect(refsOf(await bodyOf('/?failed_before=yesterday'))[0]).toBe('FW-91');
  });
});

describe('lanes are named by their areas', () => {
  it('the Lanes list and the lane page name both ends by their cells’ areas, not by the latest load’s locations', async () => {
    const list = await bodyOf('/lanes');
    const row = section(list, '<tr><th scope="row">Dry van</th>', '</tr>');
    expect(row).toContain('<span data-area>near Dallas, TX</span>');
    expect(row).toContain('<span data-area>near Houston, TX</span>');
    // Before, the ends were the latest load's locations' cities ("near Irving, US-TX").
    expect(row).not.toContain('near Irving');
    expect(row).not.toContain('near Pasadena');
    expect(row).toContain('<a href="/lanes/C-IRV/C-PAS/DRY_VAN">Dallas, TX → Houston, TX</a>');
    expect(row).toContain('centred on Irving Dock → Pasadena Yard');
    const lane = await bodyOf('/lanes/C-IRV/C-PAS/DRY_VAN');
    expect(lane).toContain('<h1>Dallas, TX → Houston, TX · Dry van</h1>');
  });
});

describe('places from the ZIP table (src/geo/places.ts)', () => {
  it('the nearest place within 50 miles, US only; a box named by the place with the most ZIP codes in it', () => {
    expect(nearestPlace(32.7767, -96.797)).toMatchObject({ city: 'Dallas', state: 'US-TX' });
    expect(nearestPlace(32.814, -96.9489)).toMatchObject({ city: 'Irving', state: 'US-TX' });
    expect(nearestPlace(32.7767, -96.797, { country: 'MX' })).toBeNull();
    expect(nearestPlace(30, -60)).toBeNull(); // the Atlantic
    expect(nearestPlace(Number.NaN, 0)).toBeNull();
    expect(mainPlaceIn({ south: 32, north: 33, west: -98, east: -97 })).toMatchObject({ city: 'Fort Worth', state: 'US-TX' });
    expect(mainPlaceIn({ south: 32, north: 33, west: -97, east: -96 })).toMatchObject({ city: 'Dallas', state: 'US-TX', zipCodes: 119 });
    expect(mainPlaceIn({ south: 30, north: 31, west: -60, east: -59 })).toBeNull();
  });
});
