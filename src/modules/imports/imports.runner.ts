import { randomUUID } from 'node:crypto';
import type { Executor } from '../../lib/db/index.js';
import { isDatabaseUnavailable } from '../../lib/db/errors.js';
import type { ImportsTable } from '../../lib/db/types.js';
import { NO_FOREGROUND, type Foreground } from '../../lib/http/foreground.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { workerLoop } from '../../lib/worker-loop.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import { plannerStats } from './imports.analyze.js';
import { ClaimLost, type ChunkDeps, type ImportLog } from './imports.chunk.js';
import type { ImportFiles } from './imports.files.js';
import { EXPIRY_SWEEP_MS, IMPORT_POLL_MS, pacingTargets, pauseAfterUnavailable, type ImportTuning, type Paused, type PacingTargets } from './imports.pacing.js';
import { housekeeping } from './imports.housekeeping.js';
import { optionsOf, presentImport } from './imports.present.js';
import { claimableImports, claimImport, extendImportLease, finishImport, importRow, releaseImport } from './imports.repo.js';
import type { ImportEmit, ImportResources } from './imports.resources.js';
import type { ImportResource } from './imports.schema.js';
import { countUpload, UnreadableUpload, writeRows, type Run } from './imports.run.js';

export { MAX_ERROR_ROWS, type ImportLog } from './imports.chunk.js';
export { IMPORT_RETENTION_MS } from './imports.housekeeping.js';
export { nextChunkSize } from './imports.pacing.js';

export interface ImportRunnerDeps {
  db: Executor;
  clock: Clock;
  files: ImportFiles;
  /** The resources an import takes, each with its create schema and writers (imports.resources.ts). */
  resources: ImportResources;
  /** The API's pipeline: the import.completed event is written through it with the import's end. */
  pipeline: WritePipeline;
  log: ImportLog;
  /** Imports this process runs at once, each of another organization (IMPORT_MAX_RUNNING). */
  maxRunning: number;
  /** The chunks' targets, the lease and an upload's expiry (config.ts's internal fields). */
  tuning: ImportTuning;
  /** Awaited between chunks: the store's pause for a writer that never pauses (DataStore.betweenWrites). */
  betweenChunks(): Promise<void>;
  /**
   * The requests this process is answering (`serve` on SQLite): before each chunk the runner waits until
   * none is in flight (at most `chunkMs`), so a request that arrived during a chunk runs whole before the
   * next one begins instead of queuing its statements behind it on the one connection. Not given on
   * PostgreSQL, where a request's statements go on a pooled connection of their own beside the chunk's.
   */
  foreground?: Foreground;
}

/** A claimed import: the row as claimed, and the claim it runs under. */
interface Claimed {
  imp: ImportsTable;
  claim: string;
}

/** The runner's state, handed with its deps to each of its steps below and in imports.run.ts. */
interface RunnerState {
  deps: ImportRunnerDeps;
  targets: PacingTargets;
  foreground: Foreground;
  /** What a chunk's transaction uses (imports.chunk.ts). */
  chunk: ChunkDeps;
  // Imports this process leaves alone until a time: those whose parts it cannot see (another IMPORTS_DIR),
  // for a minute, to an instance that can; those the database could not take a chunk of, for a moment.
  resting: Map<string, number>;
  /** Imports paused because the database could not take a chunk (pauseAfterUnavailable). */
  paused: Map<string, Paused>;
  /** When housekeeping last ran (Date.now()). */
  lastSweep: number;
  /** Set by stop: a run gives its import back before its next chunk. */
  stopping: boolean;
}

const nowIso = (r: RunnerState): string => toIso(r.deps.clock.now());
const leaseEnd = (r: RunnerState): string => toIso(new Date(r.deps.clock.now().getTime() + r.deps.tuning.leaseMs));

function runnerState(deps: ImportRunnerDeps): RunnerState {
  const r: RunnerState = {
    deps,
    targets: pacingTargets(deps.tuning, deps.foreground !== undefined),
    foreground: deps.foreground ?? NO_FOREGROUND,
    chunk: { db: deps.db, log: deps.log, nowIso: () => nowIso(r), leaseEnd: () => leaseEnd(r) },
    resting: new Map(),
    paused: new Map(),
    lastSweep: -Infinity,
    stopping: false,
  };
  return r;
}

/** Claims the next import waiting (not resting here), or `only` that one; null when none could be claimed. */
async function claimNext(r: RunnerState, only?: string): Promise<Claimed | null> {
  const candidates = only ? [{ id: only }] : await claimableImports(r.deps.db, nowIso(r), 20);
  for (const { id } of candidates) {
    if ((r.resting.get(id) ?? 0) > Date.now()) continue;
    r.resting.delete(id);
    const claim = randomUUID();
    const imp = await claimImport(r.deps.db, id, claim, nowIso(r), leaseEnd(r));
    if (imp) return { imp, claim };
  }
  return null;
}

/** Keeps the claim's lease while the import runs (a third of it at a time); `lost` once another holds it. */
function holdLease(r: RunnerState, { imp, claim }: Claimed): Run['lease'] {
  let lost = false;
  const heartbeat = setInterval(
    () => {
      extendImportLease(r.deps.db, imp.id, claim, leaseEnd(r))
        .then((ok) => {
          if (!ok) lost = true;
        })
        .catch(() => undefined);
    },
    Math.max(200, Math.floor(r.deps.tuning.leaseMs / 3)),
  );
  heartbeat.unref();
  return { lost: () => lost, end: () => clearInterval(heartbeat) };
}

/** Runs a claimed import to its end, or until it is lost, cancelled or this process stops. */
async function runImport(r: RunnerState, claimed: Claimed): Promise<void> {
  const { imp, claim } = claimed;
  if ((await r.deps.files.parts(imp.id)).length < imp.parts) {
    r.deps.log.warn({ import: imp.id }, 'the parts of this import are not in this process’s IMPORTS_DIR; left to an instance that has them');
    r.resting.set(imp.id, Date.now() + 60_000);
    await releaseImport(r.deps.db, imp.id, claim);
    return;
  }
  const lease = holdLease(r, claimed);
  const options = optionsOf(imp);
  try {
    if (imp.rows_total === null) await countUpload(r, claimed, options);
    const stats = await plannerStats(r.deps, imp, () => r.stopping);
    const resource = r.deps.resources[imp.resource as ImportResource];
    const run: Run = { imp, claim, resource, writer: resource.writers[imp.emit_events as ImportEmit], lease, stats };
    if (!(await writeRows(r, run, options))) return;
    await stats.end();
    await finish(r, claimed);
    r.paused.delete(imp.id);
  } catch (err) {
    await settle(r, claimed, err);
  } finally {
    lease.end();
  }
}

/** The import's end: its status and the import.completed event, with the counts, through the API's pipeline; its parts go. */
async function finish(r: RunnerState, { imp, claim }: Claimed): Promise<void> {
  await r.deps.pipeline.write(imp.org_id, async (tx, changes) => {
    const row = await importRow(tx, imp.id);
    if (!row) throw new ClaimLost();
    const status = Number(row.rows_failed) > 0 ? 'completed_with_errors' : 'completed';
    const now = nowIso(r);
    if (!(await finishImport(tx, imp.id, claim, { status, finished_at: now, updated_at: now }))) throw new ClaimLost();
    // One import.completed event with the counts (whatever emit_events said), with the import's end.
    const done = presentImport(Object.assign({}, row, { status, finished_at: now, updated_at: now, claim: null, leased_until: null }), r.deps.clock.now());
    changes.announce({ kind: imp.resource as ImportResource, type: 'import.completed', record_id: imp.id, data: done });
  });
  await r.deps.files.remove(imp.id);
}

/** The import failed with `message`; its parts go. */
async function fail(r: RunnerState, { imp, claim }: Claimed, message: string): Promise<void> {
  const now = nowIso(r);
  await r.deps.db.transaction().execute((tx) => finishImport(tx, imp.id, claim, { status: 'failed', error: message, finished_at: now, updated_at: now }));
  await r.deps.files.remove(imp.id);
}

/** A run that threw: lost or cancelled (nothing to do), an unreadable upload (failed), a pause, or a failure. */
async function settle(r: RunnerState, claimed: Claimed, err: unknown): Promise<void> {
  const { db, log, files } = r.deps;
  const { imp, claim } = claimed;
  if (err instanceof ClaimLost) {
    // Cancelled: its parts go now. Taken over: the new holder runs it.
    const now = await importRow(db, imp.id);
    if (now?.status === 'cancelled') await files.remove(imp.id);
    return;
  }
  if (err instanceof UnreadableUpload) return fail(r, claimed, err.message);
  // The database could not take a chunk now (SQLite busy past its wait, PostgreSQL restarting or
  // unreachable, a statement past its timeout): the chunk rolled back whole, so the import is given
  // back and resumed after its checkpoint (here or by another instance), not failed: a million rows
  // are not thrown away for a moment's lock. A cause that does not pass (a full disk, a chunk whose
  // statement always times out) fails it after as many pauses in a row without a row gained as
  // pauseAfterUnavailable allows.
  const at = Number((await importRow(db, imp.id).catch(() => null))?.checkpoint_row ?? -1);
  const pause = isDatabaseUnavailable(err) ? pauseAfterUnavailable(r.paused.get(imp.id), at) : null;
  if (pause) {
    r.paused.set(imp.id, pause.paused);
    log.warn({ err, import: imp.id, pauses: pause.paused.count }, 'import paused: the database could not take a chunk; resumed after its checkpoint');
    r.resting.set(imp.id, Date.now() + pause.restMs);
    await releaseImport(db, imp.id, claim).catch(() => undefined);
    return;
  }
  r.paused.delete(imp.id);
  log.warn({ err, import: imp.id }, 'import failed');
  await fail(r, claimed, (err as Error).message).catch(() => undefined);
}

/** Before a round: housekeeping, at most every EXPIRY_SWEEP_MS. */
async function sweepIfDue(r: RunnerState): Promise<void> {
  if (Date.now() - r.lastSweep < EXPIRY_SWEEP_MS) return;
  r.lastSweep = Date.now();
  await housekeeping(r.deps, r.deps.tuning.uploadExpiryMs);
}

/**
 * The import job runner (docs/imports.md, "How it runs"), the worker loop (src/lib/worker-loop.ts) of
 * the webhook worker too: an import queued (or running with its lease run out: a killed process) is
 * claimed with one conditional update (claimNext), its rows are counted, then read after the checkpoint
 * and written a chunk at a time through the resource's batch (runImport → writeRows → runChunk in
 * imports.run.ts → commitChunk in imports.chunk.ts, the write path of /batch/<resource>), each chunk
 * with its refused rows and its checkpoint in ONE transaction, paced by imports.pacing.ts. A process
 * killed mid-chunk leaves that chunk uncommitted and its claim to expire; any instance resumes after the
 * checkpoint, so no row is applied twice and the counts end as in an uninterrupted run.
 *
 * Up to `maxRunning` slots, each claiming and running imports one at a time until none is waiting: an
 * import of one organization never holds another's (one import per organization is the database's
 * rule: its unique index). Abandoned uploads and finished imports past their retention are looked at
 * before a round, at most every EXPIRY_SWEEP_MS.
 */
export function importRunner(deps: ImportRunnerDeps) {
  const r = runnerState(deps);
  const loop = workerLoop<Claimed>({
    fetch: () => claimNext(r),
    run: (claimed) => runImport(r, claimed),
    beforeRound: () => sweepIfDue(r),
    slots: deps.maxRunning,
    pollMs: IMPORT_POLL_MS,
    onError: (err) => deps.log.warn({ err }, 'import runner pass failed; tried again at the next poll'),
  });

  return {
    /** An import was queued here: taken at once when the runner is started. */
    wake: (): void => loop.notify(),
    /** Polls every IMPORT_POLL_MS for imports queued elsewhere or left by a process that died. */
    start: (): void => loop.start(),
    /** Runs every import waiting now (or only import `id`: the CLI's own) to its end (tests, the CLI). */
    drain(id?: string): Promise<void> {
      if (id !== undefined) return loop.drain({ fetch: () => claimNext(r, id), parallel: 1 });
      return loop.drain({ before: () => housekeeping(deps, deps.tuning.uploadExpiryMs) });
    },
    /** Stops after the chunk in flight; the import is given back for any instance to resume. */
    stop: (): Promise<void> => {
      r.stopping = true;
      return loop.stop();
    },
  };
}
