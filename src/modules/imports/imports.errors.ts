import { ConflictError, DetailError } from '../../lib/http/errors.js';
import { MAX_PART_BYTES } from './imports.files.js';

/** The media types a part may be sent as (docs/imports.md, "Parts"). */
export const PART_MEDIA_TYPES = ['application/x-ndjson', 'text/csv', 'application/octet-stream'] as const;

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

export const tooManyAwaiting = () =>
  new ConflictError(
    `This organization has ${MAX_AWAITING_UPLOAD} imports awaiting their upload, the most it may have at once: complete or cancel one (POST /v2/tms-api/imports/{id}/complete or /cancel) first`,
  );

export const oneRunning = (id: string, status: string) =>
  new ConflictError(
    `Import ${id} is ${status} for this organization; one import runs at a time: wait for it to finish or cancel it (POST /v2/tms-api/imports/${id}/cancel)`,
  );
