/**
 * A CSV import's header: how its columns map to a record's field paths, and what is refused at complete
 * before any row is built (docs/imports.md, "Bounds"): paths past the bounds, names where a list wants a
 * position, two columns filling one field, required columns missing.
 */
import type { TSchema } from '@sinclair/typebox';

export interface CsvOptions {
  delimiter?: string;
  /** CSV header → field path (`stops.1.location_external_reference_id`); unmapped headers are field paths themselves. */
  columns?: Record<string, string>;
}

/**
 * A field path of a CSV column: `stops.1.early_arrival` → ['stops', 0, 'early_arrival'] (array positions
 * count from 1). A part that only looks like a position (`0`, `01`, `1e2`, `+1`, `-1`) stays text, and
 * headerBoundsProblem refuses it.
 */
export function fieldPath(path: string): (string | number)[] {
  return path
    .split('.')
    .map((s) => s.trim())
    .map((s) => (/^[1-9]\d*$/.test(s) ? Number(s) - 1 : s));
}

export type JsonSchema = { type?: string | string[]; properties?: Record<string, JsonSchema>; items?: JsonSchema; anyOf?: JsonSchema[]; required?: string[] };

/** The schemas a path may land on (a union is followed down each branch). */
export function schemasAt(schema: JsonSchema | undefined, path: readonly (string | number)[]): JsonSchema[] {
  if (!schema) return [];
  if (schema.anyOf) return schema.anyOf.flatMap((s) => schemasAt(s, path));
  if (path.length === 0) return [schema];
  const [head, ...rest] = path;
  if (typeof head === 'number') return schemasAt(schema.items, rest);
  return schemasAt(schema.properties?.[head!], rest);
}

/** How a CSV header maps to field paths: one entry per column, null for a column left out (empty header). */
export interface CsvHeader {
  paths: ((string | number)[] | null)[];
  names: string[];
}

/** A column path's bounds (docs/imports.md, "Rows"): a record is never deeper, nor has more stops, rates or contacts. */
export const MAX_PATH_PARTS = 6;
export const MAX_PATH_POSITION = 99;
/** A path part that reads as a number but is no position from 1 (`0`, `01`, `1e2`, `+1`, `-1`, `.5`). */
const LOOKS_NUMERIC = /^[+-]?[\d.]/;

/**
 * The first column whose path is past the bounds, said as the 422's message; null when every one is
 * within them. Checked at complete, before any row is built: a position of 100,000,000 made a sparse
 * array per row (seconds each), a path thousands of parts deep overflowed the stack.
 */
export function headerBoundsProblem(header: CsvHeader): string | null {
  for (const [i, path] of header.paths.entries()) {
    if (!path) continue;
    const full = header.names[i] ?? '';
    const name = JSON.stringify(full.length > 100 ? `${full.slice(0, 100)}…` : full);
    if (path.length > MAX_PATH_PARTS)
      return `Value error, the CSV column ${name} is a field path of ${path.length} parts; a path has at most ${MAX_PATH_PARTS} (such as stops.2.contacts.1.email)`;
    if (path.some((seg) => seg === ''))
      return `Value error, the CSV column ${name} has an empty part in its field path; write it as names and positions joined by single dots (such as stops.2.early_arrival)`;
    const odd = path.find((seg) => typeof seg === 'string' && LOOKS_NUMERIC.test(seg));
    if (odd !== undefined)
      return `Value error, the CSV column ${name} names position ${JSON.stringify(odd)}; stops, rates and contacts count from 1 to at most ${MAX_PATH_POSITION}, written as plain digits`;
    const position = path.find((seg) => typeof seg === 'number' && seg + 1 > MAX_PATH_POSITION);
    if (position !== undefined)
      return `Value error, the CSV column ${name} names position ${Number(position) + 1}; stops, rates and contacts count from 1 to at most ${MAX_PATH_POSITION}`;
  }
  return null;
}

const isList = (s: JsonSchema) => s.items !== undefined || s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'));

/**
 * The first column whose path the record's schema cannot place, said as the 422's message: a name where
 * a list wants a position (`stops.x.stop_type`, `stops.Infinity.x`, a digit of another script), or a path
 * another column already fills (`stops.1.stop_type` twice, or once more as `stops. 1.stop_type`): its
 * cells were dropped or overwritten without a word.
 */
export function headerPlacementProblem(header: CsvHeader, createSchema: TSchema): string | null {
  const schema = createSchema as unknown as JsonSchema;
  const seen = new Map<string, string>();
  for (const [i, path] of header.paths.entries()) {
    if (!path) continue;
    const full = header.names[i] ?? '';
    const name = JSON.stringify(full.length > 100 ? `${full.slice(0, 100)}…` : full);
    const misplaced = path.findIndex((seg, at) => typeof seg === 'string' && schemasAt(schema, path.slice(0, at)).some(isList));
    if (misplaced >= 0)
      return `Value error, the CSV column ${name} names position ${JSON.stringify(path[misplaced])}; stops, rates and contacts count from 1 to at most ${MAX_PATH_POSITION}, written as plain digits`;
    const key = JSON.stringify(path);
    const earlier = seen.get(key);
    if (earlier !== undefined)
      return `Value error, the CSV column ${name} fills the same field as the column ${JSON.stringify(earlier)}: drop one, or map it to another field in csv.columns`;
    seen.set(key, full);
  }
  return null;
}

export function csvHeader(names: readonly string[], opts: CsvOptions): CsvHeader {
  const clean = names.map((n) => n.trim());
  return { names: clean, paths: clean.map((n) => (n === '' ? null : fieldPath(opts.columns?.[n] ?? n))) };
}

/**
 * A missing required column (checked at complete, before anything runs; docs/imports.md, "Parts"): each
 * required field of the record, and each required field of every array position the header names
 * (stops.2.stop_type…).
 */
export function missingColumns(header: CsvHeader, createSchema: TSchema): string[] {
  const schema = createSchema as unknown as JsonSchema;
  const present = header.paths.filter((p): p is (string | number)[] => p !== null);
  const covers = (prefix: readonly (string | number)[]) => present.some((p) => prefix.every((seg, i) => p[i] === seg) && p.length >= prefix.length);
  const missing: string[] = [];
  const walk = (s: JsonSchema | undefined, prefix: (string | number)[]) => {
    if (!s) return;
    for (const field of s.required ?? []) {
      const at = [...prefix, field];
      if (!covers(at)) {
        missing.push(at.map((seg) => (typeof seg === 'number' ? String(seg + 1) : seg)).join('.'));
        continue;
      }
      const child = s.properties?.[field];
      if (child?.type === 'array' && child.items?.required) {
        const positions = new Set(
          present.filter((p) => at.every((seg, i) => p[i] === seg) && typeof p[at.length] === 'number').map((p) => p[at.length] as number),
        );
        for (const pos of [...positions].sort((a, b) => a - b)) walk(child.items, [...at, pos]);
      } else if (child?.type === 'object') walk(child, at);
    }
  };
  walk(schema, []);
  return missing;
}
