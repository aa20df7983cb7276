import { cliActor, recordAudit, type AuditActor } from '../audit/audit.js';
import type { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import type { ImportsTable } from '../../lib/db/types.js';
import { ConflictError, DetailError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { pagination, parseSort } from '../../lib/http/pagination.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { MAX_PART_BYTES, PartTooLargeError, type ImportFiles, type StagedPart } from './imports.files.js';
import { FORBIDDEN_SEGMENTS, readCsvHeader, type CsvOptions } from './imports.rows.js';
import { csvHeader, headerBoundsProblem, headerPlacementProblem, missingColumns } from './imports.header.js';
import { activeImportOf, awaitingUploads, heldUploadBytes, importById, importErrorsAfter, insertImport, moveImport, pageOfImports } from './imports.repo.js';
import { FINISHED, type Import, type ImportCreate, type ImportListQuery, type ImportResource } from './imports.schema.js';

// Columns a CSV header may have (a load with 20 stops of 8 columns each is under 200).
const MAX_CSV_COLUMNS = 500;

/** The media types a part may be sent as (docs/imports.md, "Parts"). */
export const PART_MEDIA_TYPES = ['application/x-ndjson', 'text/csv', 'application/octet-stream'] as const;

/** What an import was created with beside its columns: its CSV options, and whether it is strict. */
export const optionsOf = (row: Pick<ImportsTable, 'options'>): { csv?: CsvOptions; strict?: boolean } =>
  row.options ? (JSON.parse(row.options) as { csv?: CsvOptions; strict?: boolean }) : {};

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** The import as the API answers it: its counts, and the progress worked out from them (`now` for a running one). */
export function presentImport(row: ImportsTable, now: Date): Import {
  const total = num(row.rows_total);
  const processed = Number(row.rows_processed);
  const finished = FINISHED.has(row.status);
  const end = row.finished_at ? Date.parse(row.finished_at) : now.getTime();
  const seconds = row.started_at ? (end - Date.parse(row.started_at)) / 1000 : 0;
  const rate = seconds > 0 && processed > 0 ? processed / seconds : null;
  let eta: number | null = null;
  if (finished) eta = 0;
  else if (total !== null && rate) eta = Math.ceil((total - processed) / rate);
  let percent: number | null = total === null ? null : total === 0 ? 100 : Math.floor((processed / total) * 1000) / 10;
  if (row.status === 'completed' || row.status === 'completed_with_errors') percent = 100;
  return {
    id: row.id,
    resource: row.resource,
    format: row.format,
    emit_events: row.emit_events,
    operation: row.operation,
    strict: optionsOf(row).strict === true,
    status: row.status,
    parts: row.parts,
    bytes_total: Number(row.bytes_total),
    rows_total: total,
    rows_processed: processed,
    rows_succeeded: Number(row.rows_succeeded),
    rows_failed: Number(row.rows_failed),
    percent,
    rows_per_second: rate === null ? null : Math.round(rate * 10) / 10,
    eta_seconds: eta,
    error: row.error,
    created_at: row.created_at,
    updated_at: row.updated_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

export class ImportNotFoundError extends DetailError {
  constructor(id: string) {
    super('not_found', `Import with id '${id}' not found`);
  }
}

export class UnsupportedPartTypeError extends DetailError {
  constructor(type: string | undefined) {
    super('unsupported_media_type', `A part is sent as ${PART_MEDIA_TYPES.join(', ')}${type ? `, not '${type}'` : ' (no Content-Type was sent)'}`);
  }
}

export class PartTooLargeApiError extends DetailError {
  constructor() {
    super(
      'payload_too_large',
      `A part is at most ${MAX_PART_BYTES} bytes (64 MiB): split the file into more parts (each PUT /imports/{id}/parts/{n}, n from 1)`,
    );
  }
}

/** Imports awaiting their upload one organization may have at once (docs/imports.md, "Bounds"). */
export const MAX_AWAITING_UPLOAD = 3;

export class UploadQuotaError extends DetailError {
  constructor(limit: number, held: number) {
    super(
      'payload_too_large',
      `The unfinished imports of this organization may hold at most ${limit} bytes of parts in all (IMPORT_MAX_UPLOAD_BYTES); they hold ${held} bytes without this part (this part was not kept): complete, cancel or wait for an import first`,
    );
  }
}

const tooManyAwaiting = () =>
  new ConflictError(
    `This organization has ${MAX_AWAITING_UPLOAD} imports awaiting their upload, the most it may have at once: complete or cancel one (POST /v2/tms-api/imports/{id}/complete or /cancel) first`,
  );

const oneRunning = (id: string, status: string) =>
  new ConflictError(
    `Import ${id} is ${status} for this organization; one import runs at a time: wait for it to finish or cancel it (POST /v2/tms-api/imports/${id}/cancel)`,
  );

export interface ImportsServiceDeps {
  db: Executor;
  clock: Clock;
  files: ImportFiles;
  /** The create schema of each resource (a CSV's required columns). */
  createSchemas: Record<ImportResource, TSchema>;
  /** Bytes of parts an organization's unfinished imports may hold, all together (IMPORT_MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Called once an import is queued (the runner takes it at once when it runs in this process). */
  queued?: () => void;
}

/** The imports API (docs/imports.md, "The shape"): create, parts, complete, status, list, errors, cancel. The rows are run by the runner (imports.runner.ts). */
export function importsService(deps: ImportsServiceDeps) {
  const { db, clock, files } = deps;

  const IMPORT_ID = /^imp_[0-9a-z]{1,60}$/;

  async function owned(orgId: string, id: string): Promise<ImportsTable> {
    // Not an id this service makes: not found, without asking the database (a part upload looks its import
    // up before the path is validated; a NUL in it was a 500 on PostgreSQL).
    if (!IMPORT_ID.test(id)) throw new ImportNotFoundError(id);
    const row = await importById(db, orgId, id);
    if (!row) throw new ImportNotFoundError(id);
    return row;
  }

  /** The uploaded parts, checked: numbered 1…N without a gap, and a CSV's header has every required column. */
  async function checkedParts(row: ImportsTable): Promise<{ n: number; bytes: number }[]> {
    const id = row.id;
    const parts = await files.parts(id);
    if (parts.length === 0)
      throw ValidationError.single(
        ['path', 'id'],
        `Value error, no part was uploaded: send the file with PUT /v2/tms-api/imports/${id}/parts/1 (then 2, 3 … for a file over 64 MiB) first`,
      );
    const gap = parts.findIndex((p, i) => p.n !== i + 1);
    if (gap >= 0)
      throw ValidationError.single(
        ['path', 'id'],
        `Value error, part ${gap + 1} is missing: parts are numbered 1, 2, 3 … without a gap (uploaded: ${parts.map((p) => p.n).join(', ')})`,
      );
    if (row.format === 'csv') {
      const csv = optionsOf(row).csv ?? {};
      let names: string[] | null;
      try {
        names = await readCsvHeader(files.open(id, parts.length), csv);
      } catch (err) {
        throw ValidationError.single(['body'], `Value error, the CSV header cannot be read: ${(err as Error).message}`);
      }
      if (!names) throw ValidationError.single(['body'], 'Value error, the CSV is empty: its first record must be a header naming the columns');
      // A header is a record's fields: a few dozen columns. Bounded before anything walks it (a header of
      // thousands of stop columns held the event loop for seconds), and no column may name a prototype.
      if (names.length > MAX_CSV_COLUMNS)
        throw ValidationError.single(['body'], `Value error, the CSV header has ${names.length} columns; at most ${MAX_CSV_COLUMNS} are accepted`);
      const header = csvHeader(names, csv);
      const bounds = headerBoundsProblem(header);
      if (bounds) throw ValidationError.single(['body'], bounds);
      const forbidden = header.names.filter((_, i) => header.paths[i]?.some((seg) => typeof seg === 'string' && FORBIDDEN_SEGMENTS.has(seg)));
      if (forbidden.length > 0)
        throw ValidationError.single(
          ['body'],
          `Value error, the CSV header names no field of a record with column ${JSON.stringify(forbidden[0])}: rename or drop it`,
        );
      const placement = headerPlacementProblem(header, deps.createSchemas[row.resource as ImportResource]);
      if (placement) throw ValidationError.single(['body'], placement);
      const missing = missingColumns(header, deps.createSchemas[row.resource as ImportResource]);
      if (missing.length > 0) {
        const issues: ValidationIssue[] = missing.map((field) => ({
          type: 'missing',
          loc: ['body', ...field.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) - 1 : s))],
          msg: `Field required: the CSV header has no column for '${field}' (add one, or map a header to it in csv.columns)`,
        }));
        throw new ValidationError(issues);
      }
    }
    return parts;
  }

  /** In keepPart's transaction: false when the upload is no longer open (or its folder went); 413 past the organization's bytes. */
  async function keepUnderLock(tx: Executor, orgId: string, id: string, n: number, staged: StagedPart): Promise<boolean> {
    if (!(await moveImport(tx, orgId, id, ['awaiting_upload'], { updated_at: toIso(clock.now()) }))) return false;
    // The other imports' parts, as their rows say, and this one's on disk but for the number replaced.
    const others = (await files.parts(id)).filter((p) => p.n !== n);
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

  async function refuseWhileActive(orgId: string): Promise<void> {
    const active = await activeImportOf(db, orgId);
    if (active) throw oneRunning(active.id, active.status);
  }

  return {
    /** `actor`: who asked (the audit log's `import.created`); the command line when not given. */
    async create(orgId: string, body: ImportCreate, actor: AuditActor = cliActor()): Promise<Import> {
      await refuseWhileActive(orgId);
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
    },

    /** Streams part `n` to disk (replacing one sent before under that number): the three steps below in one. */
    async uploadPart(orgId: string, id: string, n: number, contentType: string | undefined, body: Readable): Promise<{ part: number; bytes: number }> {
      await this.openPart(orgId, id, contentType);
      return this.keepPart(orgId, id, n, await this.stagePart(id, n, body));
    },

    /** Before a part's bytes are read: the import is the organization's, open, and the type one a part may have. */
    async openPart(orgId: string, id: string, contentType: string | undefined): Promise<void> {
      const row = await owned(orgId, id);
      const type = contentType?.split(';')[0]?.trim().toLowerCase();
      if (!type || !(PART_MEDIA_TYPES as readonly string[]).includes(type)) throw new UnsupportedPartTypeError(contentType);
      if (row.status !== 'awaiting_upload') throw new ConflictError(`Import ${id} is ${row.status}: parts are taken only before POST /imports/${id}/complete`);
    },

    /** The part's bytes to a staged file (null: the import's folder went meanwhile, said by keepPart). */
    async stagePart(id: string, n: number, body: Readable): Promise<StagedPart | null> {
      try {
        return await files.stagePart(id, n, body);
      } catch (err) {
        if (err instanceof PartTooLargeError) throw new PartTooLargeApiError();
        // Its folder removed while the part streamed in (cancelled or expired meanwhile): said by keepPart.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        return null;
      }
    },

    /** A staged part becomes part `n`, if the upload is still open and the organization's parts stay within IMPORT_MAX_UPLOAD_BYTES. */
    async keepPart(orgId: string, id: string, n: number, staged: StagedPart | null): Promise<{ part: number; bytes: number }> {
      // Kept under the import's row lock, only while the upload is open: `complete` takes the same lock
      // before it counts the parts, so a part is either counted and run, or refused here and never replaces
      // one that was counted. The upload's last activity moves too (its expiry counts from here).
      let kept = false;
      try {
        kept = staged !== null && (await db.transaction().execute((tx) => keepUnderLock(tx, orgId, id, n, staged)));
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
    },

    /** Nothing runs before this: the parts are checked (numbered 1…N; a CSV's header has every required column) and the import is queued. */
    async complete(orgId: string, id: string): Promise<Import> {
      const row = await owned(orgId, id);
      if (row.status !== 'awaiting_upload') throw new ConflictError(`Import ${id} is ${row.status}: it was completed already`);
      try {
        await db.transaction().execute(async (tx) => {
          // The import's row lock first (a part being kept takes it too): the parts counted below are the
          // ones the runner reads, and a part that finishes streaming after this is refused, not swapped in.
          const now = toIso(clock.now());
          if (!(await moveImport(tx, orgId, id, ['awaiting_upload'], { updated_at: now })))
            throw new ConflictError(`Import ${id} is no longer awaiting its upload`);
          const parts = await checkedParts(row);
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
      return presentImport(await owned(orgId, id), clock.now());
    },

    async get(orgId: string, id: string): Promise<Import> {
      return presentImport(await owned(orgId, id), clock.now());
    },

    async list(orgId: string, q: ImportListQuery) {
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
    },

    /** The refused rows as NDJSON lines `{"row","external_reference_id","detail"}`, in row order (read a page at a time). */
    async errorLines(orgId: string, id: string): Promise<AsyncGenerator<string>> {
      await owned(orgId, id);
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
    },

    /** Stops an import: the chunks already committed stay; a running import stops before its next chunk. */
    async cancel(orgId: string, id: string, actor: AuditActor = cliActor()): Promise<Import> {
      const row = await owned(orgId, id);
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
      if (!moved) return this.cancel(orgId, id, actor);
      // A running import's parts are removed by its runner when it stops.
      if (row.status !== 'running') await files.remove(id);
      return presentImport(await owned(orgId, id), clock.now());
    },
  };
}

export type ImportsService = ReturnType<typeof importsService>;
