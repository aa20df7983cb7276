import type { Kysely } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { fillDeliveryDeadlines } from '../../../src/lib/db/migrations/0021_delivery_deadline.js';
import { seedFreight } from '../../fixtures.js';
import { useApp, newTenant, type Tenant } from '../../helpers.js';

// D14's backhaul reads the ranked carriers' loads on their way by loads.delivery_deadline (migration
// 0021): the late_arrival of the load's last Delivery/Both stop by stop_number, D7's destination. The
// write path keeps it on create, update and upsert; the fill that runs after the migrations (in batches,
// outside the migration's transaction) finds the same for loads written before 0021 or by an older
// instance during a rolling deploy.

let a: Tenant;
const t = useApp();
beforeAll(async () => {
  a = await newTenant(t);
  await seedFreight(a);
});

const stop = (n: number, type: string, loc: string, day: number, lateHour: number) => ({
  stop_number: n,
  stop_type: type,
  location_external_reference_id: loc,
  early_arrival: `2026-03-0${day}T06:00:00.000Z`,
  late_arrival: `2026-03-0${day}T${String(lateHour).padStart(2, '0')}:00:00.000Z`,
});

const load = (ref: string, stops: unknown[]) => ({
  external_reference_id: ref,
  equipment_type: 'DRY_VAN',
  transport_mode: 'FTL',
  customer_external_reference_id: 'CUST-1',
  stops,
});

const deadlines = async () => {
  const rows = await t.store.db
    .selectFrom('loads')
    .select(['external_reference_id', 'delivery_deadline'])
    .where('org_id', '=', a.orgId)
    .orderBy('external_reference_id')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.external_reference_id, r.delivery_deadline]));
};

describe('loads.delivery_deadline', () => {
  it('is the last delivery by stop_number (not the last stop, not the order sent), kept by create, upsert and update; the backfill agrees', async () => {
    const created = [
      load('DD-PLAIN', [stop(1, 'Pickup', 'DAL', 2, 10), stop(2, 'Delivery', 'HOU', 3, 12)]),
      // A pickup after the last delivery: the deadline is the delivery's.
      load('DD-PICKUP-LAST', [stop(1, 'Pickup', 'DAL', 2, 10), stop(2, 'Delivery', 'HOU', 3, 12), stop(3, 'Pickup', 'DAL', 4, 9)]),
      // Sent out of order, a Both stop last by number.
      load('DD-BOTH', [stop(3, 'Both', 'DAL', 5, 15), stop(1, 'Pickup', 'DAL', 2, 10), stop(2, 'Delivery', 'HOU', 3, 12)]),
    ];
    for (const body of created) {
      const res = await a.post('/v2/tms-api/loads', body);
      expect(res.statusCode, res.body).toBe(201);
    }
    const upsert = await a.post('/v2/tms-api/batch/loads', {
      items: [{ operation: 'upsert', load: load('DD-UPSERT', [stop(1, 'Pickup', 'DAL', 2, 10), stop(2, 'Delivery', 'HOU', 6, 18)]) }],
    });
    expect(JSON.parse(upsert.body), upsert.body).toMatchObject({ success_count: 1, error_count: 0 });
    expect(await deadlines()).toEqual({
      'DD-BOTH': '2026-03-05T15:00:00.000Z',
      'DD-PICKUP-LAST': '2026-03-03T12:00:00.000Z',
      'DD-PLAIN': '2026-03-03T12:00:00.000Z',
      'DD-UPSERT': '2026-03-06T18:00:00.000Z',
    });

    // New stops move it; a change of anything else leaves it.
    const moved = await a.put('/v2/tms-api/loads/DD-PLAIN', { stops: [stop(1, 'Pickup', 'DAL', 2, 10), stop(2, 'Delivery', 'HOU', 7, 20)] });
    expect(moved.statusCode, moved.body).toBe(200);
    const other = await a.put('/v2/tms-api/loads/DD-UPSERT', { description: 'only this', status: 'EN_ROUTE', carrier_external_reference_id: 'CAR-1' });
    expect(other.statusCode, other.body).toBe(200);
    const written = await deadlines();
    expect(written).toMatchObject({ 'DD-PLAIN': '2026-03-07T20:00:00.000Z', 'DD-UPSERT': '2026-03-06T18:00:00.000Z' });

    // The fill, run over the same loads with the column emptied (batches of 2, so several), finds what the
    // writes kept, and passes over what is filled.
    await t.store.db.updateTable('loads').set({ delivery_deadline: null }).where('org_id', '=', a.orgId).execute();
    const filled = await fillDeliveryDeadlines(t.store.db as unknown as Kysely<unknown>, 2);
    expect(filled).toBeGreaterThanOrEqual(4);
    expect(await deadlines()).toEqual(written);
    expect(await fillDeliveryDeadlines(t.store.db as unknown as Kysely<unknown>, 2)).toBe(0);
  });
});
