import { hash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const KEY_PREFIX = 'lbk_';
export const KEY_PATTERN = /^lbk_[0-9a-f]{64}$/;

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('hex');
}

/** Keys carry 256 random bits, so a fast hash is enough: what is stored cannot be turned back into a key. */
export function hashApiKey(key: string): string {
  // One-shot hash (Node ≥ 20.12): no Hash object per request.
  return hash('sha256', key, 'hex');
}

/** What the dashboard and `key list` show of a key: enough to recognise it, never enough to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, 12);
}

export function constantTimeEqualHex(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

/** Equal text, in time that does not depend on where they differ. */
export function constantTimeEqualText(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}

// Crockford's base32 without look-alikes: 16 characters, 80 bits, read aloud or typed from a log.
const SETUP_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The first-run setup code: `XXXX-XXXX-XXXX-XXXX`. */
export function generateSetupCode(): string {
  const bytes = randomBytes(16);
  const chars = [...bytes].map((b) => SETUP_ALPHABET[b & 31]);
  return [0, 4, 8, 12].map((i) => chars.slice(i, i + 4).join('')).join('-');
}

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 64 };

function scryptAsync(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, saltB64, keyB64] = stored.split('$');
  if (alg !== 'scrypt' || !saltB64 || !keyB64) return false;
  const expected = Buffer.from(keyB64, 'base64');
  const actual = await scryptAsync(password, Buffer.from(saltB64, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return timingSafeEqual(actual, expected);
}
