import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import type { Executor } from '../../../src/lib/db/index.js';
import { batchRunner } from '../../../src/modules/shared/batch.js';
import { ChangeSet, IMMEDIATE, type ItemRunner, type Workspace, type WritePipeline } from '../../../src/modules/shared/write-pipeline.js';
import { useApp, newTenant } from '../../helpers.js';

// Batch items are units of work of the write pipeline (SQLite: savepoints of one transaction; PostgreSQL:
// a transaction each): an item happens whole or not at all, and one item's failure undoes nothing else.

const t = useApp();

const customer = (orgId: string, ref: string) => ({
  id: `cust_${ref.toLowerCase()}${Math.random().toString(36).slice(2, 8)}`,
  org_id: orgId,
  external_reference_id: ref,
  name: ref,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
});

describe('batch items as units of work of the write pipeline', () => {
  it('a failing item rolls back its own writes only, after earlier and before later items', async () => {
    const a = await newTenant(t);
    const insert = (ref: string) => (tx: Executor) =>
      tx
        .insertInto('customers')
        .values(customer(a.orgId, ref) as never)
        .execute()
        .then(() => ({ id: ref }));
    await t.pipeline.batch(a.orgId, async (item) => {
      await item(insert('KEPT-1'));
      await expect(
        item(async (tx) => {
          await insert('UNDONE')(tx);
          throw new Error('the item fails after writing');
        }),
      ).rejects.toThrow('the item fails after writing');
      await item(insert('KEPT-2'));
    });
    const refs = await t.store.db
      .selectFrom('customers')
      .select('external_reference_id')
      .where('org_id', '=', a.orgId)
      .orderBy('external_reference_id')
      .execute();
    expect(refs.map((r) => r.external_reference_id)).toEqual(['KEPT-1', 'KEPT-2']);
  });

  it('reports no item saved when the closing commit fails', async () => {
    // A pipeline whose batch runs the items, then fails to commit (as SQLite's one batch transaction can).
    const failingCommit = {
      ...t.pipeline,
      batch: async <R>(_orgId: string, body: (item: ItemRunner) => Promise<R>) => {
        await body(((work: (tx: Executor, changes: ChangeSet, ws: Workspace) => Promise<unknown>) =>
          work(t.store.db, new ChangeSet(), IMMEDIATE)) as ItemRunner);
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' });
      },
    } as WritePipeline;
    const run = batchRunner<{ external_reference_id: string }, { external_reference_id?: string }, Workspace>({
      dataKey: 'thing',
      operations: ['create'],
      createSchema: Type.Object({ external_reference_id: Type.String() }),
      updateSchema: Type.Object({ external_reference_id: Type.Optional(Type.String()) }),
      pipeline: failingCommit,
      analyticsRun: false,
      create: async (_tx, _changes, _ws, _org, data) => ({ id: `id-${data.external_reference_id}` }),
      update: async () => ({ id: 'x' }),
      upsert: async () => ({ id: 'x' }),
      delete: async () => ({ id: 'x' }),
    });
    const errors: unknown[] = [];
    const result = await run(
      'org',
      [
        { operation: 'create', thing: { external_reference_id: 'A' } },
        { operation: 'create', thing: {} },
      ],
      { onError: (e) => errors.push(e) },
    );
    expect(result.success_count).toBe(0);
    expect(result.error_count).toBe(2);
    expect(result.results[0]).toEqual({
      index: 0,
      external_reference_id: 'A',
      operation: 'create',
      success: false,
      id: null,
      error: { status: 503, detail: 'Service temporarily unavailable' },
    });
    // An item that had failed on its own keeps its own error.
    expect(result.results[1]).toMatchObject({ index: 1, success: false, error: { status: 422 } });
    expect(errors).toEqual([]);
  });

  it('a batch of customers commits once with its failures left out (HTTP)', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/batch/customers', {
      items: [
        { operation: 'create', external_reference_id: 'C-1', customer: { name: 'One' } },
        { operation: 'create', external_reference_id: 'C-1', customer: { name: 'Duplicate' } },
        { operation: 'update', external_reference_id: 'C-404', customer: { name: 'Missing' } },
        { operation: 'create', external_reference_id: 'C-2', customer: { name: 'Two' } },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.results.map((r: { success: boolean; error?: { status: number } }) => (r.success ? 'ok' : r.error!.status))).toEqual(['ok', 409, 404, 'ok']);
    const rows = await t.store.db
      .selectFrom('customers')
      .select(['external_reference_id', 'name'])
      .where('org_id', '=', a.orgId)
      .orderBy('external_reference_id')
      .execute();
    expect(rows).toEqual([
      { external_reference_id: 'C-1', name: 'One' },
      { external_reference_id: 'C-2', name: 'Two' },
    ]);
  });
});
