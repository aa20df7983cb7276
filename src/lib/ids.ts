import { pooledRandom } from './random.js';

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

function encodeRandom(): string {
  const [bytes, at] = pooledRandom(16);
  let out = '';
  for (let i = 0; i < 16; i++) out += ALPHABET[bytes[at + i]! & 31];
  return out;
}

export function newId(kind: IdKind, now: number = Date.now()): string {
  return `${kind}_${encodeTime(now)}${encodeRandom()}`.toLowerCase();
}
