import type { Executor } from '../../lib/db/index.js';
import type { Clock } from '../../lib/clock.js';
import type { Foreground } from '../../lib/http/foreground.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import type { ImportLog } from './imports.chunk.js';
import { importFiles } from './imports.files.js';
import type { ImportTuning } from './imports.pacing.js';
import type { ImportResources } from './imports.resources.js';
import { importRunner } from './imports.runner.js';
import { importsService } from './imports.service.js';

export { importResources } from './imports.resources.js';

/** The imports API's service and the job runner (docs/imports.md), over one directory of parts. */
export function importsModule(deps: {
  db: Executor;
  clock: Clock;
  dir: string;
  pipeline: WritePipeline;
  /** The resources an import takes (importResources over the record services). */
  resources: ImportResources;
  log: ImportLog;
  tuning: ImportTuning;
  /** Bytes of parts an organization's unfinished imports may hold (IMPORT_MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
  /** Imports this process runs at once (IMPORT_MAX_RUNNING). */
  maxRunning: number;
  betweenChunks(): Promise<void>;
  /** SQLite's one connection: the requests in flight, which each chunk lets finish first (docs/imports.md). */
  foreground?: Foreground;
}) {
  const { db, clock, resources, log, tuning } = deps;
  const files = importFiles(deps.dir);
  const runner = importRunner({
    db,
    clock,
    files,
    resources,
    pipeline: deps.pipeline,
    log,
    tuning,
    maxRunning: deps.maxRunning,
    betweenChunks: deps.betweenChunks,
    foreground: deps.foreground,
  });
  const service = importsService({ db, clock, files, resources, maxUploadBytes: deps.maxUploadBytes, queued: () => runner.wake() });
  return { service, runner, files };
}

export type Imports = ReturnType<typeof importsModule>;
