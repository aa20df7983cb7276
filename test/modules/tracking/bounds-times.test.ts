// Issue 45, times (docs/api.md "Stop actuals, tracking events"): a tracking event's occurred_at without an
// offset is UTC like every timestamp, a stop's clock time goes in occurred_at_local, and years 0000–0099 are
// real years (no 1900 shift) through records, filters and tracking events.
import { describe, expect, it } from 'vitest';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

const t = useApp();

/** A tenant with load L-1 from Dallas (America/Chicago) to Houston, its stops without actuals. */
async function tenantWithLoad(): Promise<Tenant> {
  const a = await newTenant(t);
  await seedFreight(a);
  const res = await a.post('/v2/tms-api/loads', dallasToHouston('L-1'));
  expect(res.statusCode, res.body).toBe(201);
  return a;
}
const track = (a: Tenant, body: Record<string, unknown>) => a.post('/v2/tms-api/loads/L-1/tracking-events', { type: 'ARRIVED', stop_number: 1, ...body });
const firstStop = async (a: Tenant) => json(await a.get('/v2/tms-api/loads/L-1')).stops[0];
const stopEvents = async (a: Tenant) => json(await a.get('/v2/tms-api/events?types=load.stop_arrived,load.stop_departed')).items;

describe("tracking event times: occurred_at is UTC, occurred_at_local the stop's clock", () => {
  it("occurred_at without an offset is UTC (not the stop's local time); the answer adds the stop's wall time and zone", async () => {
    const a = await tenantWithLoad();
    // A newcomer's 09:00 arrival: 09:00 UTC, which is 03:00 in Dallas (CST, −6), not 15:00 UTC.
    const res = await track(a, { event_id: 'utc-1', occurred_at: '2026-03-02T09:00:00' });
    expect(res.statusCode, res.body).toBe(201);
    expect(json(res)).toEqual({
      event_id: 'utc-1',
      load_external_reference_id: 'L-1',
      stop_number: 1,
      type: 'ARRIVED',
      occurred_at: '2026-03-02T09:00:00.000Z',
      occurred_at_local: '2026-03-02T03:00:00',
      time_zone: 'America/Chicago',
      source: 'MANUAL',
    });
    expect((await firstStop(a)).actual_arrival).toBe('2026-03-02T09:00:00.000Z');
    // An offset is honoured; the answer is in UTC, its wall time in summer time (CDT, −5).
    const departed = await track(a, { event_id: 'utc-2', type: 'DEPARTED', occurred_at: '2026-07-02T12:30:00+02:00' });
    expect(json(departed)).toMatchObject({ occurred_at: '2026-07-02T10:30:00.000Z', occurred_at_local: '2026-07-02T05:30:00', time_zone: 'America/Chicago' });
  });

  it("occurred_at_local is read in the stop location's time zone, and answered as sent", async () => {
    const a = await tenantWithLoad();
    const res = await track(a, { event_id: 'local-1', occurred_at_local: '2026-03-02T09:00', source: 'app' });
    expect(res.statusCode, res.body).toBe(201);
    expect(json(res)).toMatchObject({
      occurred_at: '2026-03-02T15:00:00.000Z',
      occurred_at_local: '2026-03-02T09:00:00',
      time_zone: 'America/Chicago',
      source: 'APP',
    });
    // Houston, stop 2, in summer time.
    const delivered = await a.post('/v2/tms-api/loads/L-1/tracking-events', {
      event_id: 'local-2',
      edi_status_code: 'X1',
      stop_number: 2,
      occurred_at_local: '2026-07-03T14:05:30',
    });
    expect(json(delivered)).toMatchObject({
      type: 'ARRIVED',
      occurred_at: '2026-07-03T19:05:30.000Z',
      occurred_at_local: '2026-07-03T14:05:30',
      time_zone: 'America/Chicago',
    });
    expect(json(await a.get('/v2/tms-api/loads/L-1')).stops.map((s: any) => s.actual_arrival)).toEqual([
      '2026-03-02T15:00:00.000Z',
      '2026-07-03T19:05:30.000Z',
    ]);
  });

  it('both or neither: 422 saying what to send (with any other problem of the body), nothing written', async () => {
    const a = await tenantWithLoad();
    const both = await track(a, { event_id: 'b-1', occurred_at: '2026-03-02T09:00:00Z', occurred_at_local: '2026-03-02T03:00:00' });
    expect(both.statusCode).toBe(422);
    expect(json(both)).toEqual({
      detail: [
        {
          type: 'value_error',
          loc: ['body', 'occurred_at_local'],
          msg: "Value error, send occurred_at (the instant, UTC unless it carries an offset) or occurred_at_local (the stop's local clock time), not both",
        },
      ],
    });
    const neither = await a.post('/v2/tms-api/loads/L-1/tracking-events', { event_id: 'b-2', stop_number: 1 });
    expect(neither.statusCode).toBe(422);
    expect(json(neither)).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'type'], msg: 'Field required: type (ARRIVED or DEPARTED), or an edi_status_code' },
        {
          type: 'missing',
          loc: ['body', 'occurred_at'],
          msg: "Field required: occurred_at (the instant, UTC unless it carries an offset), or occurred_at_local (the stop's local clock time, YYYY-MM-DDTHH:MM[:SS])",
        },
      ],
    });
    // A local time with an offset is not a local time; a date the calendar does not have is refused.
    const withOffset = await track(a, { event_id: 'b-3', occurred_at_local: '2026-03-02T03:00:00-06:00' });
    expect(json(withOffset).detail).toEqual([
      {
        type: 'string_pattern_mismatch',
        loc: ['body', 'occurred_at_local'],
        msg: "String should match pattern '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$'",
      },
    ]);
    const noDay = await track(a, { event_id: 'b-4', occurred_at_local: '2026-02-30T03:00' });
    expect(json(noDay).detail).toEqual([
      {
        type: 'datetime_parsing',
        loc: ['body', 'occurred_at_local'],
        msg: 'Input should be a valid local date and time, YYYY-MM-DDTHH:MM[:SS] without an offset (got 2026-02-30T03:00)',
      },
    ]);
    expect((await firstStop(a)).actual_arrival).toBeNull();
    expect(await stopEvents(a)).toEqual([]);
  });

  it('daylight saving: a skipped local time is 422, a repeated one is its first occurrence', async () => {
    const a = await tenantWithLoad();
    // Spring forward in Dallas, 2026-03-08: 02:00 CST becomes 03:00 CDT, so 02:30 never happened.
    const gap = await track(a, { event_id: 'dst-1', occurred_at_local: '2026-03-08T02:30:00' });
    expect(gap.statusCode).toBe(422);
    expect(json(gap).detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'occurred_at_local'],
        msg: "Value error, 2026-03-08T02:30:00 does not exist in America/Chicago (stop 1's time zone): the clocks skipped it for daylight saving time; send the time the stop's clock showed, or occurred_at in UTC",
      },
    ]);
    expect((await firstStop(a)).actual_arrival).toBeNull();
    // Fall back, 2026-11-01: 01:30 happens at 06:30Z (CDT) and again at 07:30Z (CST); the first is taken.
    const repeated = await track(a, { event_id: 'dst-2', occurred_at_local: '2026-11-01T01:30' });
    expect(repeated.statusCode, repeated.body).toBe(201);
    expect(json(repeated)).toMatchObject({ occurred_at: '2026-11-01T06:30:00.000Z', occurred_at_local: '2026-11-01T01:30:00' });
    // The second 01:30 is sent as an instant; it is answered with the same wall time.
    const second = await track(a, { event_id: 'dst-3', type: 'DEPARTED', occurred_at: '2026-11-01T07:30:00Z' });
    expect(json(second)).toMatchObject({ occurred_at: '2026-11-01T07:30:00.000Z', occurred_at_local: '2026-11-01T01:30:00', time_zone: 'America/Chicago' });
  });

  it('an event kept before answers carried the wall time is answered again with it', async () => {
    const a = await tenantWithLoad();
    const loadId = json(await a.get('/v2/tms-api/loads/L-1')).id as string;
    const kept = {
      event_id: 'old-1',
      load_external_reference_id: 'L-1',
      stop_number: 2,
      type: 'ARRIVED',
      occurred_at: '2026-03-03T10:00:00.000Z',
      source: 'ELD',
    };
    await t.store.db
      .insertInto('tracking_events')
      .values({ org_id: a.orgId, event_id: 'old-1', load_id: loadId, answer: JSON.stringify(kept), created_at: '2026-03-03T10:00:01.000Z' })
      .execute();
    const again = await a.post('/v2/tms-api/loads/L-1/tracking-events', {
      event_id: 'old-1',
      type: 'ARRIVED',
      stop_number: 2,
      occurred_at: '2026-03-03T11:00:00Z',
    });
    expect(again.statusCode, again.body).toBe(201);
    expect(json(again)).toEqual({ ...kept, occurred_at_local: '2026-03-03T04:00:00', time_zone: 'America/Chicago' });
  });
});

describe('years 0000–0099 are real years', () => {
  it("round-trip through a load's stops and the pickup date filters", async () => {
    const a = await tenantWithLoad();
    const body = dallasToHouston('L-OLD') as any;
    body.stops[0] = { ...body.stops[0], early_arrival: '0001-01-01T00:00:00Z', late_arrival: '0099-12-31T23:59:59Z' };
    body.stops[1] = { ...body.stops[1], early_arrival: '0099-12-31T23:59:59Z', late_arrival: '0099-12-31T23:59:59Z', actual_arrival: '0000-02-29' };
    const created = await a.post('/v2/tms-api/loads', body);
    expect(created.statusCode, created.body).toBe(201);
    const stops = json(await a.get('/v2/tms-api/loads/L-OLD')).stops.map((s: any) => [s.early_arrival, s.late_arrival, s.actual_arrival]);
    expect(stops).toEqual([
      ['0001-01-01T00:00:00.000Z', '0099-12-31T23:59:59.000Z', null],
      ['0099-12-31T23:59:59.000Z', '0099-12-31T23:59:59.000Z', '0000-02-29T00:00:00.000Z'],
    ]);
    const refs = async (query: string) => {
      const res = await a.get(`/v2/tms-api/loads?${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return json(res).items.map((l: any) => l.external_reference_id);
    };
    expect(await refs('pickup_date_from=0001-01-01T00:00:00Z&pickup_date_to=0001-01-01')).toEqual(['L-OLD']);
    expect(await refs('pickup_date_from=0000-02-29&pickup_date_to=0099-12-31T23:59:59Z')).toEqual(['L-OLD']);
    expect(await refs('pickup_date_to=0000-12-31')).toEqual([]);
    expect(await refs('pickup_date_from=0100-01-01')).toEqual(['L-1']);
  });

  it("a tracking event's local time in year 0050 is year 50 (local mean time in Dallas); outside 0000–9999 UTC: 422", async () => {
    const a = await tenantWithLoad();
    const res = await track(a, { event_id: 'y-1', occurred_at_local: '0050-06-01T10:00:00' });
    expect(res.statusCode, res.body).toBe(201);
    expect(json(res)).toMatchObject({ occurred_at: '0050-06-01T15:50:36.000Z', occurred_at_local: '0050-06-01T10:00:00', time_zone: 'America/Chicago' });
    const utc = await a.post('/v2/tms-api/loads/L-1/tracking-events', {
      event_id: 'y-2',
      type: 'ARRIVED',
      stop_number: 2,
      occurred_at: '0099-12-31T23:59:59Z',
    });
    expect(json(utc)).toMatchObject({ occurred_at: '0099-12-31T23:59:59.000Z', occurred_at_local: '0099-12-31T18:09:23' });
    const late = await a.post('/v2/tms-api/loads/L-1/tracking-events', {
      event_id: 'y-3',
      type: 'DEPARTED',
      stop_number: 2,
      occurred_at_local: '9999-12-31T23:00',
      correction: true,
    });
    expect(late.statusCode).toBe(422);
    expect(json(late).detail).toEqual([
      {
        type: 'datetime_parsing',
        loc: ['body', 'occurred_at_local'],
        msg: 'Input should be a local time whose instant lies between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC (9999-12-31T23:00 in America/Chicago is outside)',
      },
    ]);
    const early = await a.post('/v2/tms-api/loads/L-1/tracking-events', {
      event_id: 'y-4',
      type: 'DEPARTED',
      stop_number: 2,
      occurred_at: '0000-01-01T00:30:00+01:00',
      correction: true,
    });
    expect(early.statusCode).toBe(422);
    expect(json(early).detail).toEqual([
      {
        type: 'datetime_parsing',
        loc: ['body', 'occurred_at'],
        msg: 'Input should be a valid datetime between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC (its offset moves it outside)',
      },
    ]);
    expect(json(await a.get('/v2/tms-api/loads/L-1')).stops.map((s: any) => [s.actual_arrival, s.actual_departure])).toEqual([
      ['0050-06-01T15:50:36.000Z', null],
      ['0099-12-31T23:59:59.000Z', null],
    ]);
  });
});
