import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers.js';
import { csrfOf, signedIn as signedInAs } from './support.js';

/** Settings → Webhooks without a browser: tenancy, CSRF, the URL rules on the form. */
const t = useApp({ webhookAllowInsecure: false }, { webhookDelivery: 'manual' });

const signedIn = () => signedInAs(t);

describe('Settings → Webhooks', () => {
  it('shows another organization’s endpoint as not found, on every page and action', async () => {
    const { o: owner } = await signedIn();
    const ep = await t.webhooks.service.create(owner.orgId, { url: 'https://93.184.216.34/hooks' });
    const { v: stranger } = await signedIn();
    for (const path of ['', '/rotate', '/delete']) {
      const res = await stranger.get(`/settings/webhooks/${ep.id}${path}`);
      expect(res.statusCode, path).toBe(404);
      expect(res.body).toContain(`Webhook endpoint with id &#39;${ep.id}&#39; not found`);
    }
    const csrf = csrfOf((await stranger.get('/settings/webhooks')).body);
    for (const action of ['test', 'replay', 'status', 'rotate', 'delete']) {
      const res = await stranger.post(`/settings/webhooks/${ep.id}/${action}`, { _csrf: csrf, after_sequence: '0', status: 'disabled' });
      expect(res.statusCode, action).toBe(404);
    }
    expect((await t.webhooks.service.get(owner.orgId, ep.id)).status).toBe('enabled');
  });

  it('refuses a form without its CSRF token', async () => {
    const { o, v } = await signedIn();
    const ep = await t.webhooks.service.create(o.orgId, { url: 'https://93.184.216.34/hooks' });
    const res = await v.post(`/settings/webhooks/${ep.id}/delete`, {});
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('Form expired');
    expect((await t.webhooks.service.get(o.orgId, ep.id)).id).toBe(ep.id);
  });

  it('explains a refused URL next to the field (422), and keeps what was typed', async () => {
    const { v } = await signedIn();
    const res = await v.submit('/settings/webhooks', '/settings/webhooks', {
      url: 'http://10.0.0.8/hooks',
      event_types: ['load.created'],
      description: 'Internal',
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain(
      '<span class="field-error" id="f-url-error">URL scheme should be https (for development only, the server setting WEBHOOK_ALLOW_INSECURE=on allows http)</span>',
    );
    expect(res.body).toContain('value="http://10.0.0.8/hooks"');
    expect(res.body).toMatch(/value="load.created" checked/);
    const private_ = await v.submit('/settings/webhooks', '/settings/webhooks', { url: 'https://10.0.0.8/hooks' });
    expect(private_.statusCode).toBe(422);
    expect(private_.body).toContain('URL must point to a public host: this one has no address, or a loopback, private, link-local or other non-public one');
    expect(private_.body).not.toContain('resolves to');
    expect(private_.body).toContain('No endpoints yet.');
  });
});
