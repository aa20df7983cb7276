import { describe, expect, it } from 'vitest';
import {
  analyzeDue,
  catchUpBetweenChunks,
  chunkPacer,
  giveWayMs,
  LIVE_WINDOW_MS,
  pauseAfterUnavailable,
  writesArriving,
  type PacingTargets,
} from '../../../src/modules/imports/imports.pacing.js';

// The import's pacing (docs/imports.md, "How it runs"): pure rules, given what the runner measured.
const targets: PacingTargets = { chunkRows: 1000, chunkMs: 50, liveChunkMs: 10 };

describe('the pacer of an import run', () => {
  it('starts at 128 rows and follows the time the chunks take (nextChunkSize)', () => {
    const pacer = chunkPacer(targets, () => false);
    expect(pacer.size).toBe(128);
    expect(pacer.full(127)).toBe(false);
    expect(pacer.full(128)).toBe(true);
    // 128 rows in 25 ms: halfway to 256.
    pacer.took(128, 25);
    expect(pacer.size).toBe(256);
    pacer.took(256, 5);
    expect(pacer.size).toBe(1000);
  });

  it('starts live at 8 rows when writes arrive as the run begins', () => {
    const pacer = chunkPacer(targets, () => true);
    expect(pacer.live).toBe(true);
    expect(pacer.size).toBe(8);
    // 8 rows in 1 ms: 80 would take 10 ms, the power of two below is 64.
    pacer.took(8, 1);
    expect(pacer.size).toBe(64);
  });

  it('cuts a chunk filling to the full size once a write arrives, looked at every 8 rows', () => {
    let arriving = false;
    const pacer = chunkPacer(targets, () => arriving);
    // 128 rows in 5 ms: 1,280 take 50 ms; halfway is 704, nearest power of two 512.
    pacer.took(128, 5);
    expect(pacer.size).toBe(512);
    expect(pacer.full(100)).toBe(false);
    arriving = true;
    // Not a multiple of 8: not looked at.
    expect(pacer.full(101)).toBe(false);
    expect(pacer.live).toBe(false);
    // At 104: live, sized from the last chunk (128 rows in 5 ms: 256 take 10 ms), not full yet.
    expect(pacer.full(104)).toBe(false);
    expect(pacer.live).toBe(true);
    expect(pacer.size).toBe(256);
    expect(pacer.full(256)).toBe(true);
  });

  it('a chunk cut to a live size below what it holds is full at once', () => {
    let arriving = false;
    const pacer = chunkPacer(targets, () => arriving);
    // 1,000 rows in 500 ms: 20 take 10 ms, so 16.
    pacer.took(1000, 500);
    arriving = true;
    expect(pacer.full(40)).toBe(true);
    expect(pacer.size).toBe(16);
  });

  it('goes back to the full target once writes stop arriving', () => {
    let arriving = true;
    const pacer = chunkPacer(targets, () => arriving);
    pacer.took(8, 1);
    expect(pacer.live).toBe(true);
    arriving = false;
    pacer.took(64, 4);
    expect(pacer.live).toBe(false);
    expect(pacer.size).toBe(512);
  });

  it('never goes live when live chunks are off, whatever arrives', () => {
    const off = { ...targets, liveChunkMs: 0 };
    expect(writesArriving(off, 0)).toBe(false);
    expect(writesArriving(targets, 0)).toBe(true);
    expect(writesArriving(targets, LIVE_WINDOW_MS - 1)).toBe(true);
    expect(writesArriving(targets, LIVE_WINDOW_MS)).toBe(false);
    expect(writesArriving(targets, Infinity)).toBe(false);
  });

  it('untimed chunks (IMPORT_CHUNK_MS=0) are IMPORT_CHUNK_ROWS each', () => {
    const pacer = chunkPacer({ chunkRows: 500, chunkMs: 0, liveChunkMs: 0 }, () => false);
    expect(pacer.size).toBe(500);
    pacer.took(500, 10_000);
    expect(pacer.size).toBe(500);
  });
});

describe('the pauses around a chunk', () => {
  it('gives way to the requests in flight for at most the chunk’s own target', () => {
    expect(giveWayMs(targets, false)).toBe(50);
    expect(giveWayMs(targets, true)).toBe(10);
  });

  it('lets the log catch up between chunks only when they are timed', () => {
    expect(catchUpBetweenChunks(targets)).toBe(true);
    expect(catchUpBetweenChunks({ ...targets, chunkMs: 0 })).toBe(false);
  });

  it('analyzes during the run after as many rows as the tables had (at least 10,000), at the end after a tenth (at least 1,000)', () => {
    expect(analyzeDue(9_999, 0, false)).toBe(false);
    expect(analyzeDue(10_000, 0, false)).toBe(true);
    expect(analyzeDue(39_999, 40_000, false)).toBe(false);
    expect(analyzeDue(40_000, 40_000, false)).toBe(true);
    expect(analyzeDue(999, 0, true)).toBe(false);
    expect(analyzeDue(1_000, 0, true)).toBe(true);
    expect(analyzeDue(3_999, 40_000, true)).toBe(false);
    expect(analyzeDue(4_000, 40_000, true)).toBe(true);
  });

  it('over an import of 100,000 rows into empty tables: ANALYZE at 10,000, 20,000, 40,000 and 80,000 rows', () => {
    const at: number[] = [];
    let planned = 0;
    let since = 0;
    for (let rows = 1_000; rows <= 100_000; rows += 1_000) {
      since += 1_000;
      if (analyzeDue(since, planned, false)) {
        at.push(rows);
        planned = rows;
        since = 0;
      }
    }
    expect(at).toEqual([10_000, 20_000, 40_000, 80_000]);
    // 20,000 rows since, a tenth of 80,000 is 8,000: one more at the end.
    expect(analyzeDue(since, planned, true)).toBe(true);
  });

  it('pauses an import the database could not take 2, 4 … 20 s, counted at one checkpoint, and fails it at the eleventh', () => {
    let paused = pauseAfterUnavailable(undefined, 500)!;
    expect(paused).toEqual({ paused: { at: 500, count: 1 }, restMs: 2_000 });
    const waits = [paused.restMs];
    for (let i = 0; i < 9; i++) {
      paused = pauseAfterUnavailable(paused.paused, 500)!;
      waits.push(paused.restMs);
    }
    expect(waits).toEqual([2_000, 4_000, 6_000, 8_000, 10_000, 12_000, 14_000, 16_000, 18_000, 20_000]);
    expect(pauseAfterUnavailable(paused.paused, 500)).toBeNull();
    // A row gained: counted from one again.
    expect(pauseAfterUnavailable(paused.paused, 600)).toEqual({ paused: { at: 600, count: 1 }, restMs: 2_000 });
  });
});
