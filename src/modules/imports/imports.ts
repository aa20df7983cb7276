import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import { CarrierCreate } from '../carriers/carriers.schema.js';
import { CustomerCreate } from '../customers/customers.schema.js';
import { LoadCreate } from '../loads/loads.schema.js';
import { LocationCreate } from '../locations/locations.schema.js';
import type { Foreground } from '../../lib/http/foreground.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import { importFiles } from './imports.files.js';
import { importRunner, type ImportLog, type ImportWriter } from './imports.runner.js';
import type { ImportResource } from './imports.schema.js';
import { importsService } from './imports.service.js';

/** The create schema of each resource an import takes (CSV cells are typed and required columns checked by it). */
export const IMPORT_CREATE_SCHEMAS = { locations: LocationCreate, customers: CustomerCreate, carriers: CarrierCreate, loads: LoadCreate };

/** The imports API's service and the job runner (docs/imports.md), over one directory of parts. */
export function importsModule(deps: {
  db: Executor;
  clock: Clock;
  dir: string;
  pipeline: WritePipeline;
  writers: Record<'summary' | 'all', Record<ImportResource, ImportWriter>>;
  log: ImportLog;
  leaseMs?: number;
  chunkRows?: number;
  chunkMs?: number;
  liveChunkMs?: number;
  pollMs?: number;
  uploadExpiryMs?: number;
  maxUploadBytes?: number;
  maxRunning?: number;
  betweenChunks?: () => Promise<void>;
  foreground?: Foreground;
}) {
  const files = importFiles(deps.dir);
  const runner = importRunner({
    db: deps.db,
    clock: deps.clock,
    files,
    writers: deps.writers,
    createSchemas: IMPORT_CREATE_SCHEMAS,
    pipeline: deps.pipeline,
    log: deps.log,
    ...(deps.leaseMs ? { leaseMs: deps.leaseMs } : {}),
    ...(deps.chunkRows ? { chunkRows: deps.chunkRows } : {}),
    ...(deps.chunkMs !== undefined ? { chunkMs: deps.chunkMs } : {}),
    ...(deps.liveChunkMs !== undefined ? { liveChunkMs: deps.liveChunkMs } : {}),
    ...(deps.pollMs ? { pollMs: deps.pollMs } : {}),
    ...(deps.uploadExpiryMs ? { uploadExpiryMs: deps.uploadExpiryMs } : {}),
    ...(deps.maxRunning ? { maxRunning: deps.maxRunning } : {}),
    ...(deps.betweenChunks ? { betweenChunks: deps.betweenChunks } : {}),
    ...(deps.foreground ? { foreground: deps.foreground } : {}),
  });
  const service = importsService({
    db: deps.db,
    clock: deps.clock,
    files,
    createSchemas: IMPORT_CREATE_SCHEMAS,
    maxUploadBytes: deps.maxUploadBytes ?? 2 ** 31,
    queued: () => runner.wake(),
  });
  return { service, runner, files };
}

export type Imports = ReturnType<typeof importsModule>;
