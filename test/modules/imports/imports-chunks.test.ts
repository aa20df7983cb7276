import { describe, expect, it } from 'vitest';
import { nextChunkSize } from '../../../src/modules/imports/imports.runner.js';

// An import's chunk is one transaction: on SQLite a PUT beside the import waits for the chunk in
// flight, so chunks are sized to take about IMPORT_CHUNK_MS (docs/imports.md).
describe('the size of an import chunk', () => {
  const timed = { chunkMs: 50, chunkRows: 1000 };

  it('is IMPORT_CHUNK_ROWS every time when chunks are not timed', () => {
    expect(nextChunkSize(null, { chunkMs: 0, chunkRows: 1000 })).toBe(1000);
    expect(nextChunkSize({ rows: 1000, ms: 5000 }, { chunkMs: 0, chunkRows: 1000 })).toBe(1000);
  });

  it('starts at 128 rows (or IMPORT_CHUNK_ROWS if fewer)', () => {
    expect(nextChunkSize(null, timed)).toBe(128);
    expect(nextChunkSize(null, { chunkMs: 50, chunkRows: 100 })).toBe(100);
  });

  it('moves halfway to the size that takes IMPORT_CHUNK_MS, to the nearest power of two', () => {
    // 128 rows in 25 ms: 256 would take 50 ms; halfway is 192, nearest power of two 256 (log2 7.58).
    expect(nextChunkSize({ rows: 128, ms: 25 }, timed)).toBe(256);
    // 512 rows in 200 ms: 128 would take 50 ms; halfway 320, nearest power of two 256 (log2 8.32).
    expect(nextChunkSize({ rows: 512, ms: 200 }, timed)).toBe(256);
    // On target: stays.
    expect(nextChunkSize({ rows: 256, ms: 50 }, timed)).toBe(256);
  });

  it('stays between 128 rows and IMPORT_CHUNK_ROWS, whatever the time (a chunk of no measurable time included)', () => {
    expect(nextChunkSize({ rows: 512, ms: 0 }, timed)).toBe(1000);
    expect(nextChunkSize({ rows: 1000, ms: 1 }, timed)).toBe(1000);
    expect(nextChunkSize({ rows: 128, ms: 60_000 }, timed)).toBe(128);
    expect(nextChunkSize({ rows: 512, ms: 5_000 }, timed)).toBe(256);
  });

  it('takes few sizes over a run whose time per row drifts (few statement texts)', () => {
    const sizes = new Set<number>();
    let size = nextChunkSize(null, timed);
    for (let i = 0; i < 2000; i++) {
      const msPerRow = 0.05 + i * 0.0005 + (i % 7 === 0 ? 0.3 : 0);
      size = nextChunkSize({ rows: size, ms: size * msPerRow }, timed);
      sizes.add(size);
    }
    expect(sizes.size).toBeLessThanOrEqual(4);
    expect([...sizes].every((s) => s === 1000 || Number.isInteger(Math.log2(s)))).toBe(true);
  });

  it('while writes arrive: straight to the power of two at or below the size that takes the live time, from 8 rows', () => {
    const live = { chunkMs: 10, chunkRows: 1000, live: true };
    expect(nextChunkSize(null, live)).toBe(8);
    // 1,000 rows in 370 ms: 27 would take 10 ms; no step halfway from 1,000 (a write waits for the chunk).
    expect(nextChunkSize({ rows: 1000, ms: 370 }, live)).toBe(16);
    // 16 rows in 12 ms: 13 would take 10 ms.
    expect(nextChunkSize({ rows: 16, ms: 12 }, live)).toBe(8);
    expect(nextChunkSize({ rows: 8, ms: 60 }, live)).toBe(8);
    expect(nextChunkSize({ rows: 8, ms: 1 }, live)).toBe(64);
    expect(nextChunkSize({ rows: 8, ms: 0 }, { chunkMs: 10, chunkRows: 100, live: true })).toBe(100);
  });
});
