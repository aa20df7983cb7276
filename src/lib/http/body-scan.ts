/**
 * What a JSON body's raw bytes are checked for before JSON.parse sees them (docs/api.md "Bounds of a
 * request"): UTF-8 that decodes without replacement, and a shape JSON.parse can build in a few
 * milliseconds. JSON.parse is one synchronous call: 10 MiB of `{}` items take it 1.5 s and 10 MiB of
 * nested `[` 2 s, so the bounds must be known before it runs. One pass over the bytes, stopping at the
 * first bound passed; the keys of the open containers are remembered as byte ranges (decoded only to
 * name where a bound was passed).
 */
import { isUtf8 } from 'node:buffer';
import type { LocPart, ValidationIssue } from './errors.js';

/** No field of the API nests more than 7 levels (batch → items → load → stops → stop → field). */
export const MAX_BODY_DEPTH = 32;
/** Objects and arrays in one body: a full 10 MiB batch of 100 loads with 100 stops and 50 rates each has ~16,000. */
export const MAX_BODY_CONTAINERS = 50_000;
/** Values in one body (members and elements): that full batch has ~100,000. */
export const MAX_BODY_VALUES = 200_000;
/** Members of one object: a load has about 40 fields, a CSV column map one per column. Tens of thousands of
 * unknown fields would cost the unknown-field walk and ajv ~100 ms per MiB. */
export const MAX_OBJECT_MEMBERS = 1_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
/** The bytes that end a scalar (a number, true, false, null): white space and JSON's structure. */
const ENDS_SCALAR = new Uint8Array(256);
for (const b of [0x20, 0x09, 0x0a, 0x0d, COMMA, COLON, QUOTE, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY]) ENDS_SCALAR[b] = 1;

/** An open object or array: its member count, and for an object the byte range of the key being read. */
interface Frame {
  array: boolean;
  count: number;
  keyStart: number;
  keyEnd: number;
}

/**
 * The offset of the first byte that does not start or continue a valid UTF-8 sequence (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or -1. Only run once `isUtf8` said no.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min = 0x80;
    let max = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) min = 0xa0;
      if (b === 0xed) max = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) min = 0x90;
      if (b === 0xf4) max = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      // The second byte has the narrowed range; the others any continuation byte.
      if (c === undefined || c < (k === 1 ? min : 0x80) || c > (k === 1 ? max : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** The text of a body that is UTF-8, or the offset of its first byte that is not. */
export function decodeUtf8(bytes: Buffer): { text: string } | { badByteAt: number } {
  if (isUtf8(bytes)) return { text: bytes.toString('utf8') };
  return { badByteAt: invalidUtf8Offset(bytes) };
}

function locOf(bytes: Buffer, stack: Frame[]): LocPart[] {
  const loc: LocPart[] = ['body'];
  for (const f of stack.slice(0, -1)) {
    if (f.array) loc.push(Math.max(0, f.count - 1));
    else loc.push(f.keyEnd > f.keyStart ? (JSON.parse(bytes.toString('utf8', f.keyStart, f.keyEnd)) as string) : '');
  }
  return loc;
}

const fmt = (n: number) => n.toLocaleString('en-US');

/**
 * Where a body passes MAX_BODY_DEPTH, MAX_BODY_CONTAINERS or MAX_BODY_VALUES (the loc of the container it
 * was read in), or null. Malformed JSON is left to JSON.parse (its message says what is wrong).
 */
export function bodyShapeIssue(bytes: Buffer): ValidationIssue | null {
  const stack: Frame[] = [];
  let containers = 0;
  let values = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b <= 0x20 || b === COLON) continue;
    const top = stack[stack.length - 1];
    if (b === COMMA) {
      if (!top) continue;
      top.count++;
      // In an object a comma ends a member: the next string is a key.
      top.keyEnd = top.keyStart;
      if (++values > MAX_BODY_VALUES) return tooMany(bytes, stack, `more than ${fmt(MAX_BODY_VALUES)} values`);
      if (!top.array && top.count > MAX_OBJECT_MEMBERS) {
        return {
          type: 'value_error',
          loc: locOf(bytes, stack),
          msg: `Value error, this object has more than ${fmt(MAX_OBJECT_MEMBERS)} fields; no object of this API has as many (docs/api.md, Bounds of a request)`,
        };
      }
      continue;
    }
    if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
      stack.pop();
      continue;
    }
    // A value (or a key) begins: the first one makes its container's count 1.
    if (top && top.count === 0) top.count = 1;
    if (b === QUOTE) {
      const start = i;
      for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === BACKSLASH) i++;
      if (top && !top.array && top.keyEnd <= top.keyStart) {
        top.keyStart = start;
        top.keyEnd = i + 1;
      }
    } else if (b !== OPEN_OBJECT && b !== OPEN_ARRAY) {
      // A number, true, false or null: its bytes are skipped in a tight loop (10 MiB of digits cost the
      // general loop 400 ms).
      while (i + 1 < bytes.length && !ENDS_SCALAR[bytes[i + 1]!]) i++;
    } else {
      if (++containers > MAX_BODY_CONTAINERS) return tooMany(bytes, stack, `more than ${fmt(MAX_BODY_CONTAINERS)} objects and arrays`);
      stack.push({ array: b === OPEN_ARRAY, count: 0, keyStart: 0, keyEnd: 0 });
      if (stack.length > MAX_BODY_DEPTH) {
        return {
          type: 'value_error',
          loc: locOf(bytes, stack),
          msg: `Value error, objects and arrays nest more than ${MAX_BODY_DEPTH} levels deep here; no field of this API nests more than 7`,
        };
      }
    }
  }
  return null;
}

function tooMany(bytes: Buffer, stack: Frame[], what: string): ValidationIssue {
  // Named at the container being read when the bound was passed (with a list, the item it had reached).
  const top = stack[stack.length - 1];
  const loc = locOf(bytes, stack);
  const where = top?.array ? ` (passed at item ${fmt(Math.max(0, top.count - 1))} of this list)` : '';
  return {
    type: top?.array ? 'too_long' : 'value_error',
    loc,
    msg: `${top?.array ? 'List' : 'Value error, the body'} too large to read: the body holds ${what}${where}; no request of this API needs as many (docs/api.md, Bounds of a request)`,
  };
}
