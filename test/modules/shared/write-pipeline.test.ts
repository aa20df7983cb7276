import { describe, expect, it } from 'vitest';
import { readVersions } from '../../../src/lib/db/versions.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

// The one write path (src/modules/shared/write-pipeline.ts): whoever calls a service, the change
// commits with its counters and the stats of the lanes it moved (in the same transaction).

const t = useApp();

async function analyticsRuns(): Promise<number> {
  const { values } = await t.metrics.registry.getSingleMetric('lanebridge_analytics_runs_total')!.get();
  return values.reduce((n, v) => n + v.value, 0);
}

async function tenantWithPlaces(): Promise<Tenant> {
  const a = await newTenant(t);
  await seedFreight(a);
  return a;
}

const deliveredLoad = (ref: string) => dallasToHouston(ref, { status: 'DELIVERED', carrier_external_reference_id: 'CAR-1' });

describe('the write pipeline', () => {
  it('a service call outside HTTP (dashboard, CLI) refreshes lane stats and counts one analytics run', async () => {
    const a = await tenantWithPlaces();
    const runs = await analyticsRuns();
    await t.services.loads.create(a.orgId, deliveredLoad('L-1') as never);
    expect(await analyticsRuns()).toBe(runs + 1);
    const stats = await t.store.db.selectFrom('lane_stats').select(['equipment_type', 'load_count', 'carrier_count']).where('org_id', '=', a.orgId).execute();
    expect(stats).toEqual([{ equipment_type: 'DRY_VAN', load_count: 1, carrier_count: 1 }]);
    await t.services.loads.delete(a.orgId, 'L-1');
    expect(await t.store.db.selectFrom('lane_stats').select('load_count').where('org_id', '=', a.orgId).execute()).toEqual([]);
  });

  it('moves the counter of the kind written, in the same transaction; an unchanged write moves nothing', async () => {
    const a = await tenantWithPlaces();
    const before = await readVersions(t.store.db, a.orgId);
    expect(before).toMatchObject({ customers: 1, carriers: 1, locations: 2, loads: 0 });
    expect((await a.put('/v2/tms-api/customers/CUST-1', { name: 'Acme Foods' })).statusCode).toBe(200);
    expect(await readVersions(t.store.db, a.orgId)).toEqual(before);
    expect((await a.put('/v2/tms-api/customers/CUST-1', { name: 'Acme Frozen' })).statusCode).toBe(200);
    expect(await readVersions(t.store.db, a.orgId)).toEqual({ ...before, customers: 2 });
    expect(
      (
        await a.post('/v2/tms-api/market-rates', {
          origin: { location_external_reference_id: 'DAL' },
          destination: { location_external_reference_id: 'HOU' },
          equipment_type: 'DRY_VAN',
          rate_per_mile: 2.5,
        })
      ).statusCode,
    ).toBe(201);
    expect((await readVersions(t.store.db, a.orgId)).market_rates).toBe(1);
  });

  it('a batch moves the counters of its saved items only; a refused item writes nothing', async () => {
    const a = await tenantWithPlaces();
    const before = await readVersions(t.store.db, a.orgId);
    const runs = await analyticsRuns();
    const res = await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: { ...deliveredLoad('B-1'), customer_external_reference_id: 'NOPE' } },
        { operation: 'update', external_reference_id: 'B-404', load: { description: 'x' } },
      ],
    });
    expect(json(res)).toMatchObject({ success_count: 0, error_count: 2 });
    expect(await readVersions(t.store.db, a.orgId)).toEqual(before);
    // Exactly one analytics run per batch request, whatever its items did (D7).
    expect(await analyticsRuns()).toBe(runs + 1);
    const ok = await a.post('/v2/tms-api/batch/loads', {
      items: [
        { operation: 'create', load: deliveredLoad('B-1') },
        { operation: 'create', load: deliveredLoad('B-2') },
      ],
    });
    expect(json(ok)).toMatchObject({ success_count: 2 });
    const after = await readVersions(t.store.db, a.orgId);
    // The batch's one transaction is sealed once, on both engines.
    expect(after.loads).toBe(1);
    expect(after.customers).toBe(before.customers);
  });
});
