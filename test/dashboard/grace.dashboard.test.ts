import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers.js';
import { Visitor, apiPost, csrfOf, signedIn as signedInAs } from './support.js';

/** Settings → Recommendations: the organization's on-time grace (D14), as README and docs say. */
const t = useApp({ onTimeGraceMinutes: 15 });

const signedIn = () => signedInAs(t);

describe('Settings → Recommendations', () => {
  it('an admin sets the grace; the evidence counts with it at once; empty returns to the default; audited', async () => {
    const { o, v } = await signedIn();
    const first = await v.get('/settings/recommendations');
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('<strong data-grace>15 minutes</strong>');
    expect(first.body).toContain('the server’s default');
    // A delivered load 20 minutes past its window's end, and an open load on its lane.
    const key = o.key!;
    for (const [ref, city, zip] of [
      ['GR-DAL', 'Dallas', '75201'],
      ['GR-HOU', 'Houston', '77002'],
    ] as const) {
      expect((await apiPost(t, key, '/v2/tms-api/locations', { external_reference_id: ref, name: city, postal_code: zip, state: 'TX' })).statusCode).toBe(201);
    }
    expect((await apiPost(t, key, '/v2/tms-api/customers', { external_reference_id: 'GR-C', name: 'Grace Co' })).statusCode).toBe(201);
    expect((await apiPost(t, key, '/v2/tms-api/carriers', { external_reference_id: 'GR-CAR', name: 'Late Twenty' })).statusCode).toBe(201);
    const load = (ref: string, extra: Record<string, unknown>) => ({
      external_reference_id: ref,
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'GR-C',
      stops: [
        { stop_type: 'PICKUP', location_external_reference_id: 'GR-DAL', early_arrival: '2026-10-01T08:00:00Z', late_arrival: '2026-10-01T10:00:00Z' },
        {
          stop_type: 'DELIVERY',
          location_external_reference_id: 'GR-HOU',
          early_arrival: '2026-10-02T08:00:00Z',
          late_arrival: '2026-10-02T10:00:00Z',
          ...(extra.actual ? { actual_arrival: extra.actual } : {}),
        },
      ],
      ...(extra.body as object),
    });
    expect(
      (
        await apiPost(
          t,
          key,
          '/v2/tms-api/loads',
          load('GR-H', { actual: '2026-10-02T10:20:00Z', body: { status: 'DELIVERED', carrier_external_reference_id: 'GR-CAR' } }),
        )
      ).statusCode,
    ).toBe(201);
    expect((await apiPost(t, key, '/v2/tms-api/loads', load('GR-OPEN', { body: {} }))).statusCode).toBe(201);
    const onTime = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/v2/tms-api/loads/GR-OPEN/carrier-recommendations', headers: { 'x-api-key': key } });
      return JSON.parse(res.body).carrier_recommendations[0].evidence.on_time.delivery as { rate: number; scored: number };
    };
    expect(await onTime()).toMatchObject({ rate: 0, scored: 1 });

    const csrf = csrfOf(first.body);
    const bad = await v.post('/settings/recommendations', { _csrf: csrf, on_time_grace_minutes: '2000' });
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain('The on-time grace is a whole number of minutes from 0 to 1440, or empty for the server&#39;s default');
    const words = await v.post('/settings/recommendations', { _csrf: csrf, on_time_grace_minutes: 'ten' });
    expect(words.statusCode).toBe(422);
    expect(words.body).toContain('value="ten"');
    expect(bad.body).toContain('value="2000"');
    const saved = await v.post('/settings/recommendations', { _csrf: csrf, on_time_grace_minutes: '30' });
    expect(saved.statusCode).toBe(303);
    const after = await v.get('/settings/recommendations?done=saved');
    expect(after.body).toContain('<strong data-grace>30 minutes</strong>');
    expect(after.body).toContain('Saved. Recommendations count on time with 30 minutes’ grace from now on.');
    // 20 minutes late is on time with 30 minutes' grace: the same answer, read again, says so.
    expect(await onTime()).toMatchObject({ rate: 1, scored: 1 });
    // The same value again changes nothing and is not recorded (one entry per change below).
    expect((await v.post('/settings/recommendations', { _csrf: csrf, on_time_grace_minutes: '30' })).statusCode).toBe(303);
    expect((await v.post('/settings/recommendations', { _csrf: csrf, on_time_grace_minutes: '' })).statusCode).toBe(303);
    expect(await onTime()).toMatchObject({ rate: 0, scored: 1 });
    expect((await t.services.accounts.getOrganization(o.orgId))?.on_time_grace_minutes).toBeNull();

    const audit = await t.store.db
      .selectFrom('audit_log')
      .select(['action', 'actor_type', 'actor_id'])
      .where('org_id', '=', o.orgId)
      .where('target_id', '=', 'on_time_grace_minutes')
      .execute();
    expect(audit).toEqual([
      { action: 'settings.changed', actor_type: 'user', actor_id: o.userId },
      { action: 'settings.changed', actor_type: 'user', actor_id: o.userId },
    ]);
  });

  it('a member sees the grace but no form, and the server refuses a member’s change', async () => {
    const { o, v } = await signedIn();
    const member = { email: `grace-member-${o.orgId}@example.com`, password: 'correct horse member grace' };
    await t.services.accounts.createUser(o.orgId, { email: member.email, name: 'Mo Member', password: member.password });
    const m = new Visitor(t);
    await m.signIn(member.email, member.password);
    const seen = await m.get('/settings/recommendations');
    expect(seen.statusCode).toBe(200);
    expect(seen.body).toContain('<strong data-grace>15 minutes</strong>');
    expect(seen.body).not.toContain('name="on_time_grace_minutes"');
    expect(seen.body).toContain('Only an admin of your organization can change the grace.');
    const refused = await m.post('/settings/recommendations', { _csrf: csrfOf(seen.body), on_time_grace_minutes: '5' });
    expect(refused.statusCode).toBe(403);
    expect((await t.services.accounts.getOrganization(o.orgId))?.on_time_grace_minutes).toBeNull();
    expect((await v.get('/settings/recommendations')).body).toContain('name="on_time_grace_minutes"');
  });
});
