import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** A part is at most 64 MiB (docs/imports.md, "Parts"). */
export const MAX_PART_BYTES = 64 * 1024 * 1024;
/** Parts are numbered 1 … MAX_PARTS (a 1 GB file is 16 parts of 64 MiB). */
export const MAX_PARTS = 10_000;

/** Thrown when a part goes past MAX_PART_BYTES while it streams in (nothing of it is kept). */
export class PartTooLargeError extends Error {}

/** A part streamed to disk, not yet one of the import's: its size and digest (what an Idempotency-Key compares). */
export interface StagedPart {
  bytes: number;
  sha256: string;
  keep(): Promise<void>;
  discard(): Promise<void>;
}

const partName = (n: number) => `part-${String(n).padStart(6, '0')}`;

/**
 * Streams `body` into a staged copy of part `n`: its size, and `keep` (it becomes part `n`, replacing
 * one sent before under that number) or `discard`. Kept only once the caller has made sure, under the
 * import's row lock, that the upload is still open: a part that finishes streaming after the import was
 * completed never replaces what the completion counted and the runner reads.
 */
async function stagePart(dir: string, n: number, body: Readable): Promise<StagedPart> {
  await mkdir(dir, { recursive: true });
  // Its own name: two uploads of one part at once never write into the same file.
  const tmp = join(dir, `${partName(n)}.${randomUUID()}.tmp`);
  let size = 0;
  const digest = createHash('sha256');
  const limit = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      digest.update(chunk);
      if (size > MAX_PART_BYTES) return done(new PartTooLargeError(`part is larger than ${MAX_PART_BYTES} bytes (64 MiB)`));
      done(null, chunk);
    },
  });
  try {
    await pipeline(body, limit, createWriteStream(tmp));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return { bytes: size, sha256: digest.digest('hex'), keep: () => rename(tmp, join(dir, partName(n))), discard: () => rm(tmp, { force: true }) };
}

/**
 * The parts 1 … count read one after another into ONE buffer of 1 MiB, reused: each chunk yielded is
 * valid only until the next one is asked for, and none is read ahead. For NDJSON, whose line splitter
 * turns each line into a string (and copies a line's start that runs into the next chunk) before it
 * asks for more (imports.rows.ts). A stream (`open`) gives each read a new 1 MiB buffer, memory
 * outside the JavaScript heap that outlived the young generation and was freed only by a full
 * collection: 50 MB more resident memory at its peaks during an import (BENCHMARKS.md).
 */
async function* partChunks(dir: string, count: number): AsyncGenerator<Buffer> {
  const buffer = Buffer.allocUnsafeSlow(1 << 20);
  for (let n = 1; n <= count; n++) {
    const file = await open(join(dir, partName(n)), 'r');
    try {
      for (;;) {
        const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        yield buffer.subarray(0, bytesRead);
      }
    } finally {
      await file.close();
    }
  }
}

/**
 * Where an import's uploaded parts live: one directory per import under IMPORTS_DIR, one file per
 * part. Parts stream to disk as they arrive (never held in memory) and are read back as one stream.
 * Several instances share the directory (a shared volume) so that any of them can run or resume an import.
 */
export function importFiles(root: string) {
  const dirOf = (importId: string) => join(root, importId);

  return {
    /**
     * Streams `body` into a staged copy of part `n`: its size, and `keep` (it becomes part `n`, replacing
     * one sent before under that number) or `discard` (stagePart).
     */
    stagePart: (importId: string, n: number, body: Readable): Promise<StagedPart> => stagePart(dirOf(importId), n, body),

    /** The parts uploaded, by number, with their sizes. */
    async parts(importId: string): Promise<{ n: number; bytes: number }[]> {
      let names: string[];
      try {
        names = await readdir(dirOf(importId));
      } catch {
        return [];
      }
      const parts: { n: number; bytes: number }[] = [];
      for (const name of names) {
        const m = /^part-(\d{6})$/.exec(name);
        if (!m) continue;
        parts.push({ n: Number(m[1]), bytes: (await stat(join(dirOf(importId), name))).size });
      }
      return parts.sort((a, b) => a.n - b.n);
    },

    /**
     * The parts 1 … count read one after another as one stream (a record may span two parts). One
     * generator over the files: a pipeline per part into one stream left listeners on it per part
     * (a warning in the log past 10 parts, 640 MiB).
     */
    open(importId: string, count: number): Readable {
      async function* bytes(): AsyncGenerator<Buffer> {
        for (let n = 1; n <= count; n++) yield* createReadStream(join(dirOf(importId), partName(n)), { highWaterMark: 1 << 20 });
      }
      return Readable.from(bytes(), { objectMode: false, highWaterMark: 1 << 20 });
    },

    /** The parts 1 … count read one after another into ONE buffer of 1 MiB, reused (partChunks). */
    chunks: (importId: string, count: number): AsyncGenerator<Buffer> => partChunks(dirOf(importId), count),

    /** Deletes an import's parts (it finished, failed or was cancelled). */
    remove: (importId: string) => rm(dirOf(importId), { recursive: true, force: true }),
  };
}

export type ImportFiles = ReturnType<typeof importFiles>;
