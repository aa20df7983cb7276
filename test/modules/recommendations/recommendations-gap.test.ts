import { describe, expect, it } from 'vitest';
import { letTimePass, useApp, json, newTenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';

// RECOMMENDATIONS_FOLLOW_UP_GAP_MS: an organization's follow-up runs are at least the gap apart, and the
// writes that arrive meanwhile are followed up together by one run (docs/events.md).
// Wide enough that three writes sent together answer within it on a loaded CI machine (600 ms was not).
const GAP_MS = 2000;
const t = useApp({ recommendationsFollowUpGapMs: GAP_MS });

describe('the recommendations follow-up under a steady push', () => {
  it('follows up the writes made within the gap together, in one run, no sooner than the gap after the last run', async () => {
    const a = await newTenant(t);
    await seedFreight(a);
    await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Second Carrier' });
    await a.post('/v2/tms-api/loads', dallasToHouston('OPEN-1'));
    await t.recommendations.idle();
    const delivered = (ref: string, carrier: string) => dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: carrier });

    // A write after a quiet spell: followed up at once (one run).
    await letTimePass(GAP_MS);
    const before = { ...t.recommendations.stats };
    await a.post('/v2/tms-api/loads', delivered('H-1', 'CAR-1'));
    await t.recommendations.idle();
    const firstEnded = Date.now();
    expect(t.recommendations.stats.passes - before.passes).toBe(1);

    // Three writes right after it: one more run, after the gap, that sees all three.
    const mid = { ...t.recommendations.stats };
    const answers = await Promise.all((['H-2', 'H-3', 'H-4'] as const).map((ref) => a.post('/v2/tms-api/loads', delivered(ref, 'CAR-2'))));
    expect(answers.map((r) => r.statusCode)).toEqual([201, 201, 201]);
    // The premise: all three arrived within the gap (else this machine, not the rule, is under test).
    expect(Date.now() - firstEnded).toBeLessThan(GAP_MS);
    await t.recommendations.idle();
    expect(Date.now() - firstEnded).toBeGreaterThanOrEqual(GAP_MS - 20);
    expect(t.recommendations.stats.passes - mid.passes).toBe(1);

    // What was announced is what GET shows: CAR-2 (three loads) ahead of CAR-1 (one).
    const open = json(await a.get('/v2/tms-api/loads/OPEN-1'));
    expect(open.carrier_recommendations.map((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id)).toEqual(['CAR-2', 'CAR-1']);
    const feed = json(await a.get('/v2/tms-api/events?types=load.recommendations_changed&limit=500'));
    const last = feed.items.filter((e: { data: { external_reference_id: string } }) => e.data.external_reference_id === 'OPEN-1').at(-1);
    expect(last.data.carrier_recommendations).toEqual(open.carrier_recommendations);
  });
});
