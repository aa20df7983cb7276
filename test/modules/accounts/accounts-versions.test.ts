import { describe, expect, it } from 'vitest';
import { readVersions } from '../../../src/lib/db/versions.js';
import { useApp, newTenant } from '../../helpers.js';

// User and API key writes move their organization's counters (src/lib/db/versions.ts) in their own
// transaction: kept loads (reps matched to users) and kept keys depend on them.

const t = useApp();

describe('account writes move the organization counters', () => {
  it('users: create; API keys: create, limits, rotate, revoke; the last-used touch moves nothing', async () => {
    const a = await newTenant(t);
    const { accounts } = t.services;
    const at = async () => readVersions(t.store.db, a.orgId);
    const start = await at();
    await accounts.createUser(a.orgId, { email: `ops-${a.orgId}@example.test`, name: 'Olive Ops' });
    expect(await at()).toEqual({ ...start, users: start.users + 1 });
    const key = await accounts.createKey(a.orgId, { name: 'k2', externalSystem: 'vitest', scopes: ['read:loads'] });
    expect((await at()).api_keys).toBe(start.api_keys + 1);
    await accounts.updateKeyLimits(a.orgId, key.id, { perMinute: 5, perDay: 50 });
    expect((await at()).api_keys).toBe(start.api_keys + 2);
    const rotated = await accounts.rotateKey(a.orgId, key.id);
    expect((await at()).api_keys).toBe(start.api_keys + 3);
    await accounts.revokeKey(a.orgId, rotated.id);
    expect((await at()).api_keys).toBe(start.api_keys + 4);
    // Revoking a revoked key writes nothing.
    await accounts.revokeKey(a.orgId, rotated.id);
    const settled = await at();
    expect(settled.api_keys).toBe(start.api_keys + 4);
    // A request records the key's last use: no counter moves.
    expect((await a.get('/v2/tms-api/customers?page_size=1')).statusCode).toBe(200);
    expect(await at()).toEqual(settled);
    expect(settled).toMatchObject({ customers: 0, loads: 0 });
  });
});
