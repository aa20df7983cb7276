import { sql } from 'kysely';
import { dialectOf, type Executor } from './executor.js';

/**
 * The planner's statistics of tables that grow fast (an import's). PostgreSQL plans a statement from
 * them and each connection keeps its plan until a table's statistics change; SQLite's plans for the
 * write path's lookups (unique indexes on every column compared) do not depend on them, so both
 * functions do nothing there.
 */

/** The row estimate of `table` as of its last ANALYZE (`pg_class.reltuples`; 0 when never analyzed); null where there are no statistics to keep (SQLite). */
export async function plannedRows(db: Executor, table: string): Promise<number | null> {
  if (dialectOf(db) !== 'postgres') return null;
  const { rows } = await sql<{ n: number | string }>`select reltuples as n from pg_class where oid = to_regclass(${table})`.execute(db);
  return Math.max(0, Number(rows[0]?.n ?? 0));
}

/**
 * ANALYZE of `tables` (PostgreSQL), one statement each (each within the statement timeout by itself):
 * new statistics, and every connection's kept plans of them made again. SKIP_LOCKED: a table whose
 * lock is held by another maintenance command (a VACUUM, CREATE INDEX CONCURRENTLY, another instance's
 * ANALYZE) is left for the next time rather than waited for.
 */
export async function analyzeTables(db: Executor, tables: readonly string[]): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  for (const t of tables) await sql`analyze (skip_locked) ${sql.raw(`"${t.replaceAll('"', '""')}"`)}`.execute(db);
}
