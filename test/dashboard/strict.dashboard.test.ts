import { describe, expect, it } from 'vitest';
import { useDashboardApp, Visitor, apiPost, orgWithUser } from './support.js';

// D16 on the dashboard: ignored fields per key and field on the Overview's integration health; strict keys in Settings → API Keys.

const t = useDashboardApp();

describe('D16 on the dashboard', () => {
  it('the Overview counts ignored fields per key, request and field', async () => {
    const org = await orgWithUser(t);
    const visitor = new Visitor(t);
    await visitor.signIn(org.email, org.password);
    for (const ref of ['A', 'B', 'C']) {
      const res = await apiPost(t, org.key!, '/v2/tms-api/carriers', {
        external_reference_id: ref,
        name: 'Swift',
        contacts: [{ first_name: 'Ann', phone_number: '555' }],
      });
      expect(res.statusCode).toBe(201);
    }
    expect((await apiPost(t, org.key!, '/v2/tms-api/customers', { external_reference_id: 'C', name: 'Acme', phone_number: '1' })).statusCode).toBe(201);
    const body = (await visitor.get('/')).body;
    const table = body.slice(body.indexOf('id="ignored-fields"'));
    const rows = [
      ...table.matchAll(/<tr><td>([^<]*)<\/td><td class="mono">([^<]*)<\/td><th scope="row" class="mono">([^<]*)<\/th><td class="num">(\d+)<\/td>/g),
    ].map((m) => m.slice(1, 5));
    expect(rows).toEqual([
      ['seed', 'POST /v2/tms-api/carriers', 'body.contacts[].phone_number', '3'],
      ['seed', 'POST /v2/tms-api/customers', 'body.phone_number', '1'],
    ]);
  });

  it('Settings → API Keys creates a strict key, and Edit limits turns it off', async () => {
    const org = await orgWithUser(t);
    const visitor = new Visitor(t);
    await visitor.signIn(org.email, org.password);
    const created = await visitor.submit('/settings/api-keys', '/settings/api-keys', {
      name: 'Strict sync',
      external_system: 'TMS',
      scopes: ['read:customers', 'write:customers'],
      per_minute: '100',
      per_day: '10000',
      strict: 'on',
    });
    expect(created.statusCode).toBe(200);
    const key = /lbk_[0-9a-f]{64}/.exec(created.body)![0];
    const send = () => apiPost(t, key, '/v2/tms-api/customers', { external_reference_id: 'S', name: 'A', nmae: 'x' });
    expect((await send()).statusCode).toBe(422);
    const list = (await visitor.get('/settings/api-keys')).body;
    expect(list).toContain('<span class="badge">strict</span>');
    const summary = (await t.services.accounts.listKeys(org.orgId)).find((k) => k.name === 'Strict sync')!;
    expect(summary.strict).toBe(true);
    const saved = await visitor.submit(`/settings/api-keys/${summary.id}/limits`, `/settings/api-keys/${summary.id}/limits`, {
      per_minute: '100',
      per_day: '10000',
    });
    expect(saved.statusCode).toBe(303);
    const lenient = await send();
    expect(lenient.statusCode).toBe(201);
    expect(lenient.headers['lanebridge-ignored-fields']).toBe('body.nmae');
  });
});
