import { pooledRandom } from './random.js';
import type { RecordIdPrefix } from '../domain/records.js';

// Crockford base32: ids sort by creation time as plain strings (ULID layout: 48-bit ms time + 80 random bits).
// Monotonic within a process (as ULID's monotonic factory): an id made in the same millisecond as the one
// before it (or with a clock that stepped back) keeps that time and takes the previous random part plus one,
// so ids made one after another in a process sort in the order they were made, and "ties by id" orders are
// exact. (Across instances, ids made in the same millisecond still order at random, as any ULID.)
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A record kind's prefix (src/domain/records.ts), or that of a part of one, an account or an event. */
export type IdKind = RecordIdPrefix | 'contact' | 'stop' | 'rate' | 'key' | 'org' | 'user' | 'evt' | 'whe' | 'whd' | 'wha' | 'whr' | 'imp' | 'aud';

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

const RANDOM_CHARS = 16;
let lastTime = -1;
const lastRandom = new Uint8Array(RANDOM_CHARS);

function freshRandom(): void {
  const [bytes, at] = pooledRandom(RANDOM_CHARS);
  for (let i = 0; i < RANDOM_CHARS; i++) lastRandom[i] = bytes[at + i]! & 31;
}

/** Adds one to the 80-bit random part; false when it was all ones (then the caller draws afresh). */
function incrementRandom(): boolean {
  for (let i = RANDOM_CHARS - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]! += 1;
      return true;
    }
    lastRandom[i] = 0;
  }
  return false;
}

function encodeRandom(): string {
  const [bytes, at] = pooledRandom(RANDOM_CHARS);
  let out = '';
  for (let i = 0; i < RANDOM_CHARS; i++) out += ALPHABET[bytes[at + i]! & 31];
  return out;
}

/**
 * A new id. Without `now` it is monotonic (see above); with `now` (seeding history, ids stamped with an
 * event's own time) it is stamped with that time and a fresh random part, and leaves the sequence alone.
 */
export function newId(kind: IdKind, now?: number): string {
  if (now !== undefined) return `${kind}_${encodeTime(now)}${encodeRandom()}`.toLowerCase();
  const clock = Date.now();
  if (clock <= lastTime) {
    if (!incrementRandom()) {
      lastTime += 1;
      freshRandom();
    }
  } else {
    lastTime = clock;
    freshRandom();
  }
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += ALPHABET[lastRandom[i]!];
  return `${kind}_${encodeTime(lastTime)}${random}`.toLowerCase();
}
