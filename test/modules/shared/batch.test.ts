import { describe, expect, it } from 'vitest';
import { useApp, json, newTenant } from '../../helpers.js';

const t = useApp();

describe('batch customers', () => {
  it('creates 100 customers in one request, results in order', async () => {
    const a = await newTenant(t);
    const items = Array.from({ length: 100 }, (_, i) => ({
      operation: 'create',
      external_reference_id: `B-${String(i).padStart(3, '0')}`,
      customer: { name: `Customer ${i}`, customer_type: 'shipper' },
    }));
    const res = await a.post('/v2/tms-api/batch/customers', { items });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.success_count).toBe(100);
    expect(body.error_count).toBe(0);
    expect(body.results).toHaveLength(100);
    body.results.forEach((r: any, i: number) => {
      expect(r).toEqual({
        index: i,
        external_reference_id: `B-${String(i).padStart(3, '0')}`,
        operation: 'create',
        success: true,
        id: expect.stringMatching(/^cust_/),
      });
    });
    const list = json(await a.get('/v2/tms-api/customers?page_size=100'));
    expect(list.pagination.total).toBe(100);
    expect(list.items.map((c: any) => c.id).sort()).toEqual(body.results.map((r: any) => r.id).sort());
  });

  it('refuses 101 items as a whole (422 too_long on body.items) and writes nothing', async () => {
    const a = await newTenant(t);
    const items = Array.from({ length: 101 }, (_, i) => ({ operation: 'create', customer: { external_reference_id: `X${i}`, name: 'n' } }));
    const res = await a.post('/v2/tms-api/batch/customers', { items });
    expect(res.statusCode).toBe(422);
    expect(json(res).detail).toEqual([{ type: 'too_long', loc: ['body', 'items'], msg: 'List should have at most 100 items after validation, not 101' }]);
    expect(json(await a.get('/v2/tms-api/customers')).pagination.total).toBe(0);
  });

  it('reports each kind of failure per item and keeps the successes', async () => {
    const a = await newTenant(t);
    await a.post('/v2/tms-api/customers', { external_reference_id: 'EXISTS', name: 'Old name' });
    const res = await a.post('/v2/tms-api/batch/customers', {
      items: [
        { operation: 'Create', customer: { external_reference_id: 'NEW-1', name: 'New' } },
        { operation: 'create', external_reference_id: 'EXISTS', customer: { name: 'dup' } },
        { operation: 'update', external_reference_id: 'GHOST', customer: { name: 'x' } },
        { operation: 'UPSERT', external_reference_id: 'EXISTS', customer: { phone: '555' } },
        { operation: 'upsert', external_reference_id: 'NEW-2', customer: { name: 'Upserted', phone: 'x'.repeat(51) } },
        { operation: 'upsert', external_reference_id: 'NEW-3', customer: { phone: '1' } },
        { operation: 'create', external_reference_id: 'A', customer: { external_reference_id: 'B', name: 'n' } },
        { operation: 'create', customer: { name: 'no id' } },
        { operation: 'create', external_reference_id: 'NO-DATA' },
        { operation: 'upsert', external_reference_id: 'NEW-4', customer: { name: 'Fine' } },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.success_count).toBe(3);
    expect(body.error_count).toBe(7);
    const r = body.results;
    expect(r[0]).toMatchObject({ index: 0, operation: 'create', success: true, external_reference_id: 'NEW-1' });
    expect(r[1]).toEqual({
      index: 1,
      external_reference_id: 'EXISTS',
      operation: 'create',
      success: false,
      id: null,
      error: { status: 409, detail: "Customer with external_reference_id 'EXISTS' already exists" },
    });
    expect(r[2]).toMatchObject({ success: false, id: null, error: { status: 404, detail: "Customer with external_reference_id 'GHOST' not found" } });
    expect(r[3]).toMatchObject({ success: true, operation: 'upsert' });
    expect(r[4].error).toEqual({
      status: 422,
      detail: [{ type: 'string_too_long', loc: ['body', 'items', 4, 'customer', 'phone'], msg: 'String should have at most 50 characters' }],
    });
    expect(r[5].error).toEqual({ status: 422, detail: [{ type: 'missing', loc: ['body', 'items', 5, 'customer', 'name'], msg: 'Field required' }] });
    expect(r[6].error.status).toBe(422);
    expect(r[6].error.detail[0].loc).toEqual(['body', 'items', 6, 'customer', 'external_reference_id']);
    expect(r[7].error).toEqual({
      status: 422,
      detail: [{ type: 'missing', loc: ['body', 'items', 7, 'customer', 'external_reference_id'], msg: 'Field required' }],
    });
    expect(r[8].error).toEqual({ status: 422, detail: [{ type: 'missing', loc: ['body', 'items', 8, 'customer'], msg: 'Field required' }] });
    expect(r[9]).toMatchObject({ success: true, external_reference_id: 'NEW-4' });

    const names = json(await a.get('/v2/tms-api/customers?sort=name')).items.map((c: any) => [c.external_reference_id, c.name, c.phone]);
    expect(names).toEqual([
      ['NEW-4', 'Fine', null],
      ['NEW-1', 'New', null],
      ['EXISTS', 'Old name', '555'],
    ]);
  });

  it('refuses a malformed envelope with 422: missing items, wrong operation, delete on customers', async () => {
    const a = await newTenant(t);
    const noItems = await a.post('/v2/tms-api/batch/customers', {});
    expect(json(noItems).detail).toEqual([{ type: 'missing', loc: ['body', 'items'], msg: 'Field required' }]);
    const notList = await a.post('/v2/tms-api/batch/customers', { items: 'x' });
    expect(json(notList).detail).toEqual([{ type: 'list_type', loc: ['body', 'items'], msg: 'Input should be a valid list' }]);
    const badOp = await a.post('/v2/tms-api/batch/customers', { items: [{ operation: 'delete', external_reference_id: 'X' }] });
    expect(badOp.statusCode).toBe(422);
    expect(json(badOp).detail).toEqual([{ type: 'enum', loc: ['body', 'items', 0, 'operation'], msg: "Input should be 'create', 'update' or 'upsert'" }]);
  });
});

describe('batch carriers', () => {
  it('creates, upserts and updates carriers; a failing item leaves nothing behind', async () => {
    const a = await newTenant(t);
    const first = json(
      await a.post('/v2/tms-api/batch/carriers', {
        items: [
          { operation: 'create', carrier: { external_reference_id: 'CAR-1', name: 'One', contacts: [{ first_name: 'Ann' }] } },
          { operation: 'upsert', external_reference_id: 'CAR-2', carrier: { name: 'Two', dot_number: 'DOT2' } },
        ],
      }),
    );
    expect(first).toMatchObject({ success_count: 2, error_count: 0 });
    const before = json(await a.get('/v2/tms-api/carriers/CAR-1'));
    const second = json(
      await a.post('/v2/tms-api/batch/carriers', {
        items: [
          { operation: 'update', external_reference_id: 'CAR-1', carrier: { name: 'Renamed', contacts: [{ id: 'contact_bogus', first_name: 'X' }] } },
          { operation: 'update', external_reference_id: 'CAR-2', carrier: { name: 'Two Renamed' } },
        ],
      }),
    );
    expect(second.success_count).toBe(1);
    expect(second.results[0].error.status).toBe(422);
    expect(second.results[0].error.detail[0].loc).toEqual(['body', 'items', 0, 'carrier', 'contacts', 0, 'id']);
    expect(json(await a.get('/v2/tms-api/carriers/CAR-1'))).toEqual(before);
    expect(json(await a.get('/v2/tms-api/carriers/CAR-2')).name).toBe('Two Renamed');
  });
});
