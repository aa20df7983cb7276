import { beforeAll, describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, apiPost, orgWithUser } from './support.js';

// D14 on the dashboard, on both engines: the load page's evidence, reasons and "how this was
// calculated", "thin evidence: get more bids" below 63, actual times on the stops, the lane page ranked
// by either method, and the carrier page's on-time trend.

let visitor: Visitor;
let key = '';
let ratesKey = '';
const DAY = 86_400_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function seed(url: string, body: unknown) {
  const res = await apiPost(t, url === '/market-rates' ? ratesKey : key, `/v2/tms-api${url}`, body);
  expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
}

const t = useDashboardApp();
beforeAll(async () => {
  const org = await orgWithUser(t);
  key = org.key!;
  ratesKey = (await t.services.accounts.createKey(org.orgId, { name: 'rates', externalSystem: 'vitest', scopes: ['write:rates'] })).key;
  visitor = new Visitor(t);
  await visitor.signIn(org.email, org.password);
  const now = t.clock.now().getTime();
  await seed('/locations', { external_reference_id: 'DAL', name: 'Dallas DC', latitude: 32.7767, longitude: -96.797 });
  await seed('/locations', { external_reference_id: 'HOU', name: 'Houston Port', latitude: 29.7604, longitude: -95.3698 });
  await seed('/customers', { external_reference_id: 'CUST', name: 'Acme' });
  await seed('/carriers', { external_reference_id: 'CAR-ONE', name: 'One Load Freight' });
  const load = (ref: string, daysAgo: number, actualLateMinutes: number | null, status = 'DELIVERED', carrier: string | null = 'CAR-ONE') => {
    const late = now - daysAgo * DAY;
    return seed('/loads', {
      external_reference_id: ref,
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'CUST',
      status,
      ...(carrier ? { carrier_external_reference_id: carrier } : {}),
      stops: [
        { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: iso(late - 2 * DAY), late_arrival: iso(late - 2 * DAY + HOUR) },
        {
          stop_type: 'Delivery',
          location_external_reference_id: 'HOU',
          early_arrival: iso(late - 2 * HOUR),
          late_arrival: iso(late),
          ...(actualLateMinutes !== null ? { actual_arrival: iso(late + actualLateMinutes * 60_000) } : {}),
        },
      ],
    });
  };
  await load('H-1', 40, 5);
  await load('H-2', 10, 30);
  await load('OPEN', -2, null, 'ACTIVE', null);
});

describe('recommendation evidence on the dashboard (D14)', () => {
  it('the load page shows the evidence, the reasons, how each number was calculated, and thin evidence below 63', async () => {
    const res = await visitor.get('/loads/OPEN');
    expect(res.statusCode).toBe(200);
    const row = res.body.slice(res.body.indexOf('data-carrier="CAR-ONE"'));
    expect(row).toContain('Ran this lane 2 times in the last 90 days');
    expect(row).toContain('How this was calculated');
    expect(row).toContain('Effective loads');
    // Two loads, one delivery on time (5 min late, within 15 min grace), one 30 min late.
    expect(row).toMatch(/On time at delivery \d+% = Σw of on-time stops ÷ Σw of scored stops \(2 scored/);
    // Two loads and no priced one: confidence round(50 + 50 × (1 − e^(−eff/4)) × 0.5 × 0.75) < 63.
    expect(row).toContain('thin evidence: get more bids');
    expect(res.body).toContain('no arrival yet');
  });

  it('the lane page ranks by either method', async () => {
    const history = await visitor.get('/lanes/DAL/HOU/dry_van');
    expect(history.statusCode).toBe(200);
    expect(history.body).toContain('<strong>lane history</strong>');
    expect(history.body).toContain('href="?rank_by=balanced"');
    const balanced = await visitor.get('/lanes/DAL/HOU/dry_van?rank_by=balanced');
    expect(balanced.body).toContain('<strong>balanced score</strong>');
    expect(balanced.body).toContain('Best first by balanced score');
    expect(balanced.body).toMatch(/Balanced score \d+\.\d{4} = score ×/);
  });

  it('the carrier page shows its price against market per lane and over its lanes, as the recommendations price it', async () => {
    const now = t.clock.now().getTime();
    await seed('/locations', { external_reference_id: 'AUS', name: 'Austin Yard', latitude: 30.2672, longitude: -97.7431 });
    await seed('/locations', { external_reference_id: 'ELP', name: 'El Paso Cross-dock', latitude: 31.7619, longitude: -106.485 });
    await seed('/carriers', { external_reference_id: 'CAR-PRICED', name: 'Priced Lines' });
    // D14's example: 2.00 $/mi on the lane before the deliveries, then 2.50 $/mi after the first.
    await seed('/market-rates', {
      origin: { location_external_reference_id: 'AUS' },
      destination: { location_external_reference_id: 'ELP' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2,
      as_of: iso(now - 30 * DAY),
    });
    await seed('/market-rates', {
      origin: { location_external_reference_id: 'AUS' },
      destination: { location_external_reference_id: 'ELP' },
      equipment_type: 'DRY_VAN',
      rate_per_mile: 2.5,
      as_of: iso(now - 15 * DAY),
    });
    const priced = (ref: string, daysAgo: number, total: number | null) =>
      seed('/loads', {
        external_reference_id: ref,
        equipment_type: 'DRY_VAN',
        transport_mode: 'FTL',
        customer_external_reference_id: 'CUST',
        status: 'DELIVERED',
        carrier_external_reference_id: 'CAR-PRICED',
        total_distance: 1000,
        ...(total !== null ? { financial_rates: [{ rate_entity: 'CARRIER', amount: total, currency: 'USD', rate_type: 'LINEHAUL' }] } : {}),
        stops: [
          {
            stop_type: 'Pickup',
            location_external_reference_id: 'AUS',
            early_arrival: iso(now - daysAgo * DAY - 2 * DAY),
            late_arrival: iso(now - daysAgo * DAY - 2 * DAY + HOUR),
          },
          {
            stop_type: 'Delivery',
            location_external_reference_id: 'ELP',
            early_arrival: iso(now - daysAgo * DAY - 2 * HOUR),
            late_arrival: iso(now - daysAgo * DAY),
          },
        ],
      });
    // Each priced at the market as of its delivery (the delivery stop's window end).
    await priced('P-1', 20, 1900);
    await priced('P-2', 10, 2600);
    await priced('P-3', 5, null);
    const res = await visitor.get('/carriers/CAR-PRICED');
    expect(res.statusCode).toBe(200);
    // P-1 delivered 20 days ago, when the market was 2.00: 1,900 ÷ (2.00 × 1,000) = 0.95 (D14's example);
    // P-2 10 days ago, at 2.50: 2,600 ÷ (2.50 × 1,000) = 1.04. The lower middle of the two is 0.95; the
    // load without a carrier rate is not priced.
    const cell = res.body.slice(res.body.indexOf('data-price-vs-market>'), res.body.indexOf('</td>', res.body.indexOf('data-price-vs-market>')));
    expect(cell).toContain('0.95×');
    expect(cell).toContain('(2 priced)');
    expect(res.body).toContain('<p data-price-summary>0.95× the market: the median over 2 priced deliveries on the lanes above');
    expect(res.body).toContain('5% under market');
    // The lane with no snapshot (CAR-ONE's Dallas → Houston) prices nothing, and says why.
    const one = await visitor.get('/carriers/CAR-ONE');
    expect(one.body).toContain('No delivery of this carrier on the lanes above could be priced');
    expect(one.body.slice(one.body.indexOf('data-price-vs-market>'), one.body.indexOf('data-price-vs-market>') + 40)).toContain('—');
  });

  it('the carrier page shows its on-time trend', async () => {
    const res = await visitor.get('/carriers/CAR-ONE');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('On time at 1 of 2 deliveries with an actual arrival (50%)');
    expect(res.body).toContain('id="carrier-on-time-trend"');
  });
});
