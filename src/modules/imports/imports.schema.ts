import { Type, type Static } from '@sinclair/typebox';
import { listQuerySchema, pageSchema } from '../../lib/http/pagination.js';
import { CiEnum, Nullable } from '../../lib/http/schema-helpers.js';

export const IMPORT_RESOURCES = ['locations', 'customers', 'carriers', 'loads'] as const;
export type ImportResource = (typeof IMPORT_RESOURCES)[number];
export const IMPORT_FORMATS = ['ndjson', 'csv'] as const;
export const IMPORT_EMIT = ['summary', 'all'] as const;
export const IMPORT_OPERATIONS = ['upsert', 'create'] as const;
export const IMPORT_STATUSES = ['awaiting_upload', 'queued', 'running', 'completed', 'completed_with_errors', 'failed', 'cancelled'] as const;
/** Statuses an import does not leave. */
export const FINISHED: ReadonlySet<string> = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);

export const ImportCreate = Type.Object({
  resource: CiEnum(IMPORT_RESOURCES, { description: 'What each row is: a location, customer, carrier or load, as the single create takes it.' }),
  format: Type.Optional(
    CiEnum(IMPORT_FORMATS, {
      default: 'ndjson',
      description: 'ndjson: one JSON record per line. csv: a header row, then one record per row (columns are field paths, see csv.columns).',
    }),
  ),
  emit_events: Type.Optional(
    CiEnum(IMPORT_EMIT, {
      default: 'summary',
      description:
        'summary (default): no per-row events or webhooks; one import.completed event with the counts. all: the events the API would emit for each row.',
    }),
  ),
  operation: Type.Optional(
    CiEnum(IMPORT_OPERATIONS, {
      default: 'upsert',
      description:
        'upsert (default): a row creates its record, or updates the one with its external_reference_id (run an import again and nothing is written twice). create: a record that exists already is refused (409 in the error file): what a backfill beside a live sync wants, so history never overwrites what the live sync wrote.',
    }),
  ),
  strict: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'true: a row with a field the record does not have is refused (422 unknown_field in the error file, naming it), as Prefer: handling=strict does for a request. An import created by a strict key is strict too.',
    }),
  ),
  csv: Type.Optional(
    Type.Object({
      delimiter: Type.Optional(Type.String({ minLength: 1, maxLength: 1, default: ',', description: 'One character; default a comma.' })),
      columns: Type.Optional(
        Type.Record(Type.String({ maxLength: 255 }), Type.String({ minLength: 1, maxLength: 255 }), {
          description:
            'CSV header → field path, e.g. {"Load #":"external_reference_id","Origin":"stops.1.location_external_reference_id"}. A header not mapped is a field path itself. Nested fields: `stops.1.early_arrival` (positions count from 1), `sales_rep.email`.',
        }),
      ),
    }),
  ),
});
export type ImportCreate = Static<typeof ImportCreate>;

export const ImportIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'imp_…' }) });
export const ImportPartParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64, description: 'imp_…' }),
  n: Type.Integer({
    minimum: 1,
    maximum: 10_000,
    description: 'The part number, from 1; parts are read in this order as one file. Sending a number again replaces that part.',
  }),
});

const Count = (description: string) => Type.Integer({ description });
export const Import = Type.Object(
  {
    id: Type.String({ description: 'imp_…' }),
    resource: Type.String({ enum: [...IMPORT_RESOURCES] }),
    format: Type.String({ enum: [...IMPORT_FORMATS] }),
    emit_events: Type.String({ enum: [...IMPORT_EMIT] }),
    operation: Type.String({ enum: [...IMPORT_OPERATIONS] }),
    strict: Type.Boolean({ description: 'Rows with unknown fields are refused (created with strict: true, or by a strict key).' }),
    status: Type.String({
      enum: [...IMPORT_STATUSES],
      description:
        'awaiting_upload → (complete) queued → running → completed | completed_with_errors (some rows refused: see /errors) | failed (the upload could not be read: see error) | cancelled.',
    }),
    parts: Count('Parts uploaded.'),
    bytes_total: Count('Bytes uploaded, all parts together.'),
    rows_total: Nullable(Type.Integer({ description: 'Rows in the upload; null until counted (when the import starts).' })),
    rows_processed: Count('Rows done, succeeded or refused (committed).'),
    rows_succeeded: Count('Rows written.'),
    rows_failed: Count('Rows refused (one line each in /errors).'),
    percent: Nullable(Type.Number({ description: 'rows_processed / rows_total × 100, one decimal; null until rows_total is known.' })),
    rows_per_second: Nullable(Type.Number({ description: 'Rows processed per second since the import started (whole run; one decimal).' })),
    eta_seconds: Nullable(Type.Integer({ description: 'Seconds left at the current rate; null when unknown, 0 once finished.' })),
    error: Nullable(Type.String({ description: 'Why the import failed (failed only).' })),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    started_at: Nullable(Type.String({ format: 'date-time' })),
    finished_at: Nullable(Type.String({ format: 'date-time' })),
  },
  { $id: 'Import' },
);
export type Import = Static<typeof Import>;

export const ImportPage = pageSchema(Type.Ref(Import), 'ImportPage');

export const ImportListQuery = listQuerySchema(['created_at', 'updated_at'], {
  status: Type.Optional(CiEnum(IMPORT_STATUSES, { description: 'Only imports in this status.' })),
});
export type ImportListQuery = Static<typeof ImportListQuery>;

export const IMPORT_SCHEMAS = [Import, ImportPage];
