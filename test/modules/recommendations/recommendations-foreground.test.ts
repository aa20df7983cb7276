import { describe, expect, it } from 'vitest';
import { foreground } from '../../../src/lib/http/foreground.js';
import { lanesService } from '../../../src/modules/lanes/lanes.service.js';
import { recommendationsFeed } from '../../../src/modules/lanes/recommendations.feed.js';
import { letTimePass, useApp, json, newTenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';

describe('foreground: the requests in flight that background work gives way to', () => {
  it('quiet() goes on at once without requests, when the last one ends, or after its wait', async () => {
    const fg = foreground();
    let t0 = performance.now();
    await fg.quiet(5_000);
    expect(performance.now() - t0).toBeLessThan(1_000);

    const endA = fg.enter();
    const endB = fg.enter();
    expect(fg.inFlight).toBe(2);
    let done = false;
    const waiting = fg.quiet(60_000).then(() => (done = true));
    await letTimePass(30);
    endA();
    endA(); // a second call is ignored: B is still in flight
    await letTimePass(30);
    expect(fg.inFlight).toBe(1);
    expect(done).toBe(false);
    endB();
    await waiting;
    expect(fg.inFlight).toBe(0);

    const endC = fg.enter();
    t0 = performance.now();
    await fg.quiet(80);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(75);
    expect(fg.inFlight).toBe(1);
    endC();
  });

  it('quiet() waits out the linger after the last request, so a client sending back to back goes first', async () => {
    const fg = foreground({ lingerMs: 60 });
    let done = false;
    const end1 = fg.enter();
    const waiting = fg.quiet(5_000).then(() => (done = true));
    await letTimePass(20);
    const t0 = performance.now();
    end1();
    // The client's next request, 20 ms after the last answer: within the linger, so it goes first.
    await letTimePass(20);
    expect(done).toBe(false);
    const end2 = fg.enter();
    await letTimePass(100);
    expect(done).toBe(false);
    end2();
    const ended = performance.now();
    await waiting;
    // Resumed a linger after the second request ended, not when the first did.
    expect(performance.now() - ended).toBeGreaterThanOrEqual(55);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(170);

    // With nothing in flight for longer than the linger, it goes on at once.
    await letTimePass(80);
    const t1 = performance.now();
    await fg.quiet(5_000);
    expect(performance.now() - t1).toBeLessThan(40);
  });

  it('quiet(wait, 0) goes on as soon as the last request ends, without the linger (an import chunk)', async () => {
    const fg = foreground({ lingerMs: 200 });
    const end = fg.enter();
    let done = false;
    const waiting = fg.quiet(5_000, 0).then(() => (done = true));
    await letTimePass(30);
    expect(done).toBe(false);
    const t0 = performance.now();
    end();
    await waiting;
    expect(performance.now() - t0).toBeLessThan(100);
    // The same foreground's own linger still holds quiet() with the default.
    const t1 = performance.now();
    await fg.quiet(5_000);
    expect(performance.now() - t1).toBeGreaterThanOrEqual(100);
  });
});

describe('the recommendations follow-up gives way to requests in flight', () => {
  // The app's own follow-up only when asked: the one under test is built below over its pipeline.
  const t = useApp({}, { recommendationFollowUp: 'manual' });
  /** A follow-up over the app's pipeline that gives way to `fg`'s requests, waiting `quietWaitMs` a step at most. */
  const feedGivingWay = (quietWaitMs: number) => {
    const fg = foreground();
    const lanes = lanesService(t.clock, { radiusMiles: t.config.laneRadiusMiles, graceMinutes: t.config.onTimeGraceMinutes });
    return { fg, feed: recommendationsFeed({ pipeline: t.pipeline, lanes, radiusMiles: t.config.laneRadiusMiles, foreground: fg, quietWaitMs }) };
  };

  it('ranks and announces nothing while a request is in flight, and all of it once the request ends', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    expect((await a.post('/v2/tms-api/loads', dallasToHouston('FG-OPEN'))).statusCode).toBe(201);
    expect((await a.post('/v2/tms-api/loads', dallasToHouston('FG-H1', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }))).statusCode).toBe(201);

    const { fg, feed } = feedGivingWay(60_000);
    const announcedFor = async (ref: string) =>
      json(await a.get('/v2/tms-api/events?types=load.recommendations_changed&limit=500')).items.filter(
        (e: { data: { external_reference_id: string } }) => e.data.external_reference_id === ref,
      );

    const endRequest = fg.enter();
    const run = feed.schedule(a.orgId);
    await letTimePass(150);
    expect(feed.stats).toEqual({ passes: 0, ranked: 0, announced: 0 });
    expect(await announcedFor('FG-OPEN')).toEqual([]);

    endRequest();
    await run;
    expect(feed.stats.passes).toBe(1);
    expect(feed.stats.announced).toBe(1);
    const [event] = await announcedFor('FG-OPEN');
    expect(event.data.carrier_recommendations.map((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id)).toEqual(['CAR-1']);
  });

  it('under requests that never end, a pass waits four times the wait in all, not once per lane group', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    // Twelve open loads on twelve lanes a few degrees apart: twelve groups ranked one after another.
    for (let i = 0; i < 12; i++) {
      const post = (ref: string, latitude: number, longitude: number) =>
        a.post('/v2/tms-api/locations', { external_reference_id: ref, name: ref, latitude, longitude, country: 'US' });
      expect((await post(`FG3-O${i}`, 31 + i * 1.5, -100)).statusCode).toBe(201);
      expect((await post(`FG3-D${i}`, 31 + i * 1.5, -90)).statusCode).toBe(201);
      const load = dallasToHouston(`FG3-L${i}`);
      load.stops[0]!.location_external_reference_id = `FG3-O${i}`;
      load.stops[1]!.location_external_reference_id = `FG3-D${i}`;
      expect((await a.post('/v2/tms-api/loads', load)).statusCode).toBe(201);
    }
    const { fg, feed } = feedGivingWay(150);
    fg.enter();
    const started = performance.now();
    await feed.schedule(a.orgId);
    const took = performance.now() - started;
    // Waiting at every step would be 150 ms × (the start, the ranking, 12 groups, a slice) = 2.25 s; the
    // start's wait and the pass's budget of 4 × 150 ms are 750 ms.
    expect(took).toBeGreaterThanOrEqual(700);
    expect(took).toBeLessThan(1_900);
    expect(feed.stats.ranked).toBe(12);
  });

  it('a request that never ends holds each step for the wait at most, not for ever', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/loads', dallasToHouston('FG2-OPEN'));
    await a.post('/v2/tms-api/loads', dallasToHouston('FG2-H1', { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' }));
    const { fg, feed } = feedGivingWay(100);
    fg.enter();
    const started = performance.now();
    await feed.schedule(a.orgId);
    // Each step waited its 100 ms: the start of the run, the ranking, its lane group, its one slice.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(feed.stats.announced).toBe(1);
  });
});
