import { sql } from 'kysely';
import { describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/lib/db/errors.js';
import { openDataStore } from '../../src/lib/db/index.js';

// PostgreSQL: a statement past its timeout is stopped by the server itself (not only abandoned by the
// client, which would leave the backend working), its error is "unavailable" (503), and the pool's
// connection serves the next statement.
const pgUrl = inject('databaseUrl');

describe.skipIf(!pgUrl)('statement timeout (PostgreSQL)', () => {
  it('stops a statement on the server at its timeout, answers it as unavailable, and keeps the pool usable', async () => {
    const store = openDataStore(pgUrl!, { poolSize: 1, statementTimeoutMs: 300 });
    try {
      const started = Date.now();
      const err = await sql`select pg_sleep(5)`.execute(store.db).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: '57014' });
      expect(isDatabaseUnavailable(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(2000);
      // The server is no longer running it (a client-side timeout alone would leave it sleeping).
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where query = 'select pg_sleep(5)' and state = 'active'`.execute(
        store.db,
      );
      expect(Number(rows[0]!.n)).toBe(0);
      const { rows: ok } = await sql<{ one: number }>`select 1 as one`.execute(store.db);
      expect(ok).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });
});
