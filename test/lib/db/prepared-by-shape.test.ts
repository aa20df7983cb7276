import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_SHAPES, preparedByShape } from '../../../src/lib/db/prepared.js';
import { useApp, isPostgres } from '../../helpers.js';

// The open load's hot reads (lane history, loads on their way, carriers' cards) are compiled once per
// shape and run with each call's values: a value bound to the wrong place would answer another
// carrier's or another lane's rows without any error, so the order is checked at the first compile.
describe('statements compiled once per shape', () => {
  const org = 'org_prepared_shape';
  const t = useApp();
  beforeAll(async () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({
      org_id: org,
      equipment_type: i % 2 === 0 ? 'DRY_VAN' : 'REEFER',
      origin_cell: i,
      destination_cell: 100 + i,
      load_count: 10 + i,
      carrier_count: 1,
      last_delivered_at: '2026-01-01T00:00:00Z',
      refreshed_at: '2026-01-01T00:00:00Z',
    }));
    await t.store.db.insertInto('lane_stats').values(rows).execute();
  });

  type Input = { equipment: string; cells: number[] };
  const build = (byPosition: boolean) =>
    preparedByShape<Input, unknown>(
      ({ cells }) => String(cells.length),
      (tx, { equipment, cells }) =>
        tx
          .selectFrom('lane_stats')
          .select(['origin_cell', 'load_count'])
          .where('org_id', '=', org)
          .where('equipment_type', '=', equipment)
          .where('origin_cell', 'in', cells)
          .orderBy('origin_cell'),
      ({ equipment, cells }) => [org, equipment, ...cells],
      { arrayRows: byPosition },
    );

  it('answers each call with its own values, one statement text per shape', async () => {
    const read = build(false);
    const texts = new Set<string>();
    const stop = t.store.statements.watch((s) => {
      if (s.includes('from "lane_stats"')) texts.add(s);
    });
    try {
      expect(await read(t.store.db, { equipment: 'DRY_VAN', cells: [0, 2] })).toEqual([
        { origin_cell: 0, load_count: 10 },
        { origin_cell: 2, load_count: 12 },
      ]);
      // Same shape, other values: the compiled text is reused with these.
      expect(await read(t.store.db, { equipment: 'REEFER', cells: [3, 5] })).toEqual([
        { origin_cell: 3, load_count: 13 },
        { origin_cell: 5, load_count: 15 },
      ]);
      expect(await read(t.store.db, { equipment: 'DRY_VAN', cells: [4, 0, 2] })).toEqual([
        { origin_cell: 0, load_count: 10 },
        { origin_cell: 2, load_count: 12 },
        { origin_cell: 4, load_count: 14 },
      ]);
      // In a transaction too (another executor object on the same database).
      expect(await t.store.db.transaction().execute((tx) => read(tx, { equipment: 'REEFER', cells: [1, 9] }))).toEqual([{ origin_cell: 1, load_count: 11 }]);
    } finally {
      stop();
    }
    expect(texts.size).toBe(2);
  });

  it('keeps answering right past the bound on kept shapes (the least lately used is compiled again)', async () => {
    const read = build(false);
    for (let n = 1; n <= MAX_SHAPES + 20; n++) {
      const cells = Array.from({ length: n }, (_, i) => (i === 0 ? 4 : 1000 + i));
      expect(await read(t.store.db, { equipment: 'DRY_VAN', cells })).toEqual([{ origin_cell: 4, load_count: 14 }]);
    }
    expect(await read(t.store.db, { equipment: 'REEFER', cells: [5] })).toEqual([{ origin_cell: 5, load_count: 15 }]);
  });

  it('refuses parameters listed out of the compiled order at the first compile of a shape', async () => {
    const misordered = preparedByShape<Input, unknown>(
      ({ cells }) => String(cells.length),
      (tx, { equipment, cells }) =>
        tx.selectFrom('lane_stats').select(['origin_cell']).where('org_id', '=', org).where('equipment_type', '=', equipment).where('origin_cell', 'in', cells),
      ({ equipment, cells }) => [equipment, org, ...cells],
    );
    await expect(misordered(t.store.db, { equipment: 'DRY_VAN', cells: [0] })).rejects.toThrow(/not in the compiled order/);
  });

  it('gives rows as arrays of the selected columns on SQLite when asked (objects on PostgreSQL)', async () => {
    const rows = await build(true)(t.store.db, { equipment: 'DRY_VAN', cells: [2, 4] });
    if (isPostgres())
      expect(rows).toEqual([
        { origin_cell: 2, load_count: 12 },
        { origin_cell: 4, load_count: 14 },
      ]);
    else
      expect(rows).toEqual([
        [2, 12],
        [4, 14],
      ]);
  });
});
