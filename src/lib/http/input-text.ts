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
}

export const ALL_CHECKS: TextChecks = { nul: true, surrogates: true };

/**
 * What a JSON body's raw text may carry that needs a walk over its parsed value, or null (the common
 * case: no walk). NUL and lone surrogates can only arrive escaped: JSON refuses raw control characters,
 * and UTF-8 cannot encode a lone surrogate (the decoder turns such bytes into U+FFFD).
 */
export function checksForJsonText(text: string): TextChecks | null {
  const proto = text.includes('__proto__');
  if (!proto && !text.includes('\\u')) return null;
  const nul = text.includes('\\u0000');
  const surrogates = /\\u[dD][89a-fA-F]/.test(text);
  return nul || surrogates || proto ? { nul, surrogates, stripProto: proto } : null;
}

function problemOf(text: string, checks: TextChecks): Omit<ValidationIssue, 'loc'> | null {
  if (checks.nul && text.includes('\u0000')) return { type: 'value_error', msg: NUL_MESSAGE };
  if (checks.surrogates && LONE_SURROGATE.test(text)) return { type: 'string_unicode', msg: surrogateMessage(text) };
  return null;
}

interface Node {
  value: unknown;
  parent: Node | null;
  key: LocPart | null;
  /** Set on a key that is itself refused: reported where it stands, its value not looked into. */
  keyProblem?: Omit<ValidationIssue, 'loc'>;
}

function locOf(node: Node, root: LocPart[]): LocPart[] {
  const parts: LocPart[] = [];
  for (let n: Node | null = node; n && n.key !== null; n = n.parent) parts.push(n.key);
  return [...root, ...parts.reverse()];
}

/** Where `value` carries refused text (one entry per field, at most MAX_ISSUES), in document order. */
export function textIssues(value: unknown, root: LocPart[], checks: TextChecks = ALL_CHECKS): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  if (value === null || value === undefined) return out;
  const stack: Node[] = [{ value, parent: null, key: null }];
  while (stack.length > 0 && out.length < MAX_ISSUES) {
    const node = stack.pop()!;
    if (node.keyProblem) {
      out.push({ ...node.keyProblem, loc: locOf(node, root) });
      continue;
    }
    const v = node.value;
    if (typeof v === 'string') {
      const p = problemOf(v, checks);
      if (p) out.push({ ...p, loc: locOf(node, root) });
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: node, key: i });
      continue;
    }
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      if (checks.stripProto && k === '__proto__') {
        delete obj[k];
        continue;
      }
      const p = problemOf(k, checks);
      stack.push(p ? { value: undefined, parent: node, key: k, keyProblem: p } : { value: obj[k], parent: node, key: k });
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
