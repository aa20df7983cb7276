import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, isPostgres, json, newTenant, type Tenant } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';

// Round trips per request, counted through the store's statement log (every statement sent; on
// PostgreSQL every one is a round trip). A regression to a statement per load, per stop or per
// reference fails here, not only in the benchmark.

// The recommendations follow-up runs beside requests: here only when asked, so no statement of it is counted.
const t = useApp({}, { recommendationFollowUp: 'manual' });
let a: Tenant;

const delivered = (ref: string, extra: Record<string, unknown> = {}) =>
  dallasToHouston(ref, {
    status: 'Delivered',
    carrier_external_reference_id: 'CAR-1',
    financial_rates: [{ rate_entity: 'CARRIER', amount: 1000, currency: 'USD', rate_type: 'LINEHAUL' }],
    sales_rep: { name: 'Pat Doe', email: 'pat@example.com' },
    ...extra,
  });

beforeAll(async () => {
  a = await newTenant(t);
  await seedFreight(a);
  expect((await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-2', name: 'Second Carrier' })).statusCode).toBe(201);
  for (let i = 0; i < 8; i++) {
    const res = await a.post('/v2/tms-api/loads', delivered(`SC-${i}`));
    expect(res.statusCode, res.body).toBe(201);
  }
  expect((await a.post('/v2/tms-api/loads', dallasToHouston('SC-OPEN'))).statusCode).toBe(201);
});

async function statementsOf(request: () => Promise<LightMyRequestResponse>, status = 200): Promise<{ sql: string[]; body: any }> {
  const sql: string[] = [];
  const stop = t.store.statements.watch((s) => sql.push(s.replace(/\s+/g, ' ').trim()));
  let res;
  try {
    res = await request();
  } finally {
    stop();
  }
  expect(res.statusCode, res.body).toBe(status);
  return { sql, body: json(res) };
}

/**
 * PostgreSQL keeps a statement with at most 32 parameters as a named prepared statement, parsed (and,
 * when its plan does not depend on the values, planned) once per connection (src/lib/db/index.ts). The
 * read statements must stay under that, whatever the request: a lane's grid cells go in as two arrays,
 * not as an IN list whose length (and text) changes with the lane.
 */
const parameters = (sql: string) => Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));

/** A batch of `n` loads that all change (another carrier, a new description). */
const changedBatch = (n: number, round: number) => ({
  items: Array.from({ length: n }, (_, i) => ({
    operation: 'upsert',
    load: delivered(`SC-${i}`, { carrier_external_reference_id: round % 2 ? 'CAR-2' : 'CAR-1', description: `round ${round}` }),
  })),
});

describe('statements per request', () => {
  it('a load by reference: on PostgreSQL one statement with the key check, the load, its stops, rates, customer, carrier and reps', async () => {
    await a.get('/v2/tms-api/loads/SC-1'); // the key is now known to this instance
    const { sql, body } = await statementsOf(() => a.get('/v2/tms-api/loads/SC-1'));
    expect(body).toMatchObject({
      external_reference_id: 'SC-1',
      customer_name: 'Acme Foods',
      carrier_name: 'Swift Transport',
      stops: [{ location_external_reference_id: 'DAL' }, { location_external_reference_id: 'HOU' }],
      financial_rates: [{ amount: 1000 }],
      sales_rep: { name: 'Pat Doe', service_user_id: null },
      carrier_recommendations: [],
    });
    if (isPostgres()) {
      expect(sql).toHaveLength(1);
      expect(sql[0]).toMatch(/from api_keys k where k\.id = \$1 and k\.revoked_at is null/);
      expect(parameters(sql[0]!)).toBeLessThanOrEqual(32);
    } else {
      // SQLite: in-process statements; none is per stop or per rate.
      expect(sql.length).toBeLessThanOrEqual(8);
    }
  });

  it('a page of loads: two statements on PostgreSQL whatever its size (ids, then their documents), the same count for 2 or 8 loads on SQLite', async () => {
    const small = await statementsOf(() => a.get('/v2/tms-api/loads?page_size=2&sort=external_reference_id'));
    const large = await statementsOf(() => a.get('/v2/tms-api/loads?page_size=8&sort=external_reference_id'));
    expect(small.body.items.map((l: { external_reference_id: string }) => l.external_reference_id)).toEqual(['SC-0', 'SC-1']);
    expect(large.body.items).toHaveLength(8);
    expect(large.body.pagination).toMatchObject({ total: 9 });
    expect(large.sql.length).toBe(small.sql.length);
    if (isPostgres()) {
      expect(large.sql).toHaveLength(2);
      // The same texts for any page size and page number (the page is a parameter, and the documents'
      // statement takes the ids as one array: planned once per connection, not on every page).
      expect(large.sql).toEqual(small.sql);
      expect(large.sql[1]).toMatch(/from unnest\(\$1::text\[\]\) with ordinality/);
      for (const s of large.sql) expect(parameters(s), s).toBeLessThanOrEqual(32);
    }
    // Filtered by a customer's reference: still two statements (the reference is matched inside the first).
    const byCustomer = await statementsOf(() => a.get('/v2/tms-api/loads?customer_external_reference_id=CUST-1&page_size=3'));
    expect(byCustomer.body.pagination).toMatchObject({ total: 9 });
    if (isPostgres()) expect(byCustomer.sql).toHaveLength(2);
    // A page past the end: the ids' statement only.
    const past = await statementsOf(() => a.get('/v2/tms-api/loads?page=99&page_size=8'));
    expect(past.body).toMatchObject({ items: [], pagination: { total: 9 } });
    if (isPostgres()) expect(past.sql).toHaveLength(1);
  });

  // Issue 27's evidence reads beside the lane: the ranked carriers' cards, the lane's market snapshots when
  // its history is priced (kept under the market counter the load's statement read, so only the first
  // read of a lane), and the ranked carriers' loads on their way when the load has a pickup time (the
  // organization's grace is read in the lane's statement). The three go together after the lane's read:
  // three round trips in a row. With the key checked from its cache: five statements, four once the
  // lane's market history is kept.
  it('an open load with its recommendations: at most five statements on PostgreSQL (the load, its lane, the evidence reads), four for a lane read before', async () => {
    const { sql, body } = await statementsOf(() => a.get('/v2/tms-api/loads/SC-OPEN'));
    expect(body.carrier_recommendations.map((r: { carrier_external_reference_id: string }) => r.carrier_external_reference_id)).toEqual(['CAR-1']);
    expect(body.carrier_recommendations[0]).toMatchObject({ carrier_name: 'Swift Transport', lane_load_count: 8 });
    const again = await statementsOf(() => a.get('/v2/tms-api/loads/SC-OPEN'));
    expect(again.body.carrier_recommendations).toEqual(body.carrier_recommendations);
    if (isPostgres()) {
      expect(sql.length, sql.join('\n')).toBeLessThanOrEqual(5);
      expect(sql[1]).toMatch(/"origin_cell" = any\(\$\d+::integer\[\]\)/);
      for (const s of sql) expect(parameters(s), s).toBeLessThanOrEqual(32);
      expect(again.sql.length, again.sql.join('\n')).toBeLessThanOrEqual(4);
      expect(sql.filter((s) => /from "market_rate_snapshots"/.test(s))).toHaveLength(1);
      expect(again.sql.filter((s) => /from "market_rate_snapshots"/.test(s))).toEqual([]);
    }
  });

  it('a batch: per changed load one update; its reads and its other writes are per batch (set-based), with no savepoint', async () => {
    const two = await statementsOf(() => a.post('/v2/tms-api/batch/loads', changedBatch(2, 1)));
    const six = await statementsOf(() => a.post('/v2/tms-api/batch/loads', changedBatch(6, 2)));
    expect(two.body).toMatchObject({ success_count: 2, error_count: 0 });
    expect(six.body).toMatchObject({ success_count: 6, error_count: 0 });
    // The key check (SQLite: a read of the counters when anything was written since) is not the batch's.
    const work = (sql: string[]) => sql.filter((s) => !/from "(org_versions|api_keys)"/.test(s)).length;
    // The items run together and write at the end: one statement per table for the stops, rates and lane
    // history of every changed load; only the loads' own updates are one per load (their columns differ).
    expect((work(six.sql) - work(two.sql)) / 4, six.sql.join('\n')).toBe(1);
    expect(six.sql.filter((s) => /savepoint/.test(s))).toEqual([]);
    // The carrier changed: every load's history row is rewritten, in one delete and one insert; stops and
    // rates are unchanged, so not written at all.
    expect(six.sql.filter((s) => /insert into "lane_history"/.test(s))).toHaveLength(1);
    expect(six.sql.filter((s) => /delete from "lane_history"/.test(s))).toHaveLength(1);
    expect(six.sql.filter((s) => /into "load_(stops|rates)"/.test(s))).toEqual([]);
    // One lookup per kind of reference for the whole batch, not one per item. At seal the events' data
    // is built for all items at once from what the full upserts wrote (stops with their places, rates,
    // customer, carrier): no read of them again, no loads' documents on PostgreSQL.
    const reads = (sql: string[], table: string) => sql.filter((s) => new RegExp(`from "${table}"`).test(s)).length;
    expect(reads(six.sql, 'customers')).toBe(1);
    expect(reads(two.sql, 'customers')).toBe(reads(six.sql, 'customers'));
    expect(reads(six.sql, 'locations')).toBe(1);
    expect(six.sql.filter((s) => /json_agg/.test(s))).toHaveLength(0);
    // The events of the batch are stored in one statement.
    expect(six.sql.filter((s) => /insert into "?events"?/.test(s))).toHaveLength(1);
    const loaded = await a.get('/v2/tms-api/loads/SC-5');
    expect(json(loaded)).toMatchObject({ carrier_external_reference_id: 'CAR-1', description: 'round 2' });
  });

  it('a batch of new loads is a fixed number of statements, whatever its size (set-based: one insert per table)', async () => {
    const fresh = (n: number, tag: string) => ({
      items: Array.from({ length: n }, (_, i) => ({
        operation: 'upsert',
        load: i % 3 === 2 ? dallasToHouston(`NEW-${tag}-${i}`) : delivered(`NEW-${tag}-${i}`),
      })),
    });
    const ten = await statementsOf(() => a.post('/v2/tms-api/batch/loads', fresh(10, 'a')));
    const ninety = await statementsOf(() => a.post('/v2/tms-api/batch/loads', fresh(90, 'b')));
    expect(ninety.body).toMatchObject({ success_count: 90, error_count: 0 });
    const work = (sql: string[]) => sql.filter((s) => !/from "(org_versions|api_keys)"/.test(s));
    // SQLite inserts up to 100 rows in one statement, more in slices of 100 and then 64, 32 … 1 (few
    // statement texts, src/lib/db/bulk.ts): 90 loads' 180 stops are three statements (100, 64, 16).
    expect(work(ninety.sql).length - work(ten.sql).length, ninety.sql.join('\n')).toBe(isPostgres() ? 0 : 2);
    console.log('statements for 90 new loads', work(ninety.sql).length, work(ninety.sql).join('\n'));
    expect(work(ninety.sql).length).toBeLessThanOrEqual(24);
    for (const table of ['loads', 'load_rates', 'lane_history'])
      expect(
        ninety.sql.filter((s) => new RegExp(`insert into "${table}"`).test(s)),
        table,
      ).toHaveLength(1);
  });

  it('a batch with a failing item: the item wrote nothing, so the others are written together, with no rollback or savepoint', async () => {
    const batch = changedBatch(3, 3);
    const bad = batch.items[1]!.load as Record<string, unknown>;
    bad.customer_external_reference_id = 'NO-SUCH-CUSTOMER';
    const { sql, body } = await statementsOf(() => a.post('/v2/tms-api/batch/loads', batch));
    expect(body).toMatchObject({ success_count: 2, error_count: 1 });
    expect(body.results.map((r: { success: boolean }) => r.success)).toEqual([true, false, true]);
    expect(body.results[1].error.status).toBe(422);
    expect(
      sql.filter((s) => /savepoint|rollback/.test(s)),
      sql.join('\n'),
    ).toEqual([]);
    // Both good items saved once (descriptions of round 3), the bad one unchanged.
    for (const [ref, description] of [
      ['SC-0', 'round 3'],
      ['SC-1', 'round 2'],
      ['SC-2', 'round 3'],
    ] as const) {
      expect(json(await a.get(`/v2/tms-api/loads/${ref}`)), ref).toMatchObject({ description });
    }
  });
});
