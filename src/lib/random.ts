import { randomBytes } from 'node:crypto';

// Random bytes drawn 4 KiB at a time: one randomBytes call per id or request id cost more than the
// rest of making it (a batch of 100 loads makes several hundred ids).
let pool = Buffer.alloc(0);
let offset = 0;

/** `n` (≤ 4096) fresh random bytes: the pool and where they start in it. Read them before the next call. */
export function pooledRandom(n: number): [Buffer, number] {
  if (offset + n > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += n;
  return [pool, offset - n];
}
