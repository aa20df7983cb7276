import { randomBytes } from 'node:crypto';

// Crockford base32: ids sort by creation time as plain strings (ULID layout: 48-bit ms time + 80 random bits).
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export type IdKind =
  | 'cust' | 'carrier' | 'contact' | 'loc' | 'load' | 'stop' | 'rate' | 'mrs' | 'key' | 'org' | 'user';

function encodeTime(ms: number): string {
  let out = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

// Random bytes drawn 4 KiB at a time: one call per id cost more than the rest of the id (a batch of 100
// loads makes several hundred ids).
let pool = Buffer.alloc(0);
let offset = 0;

function encodeRandom(): string {
  if (offset + 16 > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  let out = '';
  for (let i = 0; i < 16; i++) out += ALPHABET[pool[offset + i]! & 31];
  offset += 16;
  return out;
}

export function newId(kind: IdKind, now: number = Date.now()): string {
  return `${kind}_${encodeTime(now)}${encodeRandom()}`.toLowerCase();
}
