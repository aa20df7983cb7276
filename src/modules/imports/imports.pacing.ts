/**
 * How an import is paced (docs/imports.md, "How it runs"): the size of its chunks (pacing) and the
 * pauses around them (give-way, the log's catch-up, ANALYZE, a database that could not take a chunk).
 * Pure functions and small objects of plain numbers, with no clock, database or request of their own:
 * the runner hands them what it measured.
 */

/** The targets an import's chunks are sized to (IMPORT_CHUNK_ROWS, IMPORT_CHUNK_MS, the live time). */
export interface PacingTargets {
  /** Rows per chunk at most. */
  chunkRows: number;
  /** How long a chunk's transaction should take (ms); 0: every chunk has `chunkRows` rows. */
  chunkMs: number;
  /** How long it should take while the API's writes arrive (ms); 0: sized to `chunkMs` whatever arrives. */
  liveChunkMs: number;
}

/**
 * The numbers an import runs with that no operator sets (config.ts's internal fields, which tests and
 * benchmarks change): the chunks' targets, the claim's lease and an upload's expiry.
 */
export interface ImportTuning {
  /** Rows per chunk at most (one transaction, one checkpoint, one analytics run). */
  chunkRows: number;
  /**
   * How long a chunk's transaction should take (ms): each chunk is sized from the time per row of the
   * last ones, up to `chunkRows`. On SQLite's one connection the API's writes wait for the chunk in
   * flight; this bounds that wait. 0: every chunk has `chunkRows` rows.
   */
  chunkMs: number;
  /**
   * With a foreground (SQLite): how long a chunk should take while the API's writes arrive (one arrived
   * within LIVE_WINDOW_MS), instead of `chunkMs`; sized from the last chunk's time per row without the
   * halfway step, from MIN_LIVE_CHUNK_ROWS rows. A write beside the import then waits about this long for
   * the chunk in flight. 0: chunks are sized to `chunkMs` whatever arrives.
   */
  liveChunkMs: number;
  /** How long a claimed import stays with its process without news before another instance may resume it. */
  leaseMs: number;
  /** An import awaiting its upload this long after its last part is cancelled and its parts removed. */
  uploadExpiryMs: number;
}

/** How often a started runner looks for imports queued elsewhere or left by a process that died. */
export const IMPORT_POLL_MS = 1000;
/** A chunk that fails as a whole (not a row's refusal) is tried this many times before the import fails. */
export const MAX_CHUNK_ATTEMPTS = 5;
/** How often (at most) a runner looks for abandoned uploads and imports past their retention. */
export const EXPIRY_SWEEP_MS = 60_000;

/** The targets an import's chunks are sized to: live chunks only with a foreground to watch (SQLite) and timed chunks. */
export const pacingTargets = (t: ImportTuning, withForeground: boolean): PacingTargets => ({
  chunkRows: t.chunkRows,
  chunkMs: t.chunkMs,
  liveChunkMs: withForeground && t.chunkMs > 0 ? t.liveChunkMs : 0,
});

/** A chunk's rows and the time its transaction took (ms). */
export interface ChunkTime {
  rows: number;
  ms: number;
}

const FIRST_CHUNK_ROWS = 128;
// Never fewer: a chunk has costs of its own (its reads of the references, the lane stats of the lanes it
// moved, recounted whole, which grow with each lane's history), and chunks sized below them by the time
// they took shrank further on PostgreSQL as the history grew (1,000 rows/s at 185,000 rows).
const MIN_CHUNK_ROWS = 128;
// Live chunks (liveChunkMs): as few rows as that, and taken while a write arrived within this window.
const MIN_LIVE_CHUNK_ROWS = 8;
export const LIVE_WINDOW_MS = 1_000;

/**
 * The rows of an import's next chunk: `chunkRows` when chunks are not timed (`chunkMs` 0); else 128 for
 * a run's first chunk (its time per row is not known yet), then the power of two nearest halfway from
 * the last chunk's size to the one that would have taken `chunkMs` at its time per row, between 128 and
 * `chunkRows`. Halfway: steady as the time per row drifts (it grows with the tables) and through one
 * slow chunk (a collection, a checkpoint). Powers of two: few sizes, so few statement texts (a size's
 * lists of references and multi-row inserts are statements of their own, each compiled and kept).
 */
export function nextChunkSize(last: ChunkTime | null, opts: { chunkMs: number; chunkRows: number; live?: boolean }): number {
  if (opts.chunkMs <= 0) return opts.chunkRows;
  if (opts.live) {
    // While writes arrive: straight to the power of two at or below the size that takes chunkMs (a
    // write waits for the chunk in flight, so no step halfway from a larger one), from 8 rows.
    if (!last) return Math.min(opts.chunkRows, MIN_LIVE_CHUNK_ROWS);
    const fitting = (opts.chunkMs * last.rows) / Math.max(0.1, last.ms);
    return Math.min(opts.chunkRows, Math.max(MIN_LIVE_CHUNK_ROWS, 2 ** Math.floor(Math.log2(Math.max(1, fitting)))));
  }
  if (!last) return Math.min(opts.chunkRows, FIRST_CHUNK_ROWS);
  const fitting = (opts.chunkMs * last.rows) / Math.max(1, last.ms);
  return Math.min(opts.chunkRows, Math.max(MIN_CHUNK_ROWS, 2 ** Math.round(Math.log2((last.rows + fitting) / 2))));
}

/** The time a chunk is sized to: the live time while writes arrive, else `chunkMs`. */
export const chunkTarget = (t: PacingTargets, live: boolean): { chunkMs: number; chunkRows: number; live?: boolean } =>
  live ? { chunkMs: t.liveChunkMs, chunkRows: t.chunkRows, live: true } : { chunkMs: t.chunkMs, chunkRows: t.chunkRows };

/** Whether the API's writes are arriving (the last one `msSinceWrite` ago, within LIVE_WINDOW_MS), when live chunks are on. */
export const writesArriving = (t: PacingTargets, msSinceWrite: number): boolean => t.liveChunkMs > 0 && msSinceWrite < LIVE_WINDOW_MS;

/**
 * One run's chunk sizes: `full(rows)` says whether the chunk filling now is to be written, `took(rows,
 * ms)` sizes the next from the one written. `arriving()` says whether the API's writes arrive now
 * (writesArriving): a chunk begun while none did is cut to the live size once one does (looked at
 * every 8 rows), so a write beside the import waits for a short chunk, not a full one.
 */
export function chunkPacer(t: PacingTargets, arriving: () => boolean) {
  let live = arriving();
  let last: ChunkTime | null = null;
  let size = nextChunkSize(last, chunkTarget(t, live));
  return {
    get live() {
      return live;
    },
    get size() {
      return size;
    },
    full(rows: number): boolean {
      if (rows >= size) return true;
      if (live || (rows & 7) !== 0 || !arriving()) return false;
      live = true;
      size = nextChunkSize(last, chunkTarget(t, true));
      return rows >= size;
    },
    took(rows: number, ms: number): void {
      last = { rows, ms };
      live = arriving();
      size = nextChunkSize(last, chunkTarget(t, live));
    },
  };
}

/**
 * The longest a chunk waits for the requests in flight before it begins (the Foreground's quiet, on
 * SQLite): its own target, the live time or `chunkMs` (under a steady stream of requests the import
 * still gets about half of the writer's time).
 */
export const giveWayMs = (t: PacingTargets, live: boolean): number => (live ? t.liveChunkMs : t.chunkMs);

/**
 * Whether the store's pause between writes (DataStore.betweenWrites: SQLite's log copied and rewound)
 * comes after each chunk: when chunks are timed; not for a backfill with nothing else writing
 * (IMPORT_CHUNK_MS=0), where only its speed counts.
 */
export const catchUpBetweenChunks = (t: PacingTargets): boolean => t.chunkMs > 0;

// PostgreSQL: the tables an import grows are analyzed once it has taken as many rows (refused ones too)
// as they had at their last ANALYZE, and at least this many.
const ANALYZE_AFTER_ROWS = 10_000;
// At the end, once it has taken a tenth of what they had, and at least this many.
const ANALYZE_AT_END_ROWS = 1_000;

/**
 * Whether the tables an import grows are to be analyzed now, `rowsSince` rows after their last ANALYZE,
 * which found `planned` rows: during the run once as many rows as that (at least ANALYZE_AFTER_ROWS), so
 * ⌊log2(N ÷ 10,000)⌋ + 1 of them over N rows into an empty table; at its end once a tenth of it (at
 * least ANALYZE_AT_END_ROWS).
 */
export function analyzeDue(rowsSince: number, planned: number, atEnd: boolean): boolean {
  return atEnd ? rowsSince >= Math.max(ANALYZE_AT_END_ROWS, planned / 10) : rowsSince >= Math.max(ANALYZE_AFTER_ROWS, planned);
}

// How long an import the database could not take a chunk of is left before this process claims it again.
const RESUME_AFTER_MS = 2_000;
// Pauses in a row at one checkpoint before the import fails with the database's error (waits 2, 4 … 20 s: about 2 minutes).
const MAX_PAUSES = 10;

/** An import paused because the database could not take a chunk: the checkpoint it paused at, and how often in a row. */
export interface Paused {
  at: number;
  count: number;
}

/**
 * After the database could not take a chunk at checkpoint `at` (`previous`: the import's last pause):
 * the pause (its count and how long the import is left), or null when it has paused MAX_PAUSES times in
 * a row without a row gained and fails.
 */
export function pauseAfterUnavailable(previous: Paused | undefined, at: number): { paused: Paused; restMs: number } | null {
  const count = previous && previous.at === at ? previous.count + 1 : 1;
  if (count > MAX_PAUSES) return null;
  return { paused: { at, count }, restMs: RESUME_AFTER_MS * count };
}
