/**
 * Text the service refuses wherever it arrives: in path parameters, query strings and every JSON body,
 * known fields, batch items and ignored (unknown) fields alike, object keys included.
 *
 * - NUL (`\u0000`): PostgreSQL cannot store it in text; refusing it everywhere keeps both engines alike.
 * - A lone UTF-16 surrogate (`\ud800` without its pair): not Unicode. JSON lets it through as an escape,
 *   but the engines stored it differently (SQLite and PostgreSQL's drivers each replace or keep it on
 *   their own terms), so a GET differed from the create's answer and two inputs met as one reference.
 *
 * The walk over a value is iterative (no recursion: a body nested 100,000 levels deep is walked like a
 * flat one), remembers the parent of each node instead of copying paths, and stops after MAX_ISSUES.
 */
import type { LocPart, ValidationIssue } from './errors.js';

const MAX_ISSUES = 20;

export const NUL_MESSAGE = 'Value error, text must not contain NUL (\\u0000) characters';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function surrogateMessage(text: string): string {
  const at = LONE_SURROGATE.exec(text)![0].charCodeAt(0).toString(16);
  return (
    `Input should be a valid string: it contains an unpaired UTF-16 surrogate (\\u${at}), which is not Unicode; ` +
    'send valid Unicode text (a character beyond U+FFFF as its surrogate pair, e.g. \\ud83d\\ude9a, or as UTF-8)'
  );
}

/** Which problems to look for (a body's raw text says which it can carry). */
export interface TextChecks {
  nul: boolean;
  surrogates: boolean;
  /** Delete own `__proto__` keys on the way (JSON.parse makes them data properties; Object.assign would not). */
  stripProto?: boolean;
  /** Told where each stripped key stood (the API names it as an ignored field). */
  onStrip?: (loc: LocPart[]) => void;
}

export const ALL_CHECKS: TextChecks = { nul: true, surrogates: true };

/** A JSON escape of a letter of `__proto__`: _ (5f), o (6f), p (70), r (72), t (74). */
const PROTO_LETTER_ESCAPE = /\\u00(?:5[fF]|6[fF]|7[024])/;

/**
 * What a JSON body's raw text may carry that needs a walk over its parsed value, or null (the common
 * case: no walk). NUL and lone surrogates can only arrive escaped: JSON refuses raw control characters,
 * and UTF-8 cannot encode a lone surrogate (the decoder turns such bytes into U+FFFD).
 */
export function checksForJsonText(text: string): TextChecks | null {
  const nul = text.includes('\\u0000');
  const surrogates = /\\u[dD][89a-fA-F]/.test(text);
  // A key may spell __proto__ with escapes ("\u005f_proto__"): an escape of one of its letters (_ p r o t)
  // means a walk that strips it. (Any escape at all would walk every body of a client that escapes all
  // non-ASCII text, as Python's json.dumps does by default.)
  const stripProto = text.includes('__proto__') || PROTO_LETTER_ESCAPE.test(text);
  return nul || surrogates || stripProto ? { nul, surrogates, stripProto } : null;
}

function problemOf(text: string, checks: TextChecks): Omit<ValidationIssue, 'loc'> | null {
  if (checks.nul && text.includes('\u0000')) return { type: 'value_error', msg: NUL_MESSAGE };
  if (checks.surrogates && LONE_SURROGATE.test(text)) return { type: 'string_unicode', msg: surrogateMessage(text) };
  return null;
}

/** An object or array being walked: the next member to look at, and where it stands in the value. */
interface Frame {
  container: unknown[] | Record<string, unknown>;
  /** The object's keys (null for an array). */
  keys: string[] | null;
  next: number;
  parent: Frame | null;
  /** This container's key (or index) in its parent; null at the top. */
  key: LocPart | null;
}

function locOf(frame: Frame | null, root: LocPart[], last: LocPart): LocPart[] {
  const parts: LocPart[] = [last];
  for (let f = frame; f && f.key !== null; f = f.parent) parts.push(f.key);
  return [...root, ...parts.reverse()];
}

function frameOf(value: unknown, parent: Frame | null, key: LocPart | null): Frame | null {
  if (value === null || typeof value !== 'object') return null;
  return Array.isArray(value)
    ? { container: value, keys: null, next: 0, parent, key }
    : { container: value as Record<string, unknown>, keys: Object.keys(value), next: 0, parent, key };
}

/**
 * Where `value` carries refused text (one entry per field, at most MAX_ISSUES), in document order. The
 * walk keeps one frame per level of nesting (not per member), so a wide body costs no more memory than
 * its keys, and a deep one no stack.
 */
export function textIssues(value: unknown, root: LocPart[], checks: TextChecks = ALL_CHECKS): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  if (typeof value === 'string') {
    const p = problemOf(value, checks);
    if (p) out.push({ ...p, loc: root });
    return out;
  }
  const top = frameOf(value, null, null);
  const stack: Frame[] = top ? [top] : [];
  while (stack.length > 0 && out.length < MAX_ISSUES) {
    const f = stack[stack.length - 1]!;
    const size = f.keys ? f.keys.length : (f.container as unknown[]).length;
    if (f.next >= size) {
      stack.pop();
      continue;
    }
    const i = f.next++;
    let key: LocPart;
    let child: unknown;
    if (f.keys) {
      const k = f.keys[i]!;
      const obj = f.container as Record<string, unknown>;
      if (checks.stripProto && k === '__proto__') {
        delete obj[k];
        checks.onStrip?.(locOf(f, root, k));
        continue;
      }
      const p = problemOf(k, checks);
      if (p) {
        // A refused key is reported where it stands; its value is not looked into.
        out.push({ ...p, loc: locOf(f, root, k) });
        continue;
      }
      key = k;
      child = obj[k];
    } else {
      key = i;
      child = (f.container as unknown[])[i];
    }
    if (typeof child === 'string') {
      const p = problemOf(child, checks);
      if (p) out.push({ ...p, loc: locOf(f, root, key) });
    } else {
      const next = frameOf(child, f, key);
      if (next) stack.push(next);
    }
  }
  return out;
}

/**
 * Query parameters whose percent-encoding is not UTF-8 (`%ED%A0%80` is a lone surrogate encoded as if it
 * were a character; `%FF` no character at all). The query parser leaves such text undecoded, so the
 * filter would look for the literal `%ED%A0%80`: refused instead, one entry per parameter. Only looked
 * at when the query has a `%` at all.
 */
export function queryEncodingIssues(url: string): ValidationIssue[] {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('%', q)) return [];
  const out: ValidationIssue[] = [];
  for (const pair of url.slice(q + 1).split('&')) {
    if (!pair.includes('%')) continue;
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
    const name = decodeOrNull(rawName);
    if (name === null || decodeOrNull(rawValue) === null) {
      out.push({
        type: 'string_unicode',
        loc: ['query', name ?? rawName],
        msg: 'Input should be a valid string: this query parameter is not percent-encoded UTF-8 (a lone surrogate or a broken byte sequence); encode the text as UTF-8 before percent-encoding it',
      });
      if (out.length >= MAX_ISSUES) break;
    }
  }
  return out;
}

function decodeOrNull(text: string): string | null {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}
