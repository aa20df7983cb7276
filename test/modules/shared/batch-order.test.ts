import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant, type Tenant } from '../../helpers.js';

// D6a: every item of a batch sees what the items before it wrote. For each batch endpoint and each pair
// (or run) of operations on ONE reference, the batch must give what the same items sent as separate
// requests give: the same result per item (success, status, detail) and the same record afterwards.

const t = useApp();

const stops = [
  { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00Z', late_arrival: '2026-03-02T10:00:00Z' },
  { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00Z', late_arrival: '2026-03-03T12:00:00Z' },
];

interface Kind {
  collection: string;
  dataKey: string;
  /** A whole new record (create, or an upsert that creates). */
  full: Record<string, unknown>;
  /** A change of some fields (update, or an upsert of an existing record). */
  partial: Record<string, unknown>;
  ops: readonly string[];
}

const KINDS: Kind[] = [
  {
    collection: 'customers',
    dataKey: 'customer',
    full: { name: 'Acme Foods', phone: '+1 214 555 0100' },
    partial: { name: 'Acme Foods West' },
    ops: ['create', 'update', 'upsert'],
  },
  {
    collection: 'carriers',
    dataKey: 'carrier',
    full: { name: 'Swift Lines', dot_number: '1234567' },
    partial: { name: 'Swift Lines Inc' },
    ops: ['create', 'update', 'upsert'],
  },
  {
    collection: 'locations',
    dataKey: 'location',
    full: { name: 'Plano DC', postal_code: '75024', state: 'TX' },
    partial: { name: 'Plano DC North', open_time: '07:00' },
    ops: ['create', 'update', 'upsert'],
  },
  {
    collection: 'loads',
    dataKey: 'load',
    full: {
      equipment_type: 'DRY_VAN',
      transport_mode: 'FTL',
      customer_external_reference_id: 'CUST-1',
      stops,
      financial_rates: [{ rate_entity: 'CUSTOMER', amount: 2100 }],
    },
    partial: { status: 'COVERED', carrier_external_reference_id: 'CAR-1' },
    ops: ['create', 'update', 'upsert', 'delete'],
  },
];

/** The runs of operations the issue named, each with whether the record exists before it. */
const RUNS: { ops: string[]; exists: boolean }[] = [
  { ops: ['create', 'update'], exists: false },
  { ops: ['create', 'upsert'], exists: false },
  { ops: ['create', 'delete'], exists: false },
  { ops: ['update', 'delete'], exists: true },
  { ops: ['upsert', 'upsert'], exists: false },
  { ops: ['upsert', 'upsert'], exists: true },
  { ops: ['delete', 'create'], exists: true },
  { ops: ['create', 'update', 'delete'], exists: false },
  { ops: ['create', 'create'], exists: false },
  { ops: ['delete', 'update'], exists: true },
  { ops: ['delete', 'upsert'], exists: true },
];

async function seeded(): Promise<Tenant> {
  const a = await newTenant(t);
  await a.post('/v2/tms-api/customers', { external_reference_id: 'CUST-1', name: 'Acme' });
  await a.post('/v2/tms-api/carriers', { external_reference_id: 'CAR-1', name: 'Swift' });
  await a.post('/v2/tms-api/batch/locations', {
    items: [
      { operation: 'create', location: { external_reference_id: 'DAL', name: 'Dallas', postal_code: '75201', state: 'TX' } },
      { operation: 'create', location: { external_reference_id: 'HOU', name: 'Houston', postal_code: '77002', state: 'TX' } },
    ],
  });
  return a;
}

function item(kind: Kind, op: string, ref: string, index: number) {
  if (op === 'delete') return { operation: op, external_reference_id: ref };
  // The second write of a run changes fields; the first writes a whole record (create or creating upsert).
  const data = op === 'create' || index === 0 ? { ...kind.full } : { ...kind.partial, description: `step ${index}` };
  if (kind.collection !== 'loads') delete (data as { description?: unknown }).description;
  return { operation: op, external_reference_id: ref, [kind.dataKey]: data };
}

/** What the client can compare between the two ways: results without ids, and the record as GET shows it. */
// A 422's loc starts at the item's index, which differs between the two ways: compared without it.
const outcome = (r: { success: boolean; error?: unknown; operation: string; index: number }) => ({
  success: r.success,
  error: JSON.parse(JSON.stringify(r.error ?? null).replaceAll(`"items",${r.index},`, '"items","#",')) as unknown,
  operation: r.operation,
});
const comparable = (record: Record<string, unknown> | null) => {
  if (record === null) return null;
  const drop = new Set(['id', 'created_at', 'updated_at', 'status_updated_at', 'delivered_at']);
  return JSON.parse(
    JSON.stringify(record, (k, v) =>
      drop.has(k) || (k === 'id' && typeof v === 'string') || k === 'location_id' || k === 'customer_id' || k === 'carrier_id' ? undefined : v,
    ),
  ) as unknown;
};

async function stateOf(a: Tenant, kind: Kind, ref: string) {
  const res = await a.get(`/v2/tms-api/${kind.collection}/${ref}`);
  if (res.statusCode === 404) return null;
  expect(res.statusCode).toBe(200);
  return comparable(json(res));
}

describe('D6a: a batch item sees the items before it', () => {
  for (const kind of KINDS) {
    for (const run of RUNS.filter((r) => r.ops.every((op) => kind.ops.includes(op)))) {
      it(`${kind.collection}: ${run.ops.join(' → ')}${run.exists ? ' (record exists)' : ''} gives what separate requests give`, async () => {
        const a = await seeded();
        const ref = `REF-${run.ops.join('-')}`;
        const batchPath = `/v2/tms-api/batch/${kind.collection}`;
        if (run.exists) expect(json(await a.post(batchPath, { items: [item(kind, 'create', ref, 0)] })).success_count).toBe(1);
        // Separate requests first (another tenant, same data), then one batch.
        const b = await seeded();
        if (run.exists) expect(json(await b.post(batchPath, { items: [item(kind, 'create', ref, 0)] })).success_count).toBe(1);
        const separate = [];
        for (const [i, op] of run.ops.entries()) separate.push(outcome(json(await b.post(batchPath, { items: [item(kind, op, ref, i)] })).results[0]));
        const together = json(await a.post(batchPath, { items: run.ops.map((op, i) => item(kind, op, ref, i)) }));
        expect(together.results.map(outcome)).toEqual(separate);
        expect(await stateOf(a, kind, ref)).toEqual(await stateOf(b, kind, ref));
      });
    }
  }

  it('loads: create then update (the reported case) leaves the load COVERED, and every write is in the events feed', async () => {
    const a = await seeded();
    const body = json(
      await a.post('/v2/tms-api/batch/loads', {
        items: [
          { operation: 'create', external_reference_id: 'LD-5003', load: KINDS[3]!.full },
          { operation: 'update', external_reference_id: 'LD-5003', load: { status: 'COVERED' } },
          { operation: 'upsert', external_reference_id: 'LD-5003', load: { description: 'partial upsert of a load made two items ago' } },
        ],
      }),
    );
    expect(body).toMatchObject({ success_count: 3, error_count: 0 });
    const load = json(await a.get('/v2/tms-api/loads/LD-5003'));
    expect(load).toMatchObject({ status: 'COVERED', description: 'partial upsert of a load made two items ago' });
    expect(load.stops.map((s: { location_external_reference_id: string }) => s.location_external_reference_id)).toEqual(['DAL', 'HOU']);
    const events = json(await a.get('/v2/tms-api/events?types=load.created,load.updated,load.status_changed'));
    expect(events.items.map((e: { type: string }) => e.type)).toEqual(['load.created', 'load.updated', 'load.status_changed', 'load.updated']);
    // A record changed several times in one unit of work is shown as it stands at commit (docs/events.md).
    expect(events.items[0].data).toMatchObject({ status: 'COVERED', description: 'partial upsert of a load made two items ago' });
    expect(events.items[2].data).toMatchObject({ previous_status: 'ACTIVE', status: 'COVERED' });
  });

  it('never changes the parsed request: an item without its own data reference is answered with the item reference', async () => {
    const a = await seeded();
    const items = [
      { operation: 'create' as const, external_reference_id: 'C-1', customer: { name: 'One' } },
      { operation: 'update' as const, external_reference_id: 'C-1', customer: { name: 'Two' } },
    ];
    const sent = JSON.stringify(items);
    const body = await t.services.customers.batch(a.orgId, items, {});
    expect(body.results.map((r) => [r.external_reference_id, r.success])).toEqual([
      ['C-1', true],
      ['C-1', true],
    ]);
    expect(JSON.stringify(items)).toBe(sent);
    expect(json(await a.get('/v2/tms-api/customers/C-1')).name).toBe('Two');
  });
});
