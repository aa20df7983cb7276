// D15: "a process killed mid-import resumes from the checkpoint on restart (any instance) and ends with
// the counts of an uninterrupted run; no row is applied twice". A real `bin/lanebridge worker` is killed
// with SIGKILL at about half way and another is started.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { waitFor, newTenant, startAppOn, type TestApp } from '../../helpers.js';
import { dallasToHouston, seedFreight } from '../../fixtures.js';
import { BIN, freshPgDatabase, pgAdminUrl, serverCleanups, tempDir } from '../../reliability/support.js';

const cleanups = serverCleanups();

const ROWS = 3000;

function startWorker(env: Record<string, string>): { proc: ChildProcess; output: () => string; exited: Promise<NodeJS.Signals | number | null> } {
  const proc = spawn(BIN, ['worker'], { env: { ...process.env, LOG_LEVEL: 'warn', WORKER_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((r) => proc.on('exit', (code, signal) => r(signal ?? code)));
  cleanups.push(() => void proc.kill('SIGKILL'));
  return { proc, output: () => out, exited };
}

describe('an import whose process is killed half way', () => {
  it('resumes in another process from the checkpoint: the same final counts, no duplicate load, the checkpoint never moves back', async () => {
    const admin = pgAdminUrl();
    let pgUrl: string | null = null;
    if (admin) {
      // A database of its own: the worker claims every organization's imports.
      const db = await freshPgDatabase(admin, `imports_resume_${process.pid}`);
      cleanups.push(() => db.drop());
      pgUrl = db.url;
    }
    const dir = tempDir('imports-resume');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const t: TestApp = await startAppOn(pgUrl, { importsDir: dir }, { importRunner: 'manual', webhookDelivery: 'manual' });
    cleanups.push(() => t.close());
    const a = await newTenant(t, undefined, { perMinute: 100_000, perDay: 1_000_000 });
    await seedFreight(a);
    // Every 100th row refused (unknown customer): 30 of 3,000.
    const lines = Array.from({ length: ROWS }, (_, i) =>
      JSON.stringify(dallasToHouston(`K-${i + 1}`, (i + 1) % 100 === 0 ? { customer_external_reference_id: 'NOBODY' } : {})),
    );
    const { id } = (await a.post('/v2/tms-api/imports', { resource: 'loads' })).json();
    expect(
      (
        await a.request({
          method: 'PUT',
          url: `/v2/tms-api/imports/${id}/parts/1`,
          payload: `${lines.join('\n')}\n`,
          headers: { 'content-type': 'application/x-ndjson' },
        })
      ).statusCode,
    ).toBe(200);
    expect((await a.post(`/v2/tms-api/imports/${id}/complete`, undefined)).json().status).toBe('queued');

    const env = { DATABASE_URL: t.config.databaseUrl, IMPORTS_DIR: dir, LANEBRIDGE_INTERNAL: JSON.stringify({ importChunkRows: 100, importLeaseMs: 2000 }) };
    const row = () => t.store.db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const seen: number[] = [];
    const watch = async (until: (r: Awaited<ReturnType<typeof row>>) => boolean, output: () => string, timeoutMs: number) => {
      let last: Awaited<ReturnType<typeof row>> | undefined;
      const check = async () => {
        last = await row();
        seen.push(Number(last.checkpoint_row));
        return until(last) && last;
      };
      return waitFor(check, { timeout: timeoutMs, interval: 10 }).catch(() => {
        throw new Error(`import did not get there in time: ${JSON.stringify(last)}\n${output()}`);
      });
    };

    const first = startWorker(env);
    await watch((r) => Number(r.checkpoint_row) >= ROWS / 2, first.output, 120_000);
    first.proc.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const atKill = await row();
    expect(atKill.status).toBe('running');
    expect(Number(atKill.checkpoint_row)).toBeLessThan(ROWS);
    expect(Number(atKill.rows_processed)).toBe(Number(atKill.checkpoint_row));

    const second = startWorker(env);
    const done = await watch((r) => r.status !== 'running' && r.status !== 'queued', second.output, 180_000);
    second.proc.kill('SIGTERM');
    await second.exited;

    // Never backwards, at any reading.
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThanOrEqual(seen[i - 1]!);
    expect(done).toMatchObject({ status: 'completed_with_errors', error: null });
    expect(Number(done.attempts)).toBe(2);
    expect([done.rows_total, done.rows_processed, done.rows_succeeded, done.rows_failed, done.checkpoint_row].map(Number)).toEqual([
      ROWS,
      ROWS,
      ROWS - 30,
      30,
      ROWS,
    ]);
    const counted = await t.store.db
      .selectFrom('loads')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.count('external_reference_id').distinct().as('refs')])
      .where('org_id', '=', a.orgId)
      .executeTakeFirstOrThrow();
    expect([Number(counted.n), Number(counted.refs)]).toEqual([ROWS - 30, ROWS - 30]);
    const stops = await t.store.db
      .selectFrom('load_stops')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', a.orgId)
      .executeTakeFirstOrThrow();
    expect(Number(stops.n)).toBe(2 * (ROWS - 30));
    const errors = (await a.get(`/v2/tms-api/imports/${id}/errors`)).body
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).row);
    expect(errors).toEqual(Array.from({ length: 30 }, (_, i) => (i + 1) * 100));
  }, 300_000);
});
