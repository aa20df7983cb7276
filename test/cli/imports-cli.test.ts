// D15: `bin/lanebridge import --org ORG --resource RESOURCE FILE` runs the same job as the API, in the process.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useApp, newTenant } from '../helpers.js';
import { BIN, tempDir } from '../reliability/support.js';

const run = promisify(execFile);
const dir = tempDir('imports-cli');
const t = useApp({ importsDir: join(dir, 'parts') }, { importRunner: 'manual', webhookDelivery: 'manual' });

async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(BIN, args, {
      env: { ...process.env, DATABASE_URL: t.config.databaseUrl, IMPORTS_DIR: join(dir, 'parts'), LOG_LEVEL: 'silent' },
    });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

describe('bin/lanebridge import', () => {
  it('imports a file, prints the import as the API shows it, and the refused rows are in its error file', async () => {
    const a = await newTenant(t);
    const file = join(dir, 'customers.csv');
    writeFileSync(file, 'Ref,name,phone\r\nCLI-1,"Acme, Inc.",+1-555-0100\r\nCLI-2,,\r\nCLI-3,Third,\r\n');
    const res = await cli('import', '--org', a.orgId, '--resource', 'customers', '--columns', '{"Ref":"external_reference_id"}', file);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out).toMatchObject({
      resource: 'customers',
      format: 'csv',
      status: 'completed_with_errors',
      rows_total: 3,
      rows_succeeded: 2,
      rows_failed: 1,
      percent: 100,
    });
    expect(res.stderr).toContain(`import ${out.id} completed_with_errors: 2 written, 1 refused`);
    expect((await a.get('/v2/tms-api/customers/CLI-1')).json().name).toBe('Acme, Inc.');
    const errors = (await a.get(`/v2/tms-api/imports/${out.id}/errors`)).body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(errors).toEqual([{ row: 2, external_reference_id: 'CLI-2', detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required' }] }]);
  }, 120_000);

  it('says what to fix, without a stack trace, for an unknown organization, a missing file or a bad resource', async () => {
    const a = await newTenant(t);
    const file = join(dir, 'x.ndjson');
    writeFileSync(file, '{}\n');
    const unknown = await cli('import', '--org', 'org_nope', '--resource', 'loads', file);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("no organization with id 'org_nope'");
    const missing = await cli('import', '--org', a.orgId, '--resource', 'loads', join(dir, 'none.ndjson'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read');
    const bad = await cli('import', '--org', a.orgId, '--resource', 'trucks', file);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('resource');
    for (const r of [unknown, missing, bad]) expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});
