import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import type { Executor } from '../../../src/lib/db/index.js';
import { batchRunner, OUT_OF_TIME } from '../../../src/modules/shared/batch.js';
import type { Workspace } from '../../../src/modules/shared/write-pipeline.js';
import pg from 'pg';
import { inject } from 'vitest';
import { letTimePass, useApp, isPostgres, newTenant } from '../../helpers.js';

// D6a: the 60 s of D6 is ONE deadline for the whole request, however the engine runs the items (on
// PostgreSQL a batch whose items write at once runs again item by item after a failure). Items not
// started by it fail 503 with the decided text; the items before it stand. Shown here with a short
// deadline and an item made slow on purpose, through the real pipeline and database of each engine.

const t = useApp();

/** A resource whose items insert a customer at once; `slow` items wait first, `bad` items fail after writing. */
function customers(orgId: string, behaviour: { slow?: Set<string>; slowMs?: number; bad?: Set<string> }) {
  const started: Record<string, number[]> = {};
  const insert = async (tx: Executor, ref: string) => {
    (started[ref] ??= []).push(Date.now());
    if (behaviour.slow?.has(ref)) await letTimePass(behaviour.slowMs ?? 0);
    await tx
      .insertInto('customers')
      .values({
        id: `cust_${ref}_${Math.random().toString(36).slice(2, 8)}`,
        org_id: orgId,
        external_reference_id: ref,
        name: ref,
        created_at: '2026-01-01T00:00:00.000Z',
        updated_at: '2026-01-01T00:00:00.000Z',
      } as never)
      .execute();
    if (behaviour.bad?.has(ref)) throw new Error(`item ${ref} fails after writing`);
    return { id: ref };
  };
  const run = batchRunner<{ external_reference_id: string }, { external_reference_id?: string }, Workspace>({
    dataKey: 'customer',
    operations: ['create'],
    createSchema: Type.Object({ external_reference_id: Type.String() }),
    updateSchema: Type.Object({ external_reference_id: Type.Optional(Type.String()) }),
    pipeline: t.pipeline,
    analyticsRun: false,
    create: async (tx, _changes, _ws, _org, data) => insert(tx, data.external_reference_id),
    update: async () => ({ id: 'x' }),
    upsert: async () => ({ id: 'x' }),
    delete: async () => ({ id: 'x' }),
  });
  return { run, started };
}

const items = (refs: string[]) => refs.map((ref) => ({ operation: 'create' as const, customer: { external_reference_id: ref } }));
const stored = async (orgId: string) =>
  (await t.store.db.selectFrom('customers').select('external_reference_id').where('org_id', '=', orgId).orderBy('external_reference_id').execute()).map(
    (r) => r.external_reference_id,
  );

describe('D6a: one deadline per batch request', () => {
  it('an item made slow past the deadline: the items after it fail 503, the ones before it (and it) stand', async () => {
    const a = await newTenant(t);
    // A deadline far above what two small items take even on a busy CI machine (250 ms was not).
    const { run } = customers(a.orgId, { slow: new Set(['C2']), slowMs: 2000 });
    const began = Date.now();
    const result = await run(a.orgId, items(['C0', 'C1', 'C2', 'C3', 'C4']), { deadlineMs: 1500, startedAt: began });
    const elapsed = Date.now() - began;
    expect(result.results.map((r) => (r.success ? 'ok' : r.error))).toEqual([
      'ok',
      'ok',
      'ok',
      { status: 503, detail: OUT_OF_TIME },
      { status: 503, detail: OUT_OF_TIME },
    ]);
    expect(result).toMatchObject({ success_count: 3, error_count: 2 });
    expect(await stored(a.orgId)).toEqual(['C0', 'C1', 'C2']);
    // The slow item, and nothing after it: the request ends by deadline + that item (D6's 60 s bound).
    expect(elapsed).toBeLessThan(1500 + 2000 + 1000);
  });

  it('counts from when the request arrived, not from when its items began', async () => {
    const a = await newTenant(t);
    const { run } = customers(a.orgId, {});
    const result = await run(a.orgId, items(['L0', 'L1']), { deadlineMs: 1000, startedAt: Date.now() - 1500 });
    expect(result.results.map((r) => r.error?.status)).toEqual([503, 503]);
    expect(await stored(a.orgId)).toEqual([]);
  });

  it('a failed item does not restart the clock: when the items run again one by one, those reached after the deadline fail 503', async () => {
    const a = await newTenant(t);
    // C0 takes 300 ms and C1 fails after writing. Where the items first run together (PostgreSQL), the
    // batch runs again apart: C0 takes another 300 ms, so C1 and C2 are reached after the 450 ms deadline.
    const { run, started } = customers(a.orgId, { slow: new Set(['C0']), slowMs: 300, bad: new Set(['C1']) });
    const began = Date.now();
    const result = await run(a.orgId, items(['C0', 'C1', 'C2']), { deadlineMs: 450, startedAt: began });
    const deadline = began + 450;
    // No item that succeeded began after the deadline in the run that counted, on either engine.
    for (const [i, r] of result.results.entries()) {
      const ref = `C${i}`;
      if (r.success) expect(started[ref]!.at(-1)!, ref).toBeLessThanOrEqual(deadline);
      else if (r.error?.status === 503) expect(started[ref]?.at(-1) ?? 0, ref).toBeLessThan(deadline);
    }
    expect(result.results[0]!.success).toBe(true);
    // C1 failed (500) where the items ran apart from the start (SQLite); where they ran again, it was reached too late (503).
    expect([500, 503]).toContain(result.results[1]!.error?.status);
    expect(await stored(a.orgId)).not.toContain('C1');
    // At most two passes over the slow item, whatever happens: the request stays within the deadline plus
    // the one item running when it passed.
    expect(Date.now() - began).toBeLessThan(450 + 300 + 300);
  });

  it('a 500 in an item carries the request id', async () => {
    const a = await newTenant(t);
    const { run } = customers(a.orgId, { bad: new Set(['B0']) });
    const result = await run(a.orgId, items(['B0', 'B1']), { requestId: 'req-d6a-500' });
    expect(result.results[0]!.error).toEqual({ status: 500, detail: 'Internal server error', request_id: 'req-d6a-500' });
    expect(result.results[1]!.success).toBe(true);
    expect(await stored(a.orgId)).toEqual(['B1']);
  });

  it.runIf(isPostgres())(
    "PostgreSQL: a batch waiting on its organization's batch lock stops waiting at the deadline (503 for every item, nothing written)",
    async () => {
      const a = await newTenant(t);
      const holder = new pg.Client({ connectionString: inject('databaseUrl')! });
      await holder.connect();
      try {
        // Another batch of the organization holds the lock (src/lib/db/locks.ts: class 7215, the organization's hash).
        await holder.query('begin');
        await holder.query('select pg_advisory_xact_lock(7215, hashtext($1))', [a.orgId]);
        const { run } = customers(a.orgId, {});
        const began = Date.now();
        const result = await run(a.orgId, items(['W0', 'W1']), { deadlineMs: 400, startedAt: began });
        const elapsed = Date.now() - began;
        expect(result.results.map((r) => r.error)).toEqual([
          { status: 503, detail: OUT_OF_TIME },
          { status: 503, detail: OUT_OF_TIME },
        ]);
        expect(elapsed).toBeGreaterThanOrEqual(350);
        expect(elapsed).toBeLessThan(2000);
      } finally {
        await holder.query('rollback');
        await holder.end();
      }
      expect(await stored(a.orgId)).toEqual([]);
    },
  );
});
