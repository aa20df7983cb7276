import { describe, expect, it } from 'vitest';
import { bulkInsert } from '../../../src/lib/db/bulk.js';
import { useApp, isPostgres } from '../../helpers.js';

// SQLite's multi-row insert is a statement text per row count, compiled and kept in the statement
// cache (a 100-row insert is a large program). An import's chunks vary in size: a text per count
// from 1 to 100 filled the cache and the server's memory (60 MB more in the import benchmark).
describe.skipIf(isPostgres())('set-based inserts on SQLite', () => {
  const t = useApp();

  it('write every row: a set of up to 100 rows in one statement, a larger one with 8 statement texts per table whatever its count', async () => {
    const insert = bulkInsert('lane_stats', [
      'org_id',
      'equipment_type',
      'origin_cell',
      'destination_cell',
      'load_count',
      'carrier_count',
      'last_delivered_at',
      'refreshed_at',
    ]);
    const texts = new Set<string>();
    const stop = t.store.statements.watch((s) => {
      if (s.includes('insert into "lane_stats"')) texts.add(s);
    });
    let cell = 0;
    let total = 0;
    try {
      for (let count = 101; count <= 350; count++) {
        const rows = Array.from({ length: count }, () => ({
          org_id: 'org_bulk_test',
          equipment_type: 'DRY_VAN',
          origin_cell: cell++,
          destination_cell: 1,
          load_count: 1,
          carrier_count: 1,
          last_delivered_at: '2026-01-01T00:00:00Z',
          refreshed_at: '2026-01-01T00:00:00Z',
        }));
        await t.store.db.transaction().execute((tx) => insert(tx, rows));
        total += count;
      }
    } finally {
      stop();
    }
    const stored = await t.store.db
      .selectFrom('lane_stats')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', 'org_bulk_test')
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(total);
    // 100 rows, then 64, 32, 16, 8, 4, 2, 1.
    expect(texts.size).toBe(8);
    // Up to 100 rows: one statement.
    const single: string[] = [];
    const stopSingle = t.store.statements.watch((s) => {
      if (s.includes('insert into "lane_stats"')) single.push(s);
    });
    try {
      await t.store.db.transaction().execute((tx) =>
        insert(
          tx,
          Array.from({ length: 90 }, (_, i) => ({
            org_id: 'org_bulk_test',
            equipment_type: 'REEFER',
            origin_cell: i,
            destination_cell: 2,
            load_count: 1,
            carrier_count: 1,
            last_delivered_at: '2026-01-01T00:00:00Z',
            refreshed_at: '2026-01-01T00:00:00Z',
          })),
        ),
      );
    } finally {
      stopSingle();
    }
    expect(single).toHaveLength(1);
  });
});
