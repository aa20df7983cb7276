import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import type { Config } from '../config.js';
import { openDataStore } from '../lib/db/index.js';
import { ValidationError } from '../lib/http/errors.js';
import { compileBodyValidator } from '../lib/http/validation.js';
import { MAX_PART_BYTES } from '../modules/imports/imports.files.js';
import type { Imports } from '../modules/imports/imports.js';
import { FINISHED, ImportCreate, type Import } from '../modules/imports/imports.schema.js';

export interface ImportCommandContext {
  values: Record<string, unknown>;
  file: string;
  print(obj: unknown): void;
  usage(message: string): Error;
}

const validate = compileBodyValidator(ImportCreate);

/** The import's create body from the command's options (each problem named by the option that set it). */
function importBody(ctx: ImportCommandContext): Record<string, unknown> {
  const { values, file } = ctx;
  const format = typeof values.format === 'string' ? values.format : /\.csv$/i.test(file) ? 'csv' : 'ndjson';
  let columns: unknown;
  if (typeof values.columns === 'string') {
    try {
      columns = JSON.parse(values.columns);
    } catch {
      throw ctx.usage('--columns must be a JSON object of CSV header → field path');
    }
  }
  const csv =
    format === 'csv' && (values.delimiter !== undefined || columns !== undefined)
      ? { ...(values.delimiter !== undefined ? { delimiter: values.delimiter } : {}), ...(columns !== undefined ? { columns } : {}) }
      : undefined;
  const body = {
    resource: values.resource,
    format,
    ...(values['emit-events'] !== undefined ? { emit_events: values['emit-events'] } : {}),
    ...(values.operation !== undefined ? { operation: values.operation } : {}),
    ...(csv ? { csv } : {}),
  };
  const issues = validate(body, ['body']);
  // Each problem named by the option that set it.
  const option = (loc: readonly (string | number)[]) =>
    ({ resource: '--resource', format: '--format', emit_events: '--emit-events', operation: '--operation' })[String(loc[1])] ??
    (loc[2] === 'delimiter' ? '--delimiter' : '--columns');
  if (issues) throw new ValidationError(issues.map((i) => ({ ...i, msg: `${option(i.loc)}: ${i.msg}` })));
  return body;
}

/** Runs import `id` in this process (drain) and shows its progress on `bar` until it ends: the import as GET answers it. */
async function runAndFollow(imports: Imports, org: string, id: string, bar: cliProgress.SingleBar): Promise<Import> {
  const { service, runner } = imports;
  let running = true;
  const work = runner.drain(id).finally(() => (running = false));
  let shown = false;
  let last: Import = await service.get(org, id);
  for (;;) {
    last = await service.get(org, id);
    if (last.rows_total !== null) {
      const payload = { resource: last.resource, rate: last.rows_per_second ?? 0, failed: last.rows_failed };
      if (!shown) bar.start(last.rows_total, last.rows_processed, payload);
      else bar.update(last.rows_processed, payload);
      shown = true;
    }
    if (FINISHED.has(last.status)) break;
    await new Promise((r) => setTimeout(r, running ? 250 : 1000));
  }
  await work;
  return last;
}

/**
 * `bin/lanebridge import --org ORG --resource loads FILE`: the same job the API runs (create, parts,
 * complete, the runner), in this process, with a progress bar on stderr (cli-progress). Prints the
 * import as GET /imports/{id} answers it when it ends; exit 0 when it completed (with or without
 * refused rows: their count is in the answer, the rows in GET /imports/{id}/errors), 1 otherwise.
 */
export async function runImportCommand(config: Config, ctx: ImportCommandContext): Promise<number> {
  const { values, file } = ctx;
  const org = values.org;
  if (typeof org !== 'string' || org.trim() === '') throw ctx.usage('--org is required');
  if (typeof values.resource !== 'string') throw ctx.usage('--resource is required (locations, customers, carriers or loads)');
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    throw ctx.usage(`cannot read ${file}`);
  }
  const body = importBody(ctx);

  const store = openDataStore(config.databaseUrl, { poolSize: 4, onCreated: (m) => process.stderr.write(`lanebridge: ${m}\n`) });
  await store.migrate();
  const { buildApp } = await import('../app.js');
  const built = await buildApp({ config: { ...config, webhookWorker: false }, store, logger: false, importRunner: 'manual' });
  const { service } = built.imports;
  const bar = new cliProgress.SingleBar(
    {
      format: 'importing {resource} [{bar}] {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta_formatted} | {failed} refused',
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  try {
    if (!(await built.services.accounts.listOrganizations()).some((o) => o.id === org))
      throw ctx.usage(`no organization with id '${org}' (bin/lanebridge org list shows them)`);
    const created = await service.create(org, body as ImportCreate);
    for (let n = 1, start = 0; start < size || n === 1; n++, start += MAX_PART_BYTES) {
      const end = Math.min(size, start + MAX_PART_BYTES) - 1;
      await service.uploadPart(org, created.id, n, 'application/octet-stream', createReadStream(file, end >= start ? { start, end } : { start: 0, end: -1 }));
      if (end < start) break;
    }
    await service.complete(org, created.id);
    process.stderr.write(`lanebridge: import ${created.id} queued (${size} bytes)\n`);
    // Run here; another instance's runner may take it first: then this only follows its progress.
    const last = await runAndFollow(built.imports, org, created.id, bar);
    bar.stop();
    ctx.print(last);
    process.stderr.write(
      `lanebridge: import ${last.id} ${last.status}: ${last.rows_succeeded} written, ${last.rows_failed} refused${last.rows_failed > 0 ? ` (GET /v2/tms-api/imports/${last.id}/errors)` : ''}${last.error ? `: ${last.error}` : ''}\n`,
    );
    return last.status === 'completed' || last.status === 'completed_with_errors' ? 0 : 1;
  } finally {
    bar.stop();
    await built.app.close();
    await store.close();
  }
}
