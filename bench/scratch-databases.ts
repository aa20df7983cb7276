import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where a benchmark makes its PostgreSQL database (LANEBRIDGE_BENCH_PG_URL, default the local `test`). */
export const PG_ADMIN_URL = process.env.LANEBRIDGE_BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Runs `measure` on a fresh database of each engine asked for (`db`: sqlite, postgres or both): a SQLite
 * file in a temporary folder, a PostgreSQL database made beside PG_ADMIN_URL's; both removed afterwards
 * (kept, SQLite's file and PostgreSQL's database, with LANEBRIDGE_BENCH_KEEP=1).
 */
export async function onScratchDatabases<R>(db: string, name: string, measure: (engine: 'sqlite' | 'postgres', url: string) => Promise<R[]>): Promise<R[]> {
  const results: R[] = [];
  if (db === 'sqlite' || db === 'both') {
    const dir = mkdtempSync(join(tmpdir(), `lanebridge-${name}-bench-`));
    try {
      results.push(...(await measure('sqlite', join(dir, 'bench.db'))));
    } finally {
      if (process.env.LANEBRIDGE_BENCH_KEEP === '1') process.stderr.write(`kept SQLite database ${join(dir, 'bench.db')}\n`);
      else rmSync(dir, { recursive: true, force: true });
    }
  }
  if (db === 'postgres' || db === 'both') {
    const dbName = `lanebridge_${name}_bench_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${dbName}`);
      const url = new URL(PG_ADMIN_URL);
      url.pathname = `/${dbName}`;
      results.push(...(await measure('postgres', url.toString())));
    } finally {
      // LANEBRIDGE_BENCH_KEEP=1: the database is left for a look afterwards (statement plans, sizes).
      if (process.env.LANEBRIDGE_BENCH_KEEP === '1') process.stderr.write(`kept PostgreSQL database ${dbName}\n`);
      else await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
  }
  return results;
}
