import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../../src/lib/http/scopes.js';
import { useApp, json, newTenant } from '../../helpers.js';

// D17 at the API: key lifetimes (expires_at, rotation with a grace period, last_used_at) and the audit log.
const t = useApp({ webhookAllowInsecure: false }, { webhookDelivery: 'manual' });

const HOUR = 3_600_000;
const get = (key: string, url: string, remoteAddress = '127.0.0.1') => t.app.inject({ method: 'GET', url, remoteAddress, headers: { 'x-api-key': key } });

async function auditOf(orgId: string) {
  return await t.store.db.selectFrom('audit_log').selectAll().where('org_id', '=', orgId).orderBy('at').orderBy('id').execute();
}

describe('key expiry (D17)', () => {
  it('a key works until expires_at, then 401 with a message saying it expired; key lists say so', async () => {
    const a = await newTenant(t);
    const expiresAt = new Date(t.clock.now().getTime() + HOUR).toISOString();
    const k = await t.services.accounts.createKey(a.orgId, { name: 'short-lived', externalSystem: 'BI', scopes: ['read:customers', 'read:loads'], expiresAt });
    expect(k.expires_at).toBe(expiresAt);
    expect((await get(k.key, '/v2/tms-api/customers')).statusCode).toBe(200);
    expect((await get(k.key, '/v2/tms-api/loads')).statusCode).toBe(200);
    t.clock.advance(HOUR);
    for (const url of ['/v2/tms-api/customers', '/v2/tms-api/loads']) {
      const res = await get(k.key, url);
      expect(res.statusCode).toBe(401);
      expect(json(res)).toEqual({
        error: { code: 'UNAUTHORIZED', message: `API key expired at ${expiresAt}: ask an admin of your organization for a new key` },
      });
    }
    const listed = (await t.services.accounts.listKeys(a.orgId)).find((x) => x.id === k.id)!;
    expect(listed).toMatchObject({ status: 'expired', expires_at: expiresAt, revoked_at: null });
  });

  it('refuses an expiry in the past or that is not a time (422 on expires_at)', async () => {
    const a = await newTenant(t);
    const past = new Date(t.clock.now().getTime() - 1000).toISOString();
    await expect(t.services.accounts.createKey(a.orgId, { name: 'x', externalSystem: 'y', scopes: ['read:loads'], expiresAt: past })).rejects.toMatchObject({
      issues: [{ loc: ['expires_at'], msg: expect.stringContaining('must be in the future') }],
    });
    const { parseExpiry } = await import('../../../src/modules/accounts/accounts.service.js');
    expect(parseExpiry('2030-02-03', new Date('2026-11-25T00:00:00Z'))).toBe('2030-02-03T00:00:00.000Z');
    expect(parseExpiry('2030-02-03T10:00:00+02:00', new Date('2026-11-25T00:00:00Z'))).toBe('2030-02-03T08:00:00.000Z');
    expect(() => parseExpiry('2030-02-30', new Date('2026-11-25T00:00:00Z'))).toThrow(/ISO 8601/);
    expect(() => parseExpiry('tomorrow', new Date('2026-11-25T00:00:00Z'))).toThrow(/ISO 8601/);
  });
});

describe('rotation with a grace period (D17)', () => {
  it('the old key works through the grace period beside the new one, then 401; without grace it stops at once', async () => {
    const a = await newTenant(t, ['read:customers', 'read:loads']);
    // Seen once before the rotation (kept in memory on this instance, folded on PostgreSQL).
    expect((await get(a.key, '/v2/tms-api/loads')).statusCode).toBe(200);
    const rotated = await t.services.accounts.rotateKey(a.orgId, a.keyId, { graceHours: 2 });
    const graceEnd = rotated.old_key.works_until!;
    expect(Date.parse(graceEnd) - t.clock.now().getTime()).toBeGreaterThan(2 * HOUR - 1000);
    expect(rotated.old_key.revoked_at).toBeNull();
    for (const url of ['/v2/tms-api/customers', '/v2/tms-api/loads']) {
      expect((await get(a.key, url)).statusCode).toBe(200);
      expect((await get(rotated.key, url)).statusCode).toBe(200);
    }
    const during = await t.services.accounts.listKeys(a.orgId);
    expect(during.map((k) => [k.id, k.status, k.replaced_by_key_id])).toEqual([
      [a.keyId, 'active', rotated.id],
      [rotated.id, 'active', null],
    ]);
    // A key being phased out cannot be rotated again (its replacement can).
    await expect(t.services.accounts.rotateKey(a.orgId, a.keyId)).rejects.toMatchObject({ status: 409 });

    t.clock.advance(2 * HOUR - 60_000);
    expect((await get(a.key, '/v2/tms-api/loads')).statusCode).toBe(200);
    t.clock.advance(60_000);
    for (const url of ['/v2/tms-api/customers', '/v2/tms-api/loads']) {
      const old = await get(a.key, url);
      expect(old.statusCode).toBe(401);
      expect(json(old).error.message).toBe(`API key expired at ${graceEnd}: ask an admin of your organization for a new key`);
      expect((await get(rotated.key, url)).statusCode).toBe(200);
    }

    // Without grace: the old key is revoked at once (the D1 401).
    const again = await t.services.accounts.rotateKey(a.orgId, rotated.id);
    expect(again.old_key).toMatchObject({ id: rotated.id, works_until: null, revoked_at: expect.any(String) });
    const cut = await get(rotated.key, '/v2/tms-api/loads');
    expect(cut.statusCode).toBe(401);
    expect(json(cut).error.message).toBe('Invalid or missing API key: send it in the X-API-Key header');
    expect((await get(again.key, '/v2/tms-api/loads')).statusCode).toBe(200);
  });

  it('a grace period never outlasts the key’s own expiry, and is refused outside 0 to 720 hours', async () => {
    const a = await newTenant(t);
    const expiresAt = new Date(t.clock.now().getTime() + HOUR).toISOString();
    const k = await t.services.accounts.createKey(a.orgId, { name: 'x', externalSystem: 'y', scopes: ['read:loads'], expiresAt });
    const rotated = await t.services.accounts.rotateKey(a.orgId, k.id, { graceHours: 24 });
    expect(rotated.old_key.works_until).toBe(expiresAt);
    // The new key keeps the old one's end.
    expect((await t.services.accounts.getKey(a.orgId, rotated.id)).expires_at).toBe(expiresAt);
    const b = await newTenant(t);
    await expect(t.services.accounts.rotateKey(b.orgId, b.keyId, { graceHours: 721 })).rejects.toMatchObject({ issues: [{ loc: ['grace_hours'] }] });
    await expect(t.services.accounts.rotateKey(b.orgId, b.keyId, { graceHours: 1.5 })).rejects.toMatchObject({ issues: [{ loc: ['grace_hours'] }] });
  });
});

describe('last_used_at (D17)', () => {
  it('is told to the minute, and written at most once a minute per key (not on every request)', async () => {
    const a = await newTenant(t, ['read:customers']);
    expect((await t.services.accounts.getKey(a.orgId, a.keyId)).last_used_at).toBeNull();
    const writes: string[] = [];
    const first = t.clock.now();
    for (let i = 0; i < 5; i++) expect((await a.get('/v2/tms-api/customers')).statusCode).toBe(200);
    // The write is off the request's path: wait for it.
    await expect.poll(async () => (await t.services.accounts.getKey(a.orgId, a.keyId)).last_used_at).not.toBeNull();
    const row = await t.store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', a.keyId).executeTakeFirstOrThrow();
    writes.push(row.last_used_at!);
    // Five requests, one write: the stored time is the first request's.
    expect(Date.parse(row.last_used_at!) - first.getTime()).toBeLessThan(50);
    const shown = (await t.services.accounts.getKey(a.orgId, a.keyId)).last_used_at!;
    expect(shown).toBe(`${row.last_used_at!.slice(0, 16)}:00.000Z`);
  });
});

describe('audit log (D17)', () => {
  it('records each webhook endpoint change made with a key exactly once, with the key as actor, the time and the address', async () => {
    const a = await newTenant(t, SCOPES);
    const before = t.clock.now().toISOString();
    const ip = '198.51.100.23';
    const call = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
      t.app.inject({ method, url, remoteAddress: ip, headers: { 'x-api-key': a.key }, ...(payload ? { payload: payload as never } : {}) });
    const created = await call('POST', '/v2/tms-api/webhook-endpoints', { url: 'https://93.184.216.34/hooks' });
    expect(created.statusCode).toBe(201);
    const id = json(created).id as string;
    expect((await call('PUT', `/v2/tms-api/webhook-endpoints/${id}`, { description: 'TMS' })).statusCode).toBe(200);
    expect((await call('POST', `/v2/tms-api/webhook-endpoints/${id}/rotate-secret`)).statusCode).toBe(200);
    expect((await call('POST', `/v2/tms-api/webhook-endpoints/${id}/replay`, { after_sequence: 0 })).statusCode).toBe(202);
    expect((await call('DELETE', `/v2/tms-api/webhook-endpoints/${id}`)).statusCode).toBe(204);
    // A refused change leaves no entry (the entry is written in the change's transaction).
    expect((await call('PUT', `/v2/tms-api/webhook-endpoints/${id}`, { description: 'gone' })).statusCode).toBe(404);

    const rows = await auditOf(a.orgId);
    const webhookRows = rows.filter((r) => r.target_type === 'webhook_endpoint');
    expect(webhookRows.map((r) => r.action)).toEqual([
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.replayed',
      'webhook_endpoint.deleted',
    ]);
    for (const r of webhookRows) {
      expect(r).toMatchObject({ actor_type: 'key', actor_id: a.keyId, actor_name: 'test', target_id: id, ip });
      expect(r.at >= before && r.at <= t.clock.now().toISOString()).toBe(true);
    }

    // The API's list: newest first, the D17 entry shape, filters.
    const page = await a.get('/v2/tms-api/audit-log?action=webhook_endpoint.&page_size=2');
    expect(page.statusCode).toBe(200);
    const body = json(page);
    expect(body.pagination).toMatchObject({ page: 1, page_size: 2, total: 5, total_pages: 3, has_more: true });
    expect(body.items[0]).toEqual({
      id: webhookRows[4]!.id,
      at: webhookRows[4]!.at,
      action: 'webhook_endpoint.deleted',
      actor: { type: 'key', id: a.keyId, name: 'test' },
      target: { type: 'webhook_endpoint', id },
      ip,
    });
    expect(body.items[1].action).toBe('webhook_endpoint.replayed');
    const one = json(await a.get('/v2/tms-api/audit-log?action=webhook_endpoint.created'));
    expect(one.items.map((e: { action: string }) => e.action)).toEqual(['webhook_endpoint.created']);
    const byKey = json(await a.get(`/v2/tms-api/audit-log?actor_type=KEY&actor_id=${a.keyId}&target_id=${id}`));
    expect(byKey.pagination.total).toBe(5);
    const late = json(await a.get(`/v2/tms-api/audit-log?created_since=${encodeURIComponent(webhookRows[3]!.at)}`));
    expect(late.items.map((e: { action: string }) => e.action)).toEqual(['webhook_endpoint.deleted', 'webhook_endpoint.replayed']);
    const bad = await a.get('/v2/tms-api/audit-log?actor_type=robot');
    expect(bad.statusCode).toBe(422);
    expect(json(bad).detail[0].loc).toEqual(['query', 'actor_type']);
  });

  it('needs read:audit (403 naming it), and shows only the caller’s organization', async () => {
    const a = await newTenant(t, ['read:loads']);
    const res = await a.get('/v2/tms-api/audit-log');
    expect(res.statusCode).toBe(403);
    expect(json(res)).toEqual({ error: { code: 'FORBIDDEN', message: 'API key does not have the required scope: read:audit' } });
    const b = await newTenant(t, ['read:audit']);
    const other = json(await b.get('/v2/tms-api/audit-log'));
    // b's own setup (its integration connected, its key made, by the command line / service), newest first; none of a's.
    expect(other.items.map((e: { action: string; actor: { type: string }; target: { id: string } }) => [e.action, e.actor.type, e.target.id])).toEqual([
      ['key.created', 'cli', b.keyId],
      ['settings.changed', 'cli', 'tms_integration'],
    ]);
  });

  it('records key and user changes made from the command line once each, and keeps entries 400 days', async () => {
    const a = await newTenant(t, ['read:audit']);
    const { accounts } = t.services;
    const admin = await accounts.createUser(a.orgId, { email: `admin-${a.orgId}@example.com`, name: 'Ann Admin' });
    const member = await accounts.createUser(a.orgId, { email: `member-${a.orgId}@example.com`, name: 'Mo Member' });
    expect([admin.role, member.role]).toEqual(['admin', 'member']);
    await accounts.setPassword(member.email, 'a fine new password');
    const k = await accounts.createKey(a.orgId, { name: 'n', externalSystem: 's', scopes: ['read:loads'] });
    await accounts.updateKeyLimits(a.orgId, k.id, { perMinute: 5, perDay: 50 });
    const r = await accounts.rotateKey(a.orgId, k.id);
    await accounts.revokeKey(a.orgId, r.id);
    await accounts.revokeKey(a.orgId, r.id); // already revoked: no second entry
    const rows = await auditOf(a.orgId);
    expect(rows.map((x) => [x.action, x.target_id])).toEqual([
      ['settings.changed', 'tms_integration'],
      ['key.created', a.keyId],
      ['user.created', admin.id],
      ['user.created', member.id],
      ['user.password_set', member.id],
      ['key.created', k.id],
      ['key.limits_changed', k.id],
      ['key.rotated', k.id],
      ['key.revoked', r.id],
    ]);
    expect(new Set(rows.map((x) => `${x.actor_type} ${x.actor_id} ${x.ip}`))).toEqual(new Set(['cli null null']));

    // 400 days on, the next change drops what is older.
    t.clock.advance(400 * 24 * HOUR + 60_000);
    await accounts.setRole(a.orgId, member.id, 'admin', { type: 'user', id: admin.id, name: 'Ann Admin', ip: '203.0.113.9' });
    const kept = await auditOf(a.orgId);
    expect(kept.map((x) => [x.action, x.actor_type, x.actor_id, x.ip])).toEqual([['user.role_changed', 'user', admin.id, '203.0.113.9']]);
    // An organization keeps an admin.
    await accounts.setRole(a.orgId, admin.id, 'member', { type: 'user', id: admin.id, name: 'Ann Admin', ip: null });
    await expect(accounts.setRole(a.orgId, member.id, 'member', { type: 'user', id: member.id, name: 'Mo Member', ip: null })).rejects.toMatchObject({
      status: 409,
    });
    expect((await auditOf(a.orgId)).map((x) => x.action)).toEqual(['user.role_changed', 'user.role_changed']);
  });
});
