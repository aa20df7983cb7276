import { keyActor } from '../audit/audit.js';
import { PassThrough, Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../../lib/http/auth.js';
import { ERRORS, OtherClientError } from '../../lib/http/errors.js';
import { MAX_PARTS, type StagedPart } from './imports.files.js';
import { Import, ImportCreate, ImportIdParams, ImportListQuery, ImportPage, ImportPartParams } from './imports.schema.js';
import { PART_MEDIA_TYPES, type ImportsService } from './imports.service.js';

const tags = ['Imports'];
// write:imports on every imports route, reads included (docs/imports.md).
const config = { scope: 'write:imports' } as const;
const notFound = { 404: { description: 'No import with this id in your organization: {"detail":"Import with id \'imp_…\' not found"}.', $ref: 'Detail#' } };
const conflict = (what: string) => ({ 409: { description: `${what} Also: ${ERRORS.idempotency_in_progress.description}`, $ref: 'Detail#' } });
const one = (description: string) => Type.Ref(Import, { description });

/** The imports API (docs/imports.md, "The shape"). The rows run in the import runner (imports.runner.ts), in `serve` and `bin/lanebridge worker`. */
export function importRoutes(app: FastifyInstance, imports: ImportsService, partTimeoutMs = 600_000) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  createRoute(app, imports);
  r.get('/v2/tms-api/imports', {
    config,
    schema: {
      tags,
      operationId: 'listImports',
      summary: 'List imports (newest last by default)',
      querystring: ImportListQuery,
      response: { 200: Type.Ref(ImportPage, { description: 'A page of imports.' }) },
    },
    handler: (req) => imports.list(principalOf(req).orgId, req.query),
  });
  r.get('/v2/tms-api/imports/:id', {
    config,
    schema: {
      tags,
      operationId: 'getImport',
      summary: 'An import with its progress (percent, rows per second, ETA)',
      params: ImportIdParams,
      response: { 200: one('The import.'), ...notFound },
    },
    handler: (req) => imports.get(principalOf(req).orgId, req.params.id),
  });

  // The parts: a raw body streamed to disk as it arrives, never parsed nor held (its own context's parsers).
  app.register((scope, _opts, done) => {
    partUploads(scope, imports, partTimeoutMs);
    done();
  });

  r.post('/v2/tms-api/imports/:id/complete', {
    config,
    schema: {
      tags,
      operationId: 'completeImport',
      summary: 'Upload done: queue the import',
      description:
        'Checks the upload (parts 1…N without a gap; a CSV header naming every required field, directly or through csv.columns: else 422, one `missing` entry per field, and nothing written) and queues the import; it runs on any instance. 409 when another import of the organization is queued or running.',
      params: ImportIdParams,
      response: {
        200: one('The import, queued.'),
        ...notFound,
        ...conflict('The import was completed already, or another import of the organization is queued or running.'),
      },
    },
    handler: (req) => imports.complete(principalOf(req).orgId, req.params.id),
  });
  errorsRoute(app, imports);
  r.post('/v2/tms-api/imports/:id/cancel', {
    config,
    schema: {
      tags,
      operationId: 'cancelImport',
      summary: 'Cancel an import',
      description:
        'An import awaiting its upload or queued never runs; a running one stops before its next chunk (the chunks already committed stay). 409 once it finished.',
      params: ImportIdParams,
      response: { 200: one('The import, cancelled.'), ...notFound, ...conflict('The import has already finished.') },
    },
    handler: (req) => imports.cancel(principalOf(req).orgId, req.params.id, keyActor(principalOf(req), req.ip)),
  });
}

/** POST /imports: an import awaiting its upload. */
function createRoute(app: FastifyInstance, imports: ImportsService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/v2/tms-api/imports', {
    config,
    schema: {
      tags,
      operationId: 'createImport',
      summary: 'Start an import (then upload its parts and complete it)',
      description:
        'Creates an import awaiting its upload. Then PUT the file as parts (`/imports/{id}/parts/1`, `/2` … each at most 64 MiB, read in order as one file), then POST `/imports/{id}/complete`: nothing runs before it. Rows are the records of the single create, checked by the same rules and written by the same write path as the batch endpoints. 409 while another import of the organization is queued or running (one at a time).',
      body: ImportCreate,
      response: {
        201: one('The import, awaiting its upload.'),
        ...conflict(
          'Another import of this organization is queued or running: {"detail":"Import imp_… is running for this organization; one import runs at a time: …"}.',
        ),
      },
    },
    handler: async (req, reply) => {
      const p = principalOf(req);
      // A strict key makes its imports strict, as it makes its requests (docs/imports.md, "Rows").
      const body = p.strict ? Object.assign({}, req.body, { strict: true }) : req.body;
      return reply.code(201).send(await imports.create(p.orgId, body, keyActor(p, req.ip)));
    },
  });
}

/** GET /imports/{id}/errors: the refused rows as NDJSON, streamed a page at a time. */
function errorsRoute(app: FastifyInstance, imports: ImportsService) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/v2/tms-api/imports/:id/errors', {
    config,
    schema: {
      tags,
      operationId: 'getImportErrors',
      summary: 'The refused rows (NDJSON)',
      description:
        'One line per refused row, in row order: `{"row","external_reference_id","detail"}`. `row` counts from 1 over the whole upload (NDJSON lines; CSV records after the header); `detail` is what the single create would have answered as detail (a message, or one {type, loc, msg} per problem). Readable while the import runs (the chunks committed so far).',
      params: ImportIdParams,
      response: {
        200: { description: 'application/x-ndjson: one refused row per line.', content: { 'application/x-ndjson': { schema: { type: 'string' } } } },
        ...notFound,
      },
    },
    handler: async (req, reply) => {
      const lines = await imports.errorLines(principalOf(req).orgId, req.params.id);
      return reply.type('application/x-ndjson; charset=utf-8').send(Readable.from(lines));
    },
  });
}

/** The bytes staged by a part upload's parser, until its handler keeps them (or the answer goes without). */
const stagedParts = new WeakMap<FastifyRequest, StagedPart>();

/** A part's body did not arrive within its time (docs/imports.md, "Parts"): 408, and the connection closes. */
const partTimedOut = (ms: number) =>
  new OtherClientError(
    408,
    `The part did not arrive within ${ms >= 60_000 ? `${ms / 60_000} minutes` : `${ms / 1000} seconds`}: send it again, or in smaller parts`,
  );

/**
 * PUT /imports/{id}/parts/{n}: the import is checked before a byte is read (404, 415, 409), the body
 * is streamed to a staged file by the content parser with its SHA-256 (so an Idempotency-Key compares
 * the bytes sent: the parsed body is `{bytes, sha256}`), within `timeoutMs`, and the handler keeps it.
 */
function partUploads(scope: FastifyInstance, imports: ImportsService, timeoutMs: number) {
  const target = (req: FastifyRequest) => req.params as { id: string; n: string };
  scope.addHook('preParsing', async (req) => {
    await imports.openPart(principalOf(req).orgId, target(req).id, req.headers['content-type']);
  });
  scope.addContentTypeParser('*', (req, payload, done) => {
    const n = Number(target(req).n);
    // A number the route refuses (422 by its schema): nothing is read.
    if (!Number.isInteger(n) || n < 1 || n > MAX_PARTS) return done(null, undefined);
    // Through a stream of its own: at the time limit it alone is ended, the socket stays up for the 408.
    const body = new PassThrough();
    payload.on('error', (err) => body.destroy(err));
    payload.pipe(body);
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      payload.unpipe(body);
      body.destroy(new Error('timed out'));
    }, timeoutMs);
    imports.stagePart(target(req).id, n, body).then(
      (staged) => {
        clearTimeout(timer);
        if (staged) stagedParts.set(req, staged);
        // null: its folder went meanwhile (keepPart says so); undefined stays for a body never parsed (empty).
        done(null, staged ? { bytes: staged.bytes, sha256: staged.sha256 } : null);
      },
      (err: Error) => {
        clearTimeout(timer);
        done(late ? partTimedOut(timeoutMs) : err, undefined);
      },
    );
  });
  scope.addHook('onError', async (req, reply, err) => {
    if (err instanceof OtherClientError && err.status === 408) reply.header('connection', 'close');
  });
  // Whatever the answer (a replay, an error), a staged part not kept goes (after a keep it is gone already).
  scope.addHook('onResponse', async (req) => {
    await stagedParts.get(req)?.discard();
  });
  const s = scope.withTypeProvider<TypeBoxTypeProvider>();
  s.put('/v2/tms-api/imports/:id/parts/:n', {
    // Its own time limit (the timer above), not REQUEST_TIMEOUT_SECONDS (docs/api.md, "Slow requests").
    config: { scope: config.scope, bodyTimeoutMs: timeoutMs },
    schema: {
      tags,
      operationId: 'uploadImportPart',
      summary: 'Upload part n of the file (raw, at most 64 MiB)',
      description: `The body is the part's raw bytes, sent as ${PART_MEDIA_TYPES.join(', ')}; streamed to disk, within 10 minutes (else 408). Parts are read in number order as one file (a record may run across two). Sending a number again replaces that part. 413 past 64 MiB, or past the organization's IMPORT_MAX_UPLOAD_BYTES of parts in all; 415 for another Content-Type; 409 once the import was completed. An Idempotency-Key compares the bytes: the same key with other bytes is 422 idempotency_key_reused.`,
      params: ImportPartParams,
      response: {
        200: Type.Object(
          { id: Type.String(), part: Type.Integer(), bytes: Type.Integer({ description: 'Bytes stored for this part.' }) },
          { description: 'The part was stored.' },
        ),
        ...notFound,
        ...conflict('The import was completed or cancelled: parts are taken only before complete.'),
        408: {
          description: 'The part did not arrive within 10 minutes: {"detail":"The part did not arrive within 10 minutes: …"}; the connection is closed.',
          $ref: 'Detail#',
        },
      },
    },
    handler: async (req) => {
      const { id, n } = req.params;
      // An empty body is never parsed: an empty part, as one streamed would be.
      const staged = stagedParts.get(req) ?? (req.body === undefined ? await imports.stagePart(id, n, Readable.from([])) : null);
      const stored = await imports.keepPart(principalOf(req).orgId, id, n, staged);
      return { id, ...stored };
    },
  });
}
