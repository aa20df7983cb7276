import type { Executor } from '../../lib/db/index.js';
import { type Clock, toIso } from '../../lib/clock.js';
import type { ImportLog } from './imports.chunk.js';
import type { ImportFiles } from './imports.files.js';
import { deleteImport, expiredImports, expireUpload, staleUploads } from './imports.repo.js';

// A finished import, its errors and its parts are deleted this long after it ended.
export const IMPORT_RETENTION_MS = 30 * 86_400_000;

/** What the runner's housekeeping uses. */
export interface HousekeepingDeps {
  db: Executor;
  clock: Clock;
  files: ImportFiles;
  log: ImportLog;
}

/**
 * Uploads never completed (a client that went away) would keep their parts on disk for ever: one still
 * awaiting its upload `uploadExpiryMs` after its last part (or its creation) is cancelled, with the
 * reason in `error`, and its parts removed. Conditional on the status, so one instance does it.
 */
export async function expireUploads(deps: HousekeepingDeps, uploadExpiryMs: number): Promise<void> {
  const { db, clock } = deps;
  const before = toIso(new Date(clock.now().getTime() - uploadExpiryMs));
  for (const s of await staleUploads(db, before, 100)) {
    const now = toIso(clock.now());
    const hours = Math.round(uploadExpiryMs / 360_000) / 10;
    const expired = await expireUpload(db, s.org_id, s.id, before, {
      status: 'cancelled',
      error: `Expired: no POST /v2/tms-api/imports/${s.id}/complete within ${hours} h of its last part; its parts were removed: send the file again in a new import`,
      finished_at: now,
      updated_at: now,
    });
    if (expired) {
      await deps.files.remove(s.id);
      deps.log.info({ import: s.id, org: s.org_id }, 'import upload expired');
    }
  }
}

/** Abandoned uploads expire; finished imports past their retention go, with their errors and parts (a bounded number a pass). */
export async function housekeeping(deps: HousekeepingDeps, uploadExpiryMs: number): Promise<void> {
  await expireUploads(deps, uploadExpiryMs);
  const before = toIso(new Date(deps.clock.now().getTime() - IMPORT_RETENTION_MS));
  for (const { id } of await expiredImports(deps.db, before, 100)) {
    await deleteImport(deps.db, id);
    await deps.files.remove(id);
  }
}
