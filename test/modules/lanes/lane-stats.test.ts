import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

// The lane stats and each lane's carriers are kept by the transaction that writes the history
// (src/lib/db/lane-stats.ts): additions add up, a lane that lost rows is recounted. After any mix of
// writes they must equal a count of the history from scratch.

const t = useApp();

/** The stats and lane carriers as stored, and as a count of the history from scratch says they should be. */
async function statsAgainstHistory(orgId: string) {
  const db = t.store.db;
  const num = <R extends Record<string, unknown>>(rows: R[]) =>
    rows.map((r) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' || (typeof v === 'string' && /^\d+$/.test(v)) ? Number(v) : v])),
    );
  const stored = num(
    await db
      .selectFrom('lane_stats')
      .select(['equipment_type', 'origin_cell', 'destination_cell', 'load_count', 'carrier_count', 'last_delivered_at'])
      .where('org_id', '=', orgId)
      .orderBy('equipment_type')
      .orderBy('origin_cell')
      .orderBy('destination_cell')
      .execute(),
  );
  const counted = num(
    (
      await sql<
        Record<string, unknown>
      >`select equipment_type, origin_cell, destination_cell, count(*) as load_count, count(distinct carrier_id) as carrier_count, max(delivered_at) as last_delivered_at
        from lane_history where org_id = ${orgId} group by equipment_type, origin_cell, destination_cell order by equipment_type, origin_cell, destination_cell`.execute(
        db,
      )
    ).rows,
  );
  const carriers = num(
    await db
      .selectFrom('lane_carriers')
      .select(['equipment_type', 'origin_cell', 'destination_cell', 'carrier_id', 'loads'])
      .where('org_id', '=', orgId)
      .orderBy('equipment_type')
      .orderBy('origin_cell')
      .orderBy('destination_cell')
      .orderBy('carrier_id')
      .execute(),
  );
  const carriersCounted = num(
    (
      await sql<Record<string, unknown>>`select equipment_type, origin_cell, destination_cell, carrier_id, count(*) as loads
        from lane_history where org_id = ${orgId} group by equipment_type, origin_cell, destination_cell, carrier_id order by equipment_type, origin_cell, destination_cell, carrier_id`.execute(
        db,
      )
    ).rows,
  );
  return { stored, counted, carriers, carriersCounted };
}

async function expectStatsToMatchHistory(orgId: string) {
  const s = await statsAgainstHistory(orgId);
  expect(s.stored).toEqual(s.counted);
  expect(s.carriers).toEqual(s.carriersCounted);
  return s;
}

async function tenantWithLanes(): Promise<Tenant> {
  const a = await newTenant(t);
  await seedFreight(a);
  for (const [url, body] of [
    ['/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Knight' }],
    ['/v2/tms-api/carriers', { external_reference_id: 'CAR-3', name: 'Werner' }],
    ['/v2/tms-api/locations', { external_reference_id: 'AUS', name: 'Austin DC', postal_code: '78701', state: 'TX' }],
  ] as const) {
    const res = await a.post(url, body);
    expect(res.statusCode, res.body).toBe(201);
  }
  return a;
}

/** A delivered load from `from` to `to` by `carrier`, delivered on March `day`. */
function delivered(ref: string, carrier: string, day: number, from = 'DAL', to = 'HOU') {
  const d = String(day).padStart(2, '0');
  return dallasToHouston(ref, {
    status: 'DELIVERED',
    carrier_external_reference_id: carrier,
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: from, early_arrival: `2026-03-${d}T06:00:00.000Z`, late_arrival: `2026-03-${d}T08:00:00.000Z` },
      { stop_type: 'Delivery', location_external_reference_id: to, early_arrival: `2026-03-${d}T16:00:00.000Z`, late_arrival: `2026-03-${d}T20:00:00.000Z` },
    ],
  });
}

const upserts = (loads: ReturnType<typeof delivered>[]) => ({
  items: loads.map((load) => ({ operation: 'upsert', external_reference_id: load.external_reference_id, load })),
});

async function batch(a: Tenant, body: unknown) {
  const res = await a.post('/v2/tms-api/batch/loads', body);
  expect(res.statusCode, res.body).toBe(200);
  expect(json(res).error_count, res.body).toBe(0);
}

describe('lane stats kept by the history writes', () => {
  it('equal a count of the history from scratch after additions, replacements, deletes and a moved place', async () => {
    const a = await tenantWithLanes();
    // Additions: two lanes, three carriers, one open load (not history).
    await batch(
      a,
      upserts([
        delivered('H-1', 'CAR-1', 10),
        delivered('H-2', 'CAR-2', 12),
        delivered('H-3', 'CAR-1', 11),
        delivered('H-4', 'CAR-3', 9, 'DAL', 'AUS'),
        dallasToHouston('OPEN-1') as never,
      ]),
    );
    let s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored.map((r) => [r.load_count, r.carrier_count])).toEqual(
      expect.arrayContaining([
        [3, 2],
        [1, 1],
      ]),
    );
    // More of the same lanes: a carrier new to a lane, one already on it, a later delivery.
    await batch(a, upserts([delivered('H-5', 'CAR-3', 20), delivered('H-6', 'CAR-1', 5), delivered('H-7', 'CAR-2', 15, 'DAL', 'AUS')]));
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored.map((r) => [r.load_count, r.carrier_count, r.last_delivered_at])).toEqual(
      expect.arrayContaining([
        [5, 3, '2026-03-20T20:00:00.000Z'],
        [2, 2, '2026-03-15T20:00:00.000Z'],
      ]),
    );

    // A load given another carrier: CAR-2's only load on the lane goes to CAR-1.
    expect((await a.put('/v2/tms-api/loads/H-2', delivered('H-2', 'CAR-1', 12))).statusCode).toBe(200);
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.carriers.filter((c) => c.loads === 0)).toEqual([]);
    // The lane's last delivery moved earlier: the latest load delivered a week sooner.
    expect((await a.put('/v2/tms-api/loads/H-5', delivered('H-5', 'CAR-3', 13))).statusCode).toBe(200);
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored.map((r) => r.last_delivered_at)).toContain('2026-03-13T20:00:00.000Z');
    // Deletes, one of them the last load of its lane: the lane's stats and carriers go.
    expect((await a.del('/v2/tms-api/loads/H-4')).statusCode).toBe(204);
    expect((await a.del('/v2/tms-api/loads/H-7')).statusCode).toBe(204);
    expect((await a.del('/v2/tms-api/loads/H-1')).statusCode).toBe(204);
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored).toHaveLength(1);

    // One batch creating, changing and deleting the same references (D6a), and a load leaving the history.
    await batch(a, {
      items: [
        { operation: 'create', load: delivered('H-8', 'CAR-2', 21) },
        { operation: 'update', external_reference_id: 'H-8', load: { carrier_external_reference_id: 'CAR-3' } },
        { operation: 'create', load: delivered('H-9', 'CAR-2', 22, 'DAL', 'AUS') },
        { operation: 'delete', external_reference_id: 'H-9' },
        { operation: 'update', external_reference_id: 'H-3', load: { status: 'ACTIVE', carrier_external_reference_id: null } },
      ],
    });
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored.map((r) => [r.load_count, r.last_delivered_at])).toEqual([[4, '2026-03-21T20:00:00.000Z']]);

    // A place moved (re-geocoded to another ZIP code): its history leaves one lane for another.
    await batch(a, upserts([delivered('H-10', 'CAR-2', 23, 'HOU', 'AUS')]));
    expect((await a.put('/v2/tms-api/locations/AUS', { name: 'Austin DC', postal_code: '73301', state: 'TX' })).statusCode).toBe(200);
    await expectStatsToMatchHistory(a.orgId);
    expect((await a.put('/v2/tms-api/locations/AUS', { name: 'Austin DC', postal_code: '79901', state: 'TX' })).statusCode).toBe(200);
    s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored).toHaveLength(2);
  });

  it('a history row given back unchanged (a tracking event, a description) recounts nothing', async () => {
    const a = await tenantWithLanes();
    await batch(a, upserts([delivered('T-1', 'CAR-1', 10), delivered('T-2', 'CAR-2', 11)]));
    const outcomes = async () =>
      (
        await sql<{
          stop_outcomes: string;
        }>`select h.stop_outcomes from lane_history h join loads l on l.id = h.load_id where l.org_id = ${a.orgId} and l.external_reference_id = 'T-1'`.execute(
          t.store.db,
        )
      ).rows[0]!.stop_outcomes;
    const before = await outcomes();
    const seen: string[] = [];
    const stop = t.store.statements.watch((s) => seen.push(s));
    try {
      const ev = await a.post('/v2/tms-api/loads/T-1/tracking-events', {
        event_id: 'eld-1',
        type: 'ARRIVED',
        stop_number: 2,
        occurred_at: '2026-03-10T17:00:00Z',
        source: 'ELD',
      });
      expect(ev.statusCode, ev.body).toBe(201);
      expect((await a.put('/v2/tms-api/loads/T-2', { ...delivered('T-2', 'CAR-2', 11), description: 'pallets' })).statusCode).toBe(200);
    } finally {
      stop();
    }
    // The history row was written again (its stop outcome is new), the stats were not touched.
    expect(await outcomes()).not.toBe(before);
    expect(seen.some((s) => /lane_history/.test(s))).toBe(true);
    expect(seen.filter((s) => /lane_stats|lane_carriers/.test(s))).toEqual([]);
    await expectStatsToMatchHistory(a.orgId);
  });
  it('stay right under concurrent writers: a locations batch moving two places beside load writes and deletes on them', async () => {
    const a = await tenantWithLanes();
    expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'ELP', name: 'El Paso', postal_code: '79901', state: 'TX' })).statusCode).toBe(201);
    await batch(
      a,
      upserts([
        delivered('C-1', 'CAR-1', 3, 'DAL', 'AUS'),
        delivered('C-2', 'CAR-2', 4, 'HOU', 'ELP'),
        delivered('C-3', 'CAR-3', 5, 'DAL', 'ELP'),
        delivered('C-4', 'CAR-1', 6, 'HOU', 'AUS'),
      ]),
    );
    const zips = [
      ['73301', '79902'],
      ['78701', '79901'],
    ];
    for (let round = 0; round < 6; round++) {
      const [aus, elp] = zips[round % 2]!;
      const moves = {
        items: [
          { operation: 'upsert', external_reference_id: 'AUS', location: { external_reference_id: 'AUS', name: 'Austin DC', postal_code: aus, state: 'TX' } },
          { operation: 'upsert', external_reference_id: 'ELP', location: { external_reference_id: 'ELP', name: 'El Paso', postal_code: elp, state: 'TX' } },
        ],
      };
      const answers = await Promise.all([
        a.post('/v2/tms-api/batch/locations', moves),
        a.put('/v2/tms-api/loads/C-2', delivered('C-2', round % 2 ? 'CAR-2' : 'CAR-3', 4 + round, 'HOU', 'ELP')),
        a.put('/v2/tms-api/loads/C-1', delivered('C-1', 'CAR-1', 3 + round, 'DAL', 'AUS')),
        a.post('/v2/tms-api/batch/loads', upserts([delivered(`C-N${round}`, 'CAR-2', 7, 'DAL', 'ELP'), delivered('C-4', 'CAR-3', 8 + round, 'HOU', 'AUS')])),
        a.del(round % 2 ? `/v2/tms-api/loads/C-N${round - 1}` : '/v2/tms-api/loads/NONE'),
      ]);
      expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, round % 2 ? 204 : 404]);
      for (const r of answers.slice(0, 4)) expect(json(r).error_count ?? 0, r.body).toBe(0);
    }
    const s = await expectStatsToMatchHistory(a.orgId);
    expect(s.stored.length).toBeGreaterThan(1);
  });
});
