import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import type { Readable } from 'node:stream';
import type { Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import type { ImportsTable } from '../../lib/db/types.js';
import { ConflictError, ValidationError } from '../../lib/http/errors.js';
import { pagination, parseSort } from '../../lib/http/pagination.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import {
  ImportNotFoundError,
  MAX_AWAITING_UPLOAD,
  oneRunning,
  PART_MEDIA_TYPES,
  PartTooLargeApiError,
  tooManyAwaiting,
  UnsupportedPartTypeError,
  UploadQuotaError,
} from './imports.errors.js';
import { PartTooLargeError, type ImportFiles, type StagedPart } from './imports.files.js';
import type { CsvOptions } from './imports.header.js';
import { presentImport } from './imports.present.js';
import { activeImportOf, awaitingUploads, heldUploadBytes, importById, importErrorsAfter, insertImport, moveImport, pageOfImports } from './imports.repo.js';
import type { ImportResources } from './imports.resources.js';
import { FINISHED, type Import, type ImportCreate, type ImportListQuery } from './imports.schema.js';
import { checkedParts } from './imports.upload-check.js';

export {
  ImportNotFoundError,
  MAX_AWAITING_UPLOAD,
  PART_MEDIA_TYPES,
  PartTooLargeApiError,
  UnsupportedPartTypeError,
  UploadQuotaError,
} from './imports.errors.js';
export { optionsOf, presentImport } from './imports.present.js';

export interface ImportsServiceDeps {
  db: Executor;
  clock: Clock;
  files: ImportFiles;
  /** The resources an import takes (a CSV's columns are checked against the create schema of its own). */
  resources: ImportResources;
  /** Bytes of parts an organization's unfinished imports may hold, all together (IMPORT_MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Called once an import is queued (the runner takes it at once when it runs in this process). */
  queued?: () => void;
}

type Deps = ImportsServiceDeps;

const IMPORT_ID = /^imp_[0-9a-z]{1,60}$/;

/** The organization's import `id`, or 404. */
async function owned({ db }: Deps, orgId: string, id: string): Promise<ImportsTable> {
  // Not an id this service makes: not found, without asking the database (a part upload looks its import
  // up before the path is validated; a NUL in it was a 500 on PostgreSQL).
  if (!IMPORT_ID.test(id)) throw new ImportNotFoundError(id);
  const row = await importById(db, orgId, id);
  if (!row) throw new ImportNotFoundError(id);
  return row;
}

/** In keepPart's transaction: false when the upload is no longer open (or its folder went); 413 past the organization's bytes. */
async function keepUnderLock(deps: Deps, tx: Executor, orgId: string, id: string, n: number, staged: StagedPart): Promise<boolean> {
  if (!(await moveImport(tx, orgId, id, ['awaiting_upload'], { updated_at: toIso(deps.clock.now()) }))) return false;
  // The other imports' parts, as their rows say, and this one's on disk but for the number replaced.
  const others = (await deps.files.parts(id)).filter((p) => p.n !== n);
  const mine = others.reduce((sum, p) => sum + p.bytes, 0);
  const held = (await heldUploadBytes(tx, orgId, id)) + mine;
  if (held + staged.bytes > deps.maxUploadBytes) throw new UploadQuotaError(deps.maxUploadBytes, held);
  try {
    await staged.keep();
  } catch (err) {
    // Its folder removed while the part streamed in (by hand): not kept, said by keepPart.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return false;
  }
  // `parts` and `bytes_total` move together as parts arrive (GET showed 0 parts beside the bytes).
  await moveImport(tx, orgId, id, ['awaiting_upload'], { bytes_total: mine + staged.bytes, parts: others.length + 1 });
  return true;
}

async function refuseWhileActive({ db }: Deps, orgId: string): Promise<void> {
  const active = await activeImportOf(db, orgId);
  if (active) throw oneRunning(active.id, active.status);
}

/** `actor`: who asked (the audit log's `import.created`); the command line when not given. */
export async function createImport(deps: Deps, orgId: string, body: ImportCreate, actor: AuditActor = cliActor()): Promise<Import> {
  const { db, clock } = deps;
  await refuseWhileActive(deps, orgId);
  const now = toIso(clock.now());
  const format = (body.format ?? 'ndjson').toLowerCase();
  const csv: CsvOptions | undefined = body.csv;
  if (csv && format !== 'csv') throw ValidationError.single(['body', 'csv'], "Value error, csv options are for format 'csv' only");
  const options: { csv?: CsvOptions; strict?: boolean } = {};
  if (csv) options.csv = csv;
  if (body.strict) options.strict = true;
  const row: ImportsTable = {
    id: newId('imp'),
    org_id: orgId,
    resource: body.resource.toLowerCase(),
    format,
    emit_events: (body.emit_events ?? 'summary').toLowerCase(),
    operation: (body.operation ?? 'upsert').toLowerCase(),
    options: Object.keys(options).length > 0 ? JSON.stringify(options) : null,
    status: 'awaiting_upload',
    parts: 0,
    bytes_total: 0,
    rows_total: null,
    checkpoint_row: 0,
    rows_processed: 0,
    rows_succeeded: 0,
    rows_failed: 0,
    claim: null,
    leased_until: null,
    attempts: 0,
    error: null,
    created_at: now,
    updated_at: now,
    queued_at: null,
    started_at: null,
    finished_at: null,
  };
  await db.transaction().execute(async (tx) => {
    // Counted under the organization's row lock (PostgreSQL), so two creates at once cannot both pass.
    if ((await awaitingUploads(tx, orgId)) >= MAX_AWAITING_UPLOAD) throw tooManyAwaiting();
    await insertImport(tx, row);
    await recordAudit(tx, clock, orgId, actor, 'import.created', { type: 'import', id: row.id });
  });
  return presentImport(row, clock.now());
}

/** Streams part `n` to disk (replacing one sent before under that number): the three steps below in one. */
export async function uploadPart(
  deps: Deps,
  orgId: string,
  id: string,
  n: number,
  contentType: string | undefined,
  body: Readable,
): Promise<{ part: number; bytes: number }> {
  await openPart(deps, orgId, id, contentType);
  return keepPart(deps, orgId, id, n, await stagePart(deps, id, n, body));
}

/** Before a part's bytes are read: the import is the organization's, open, and the type one a part may have. */
export async function openPart(deps: Deps, orgId: string, id: string, contentType: string | undefined): Promise<void> {
  const row = await owned(deps, orgId, id);
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type || !(PART_MEDIA_TYPES as readonly string[]).includes(type)) throw new UnsupportedPartTypeError(contentType);
  if (row.status !== 'awaiting_upload') throw new ConflictError(`Import ${id} is ${row.status}: parts are taken only before POST /imports/${id}/complete`);
}

/** The part's bytes to a staged file (null: the import's folder went meanwhile, said by keepPart). */
export async function stagePart(deps: Deps, id: string, n: number, body: Readable): Promise<StagedPart | null> {
  const { files } = deps;
  try {
    return await files.stagePart(id, n, body);
  } catch (err) {
    if (err instanceof PartTooLargeError) throw new PartTooLargeApiError();
    // Its folder removed while the part streamed in (cancelled or expired meanwhile): said by keepPart.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return null;
  }
}

/** A staged part becomes part `n`, if the upload is still open and the organization's parts stay within IMPORT_MAX_UPLOAD_BYTES. */
export async function keepPart(deps: Deps, orgId: string, id: string, n: number, staged: StagedPart | null): Promise<{ part: number; bytes: number }> {
  const { db, files } = deps;
  // Kept under the import's row lock, only while the upload is open: `complete` takes the same lock
  // before it counts the parts, so a part is either counted and run, or refused here and never replaces
  // one that was counted. The upload's last activity moves too (its expiry counts from here).
  let kept = false;
  try {
    kept = staged !== null && (await db.transaction().execute((tx) => keepUnderLock(deps, tx, orgId, id, n, staged)));
  } catch (err) {
    // Not kept: the staged copy goes. (A commit that failed after the rename leaves the part in place,
    // as sent; the client is answered 5xx and sends it again, which replaces it with the same bytes.)
    await staged?.discard();
    throw err;
  }
  if (staged === null || !kept) {
    await staged?.discard();
    const now = await importById(db, orgId, id);
    if (now?.status === 'cancelled') await files.remove(id);
    // Still open: its folder was removed from under it (by hand: nothing of the service does that to an open upload).
    if (now?.status === 'awaiting_upload')
      throw new ConflictError(
        `Import ${id}'s uploaded parts were removed from the imports folder while this part streamed in (this part was not kept): send it again`,
      );
    throw new ConflictError(`Import ${id} is ${now?.status ?? 'gone'}: parts are taken only before POST /imports/${id}/complete (this part was not kept)`);
  }
  return { part: n, bytes: staged.bytes };
}

/** Nothing runs before this: the parts are checked (numbered 1…N; a CSV's header has every required column) and the import is queued. */
export async function completeImport(deps: Deps, orgId: string, id: string): Promise<Import> {
  const { db, clock } = deps;
  const row = await owned(deps, orgId, id);
  if (row.status !== 'awaiting_upload') throw new ConflictError(`Import ${id} is ${row.status}: it was completed already`);
  try {
    await db.transaction().execute(async (tx) => {
      // The import's row lock first (a part being kept takes it too): the parts counted below are the
      // ones the runner reads, and a part that finishes streaming after this is refused, not swapped in.
      const now = toIso(clock.now());
      if (!(await moveImport(tx, orgId, id, ['awaiting_upload'], { updated_at: now })))
        throw new ConflictError(`Import ${id} is no longer awaiting its upload`);
      const parts = await checkedParts(deps.files, deps.resources, row);
      const active = await activeImportOf(tx, orgId);
      if (active) throw oneRunning(active.id, active.status);
      await moveImport(tx, orgId, id, ['awaiting_upload'], {
        status: 'queued',
        parts: parts.length,
        bytes_total: parts.reduce((s, p) => s + p.bytes, 0),
        queued_at: now,
        updated_at: now,
      });
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const active = await activeImportOf(db, orgId);
    throw oneRunning(active?.id ?? 'another', active?.status ?? 'running');
  }
  deps.queued?.();
  return presentImport(await owned(deps, orgId, id), clock.now());
}

export async function getImport(deps: Deps, orgId: string, id: string): Promise<Import> {
  const { clock } = deps;
  return presentImport(await owned(deps, orgId, id), clock.now());
}

export async function listImports(deps: Deps, orgId: string, q: ImportListQuery) {
  const { db, clock } = deps;
  const { field, direction } = parseSort(q.sort);
  const { rows, total } = await pageOfImports(db, orgId, {
    page: q.page,
    page_size: q.page_size,
    column: field === 'updated_at' ? 'updated_at' : 'created_at',
    direction,
    ...(q.status ? { status: q.status.toLowerCase() } : {}),
  });
  const now = clock.now();
  return { items: rows.map((r) => presentImport(r, now)), pagination: pagination(q.page, q.page_size, total) };
}

/** The refused rows as NDJSON lines `{"row","external_reference_id","detail"}`, in row order (read a page at a time). */
export async function importErrorLines(deps: Deps, orgId: string, id: string): Promise<AsyncGenerator<string>> {
  const { db } = deps;
  await owned(deps, orgId, id);
  return (async function* () {
    let after = 0;
    for (;;) {
      const page = await importErrorsAfter(db, id, after, 1000);
      if (page.length === 0) return;
      yield page.map((e) => `{"row":${Number(e.row)},"external_reference_id":${JSON.stringify(e.external_reference_id)},"detail":${e.detail}}\n`).join('');
      after = Number(page[page.length - 1]!.row);
      if (page.length < 1000) return;
    }
  })();
}

/** Stops an import: the chunks already committed stay; a running import stops before its next chunk. */
export async function cancelImport(deps: Deps, orgId: string, id: string, actor: AuditActor = cliActor()): Promise<Import> {
  const { db, clock, files } = deps;
  const row = await owned(deps, orgId, id);
  if (FINISHED.has(row.status)) throw new ConflictError(`Import ${id} has already finished (${row.status})`);
  const now = toIso(clock.now());
  const moved = await db.transaction().execute(async (tx) => {
    const done = await moveImport(tx, orgId, id, ['awaiting_upload', 'queued', 'running'], {
      status: 'cancelled',
      claim: null,
      leased_until: null,
      finished_at: now,
      updated_at: now,
    });
    if (done) await recordAudit(tx, clock, orgId, actor, 'import.cancelled', { type: 'import', id });
    return done;
  });
  if (!moved) return cancelImport(deps, orgId, id, actor);
  // A running import's parts are removed by its runner when it stops.
  if (row.status !== 'running') await files.remove(id);
  return presentImport(await owned(deps, orgId, id), clock.now());
}

/** The imports API (docs/imports.md, "The shape"): create, parts, complete, status, list, errors, cancel. The rows are run by the runner (imports.runner.ts). */
export function importsService(deps: ImportsServiceDeps) {
  return {
    /** `actor`: who asked (the audit log's `import.created`); the command line when not given. */
    create: (orgId: string, body: ImportCreate, actor?: AuditActor) => createImport(deps, orgId, body, actor),
    uploadPart: (orgId: string, id: string, n: number, contentType: string | undefined, body: Readable) => uploadPart(deps, orgId, id, n, contentType, body),
    openPart: (orgId: string, id: string, contentType: string | undefined) => openPart(deps, orgId, id, contentType),
    stagePart: (id: string, n: number, body: Readable) => stagePart(deps, id, n, body),
    keepPart: (orgId: string, id: string, n: number, staged: StagedPart | null) => keepPart(deps, orgId, id, n, staged),
    complete: (orgId: string, id: string) => completeImport(deps, orgId, id),
    get: (orgId: string, id: string) => getImport(deps, orgId, id),
    list: (orgId: string, q: ImportListQuery) => listImports(deps, orgId, q),
    errorLines: (orgId: string, id: string) => importErrorLines(deps, orgId, id),
    cancel: (orgId: string, id: string, actor?: AuditActor) => cancelImport(deps, orgId, id, actor),
  };
}

export type ImportsService = ReturnType<typeof importsService>;
