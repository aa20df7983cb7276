import { sql } from 'kysely';
import { foldCase } from '../fold.js';

/**
 * Case-insensitive "contains" on a folded column (docs/api.md, "Lists"): the column holds foldCase(text)
 * written by the write path, the needle is folded the same way here, so both engines compare the same
 * bytes (LIKE is case-sensitive in PostgreSQL and ASCII-only case-insensitive in SQLite; neither matters
 * on folded text). PostgreSQL answers it from a pg_trgm GIN index when the extension exists (migration
 * 0013).
 */
export function containsFolded(foldedColumn: string, needle: string) {
  const escaped = foldCase(needle).replace(/[\\%_]/g, (ch) => `\\${ch}`);
  return sql<boolean>`${sql.ref(foldedColumn)} like ${`%${escaped}%`} escape '\\'`;
}

/** Case-insensitive equality on a folded column, e.g. locations' city. */
export function equalsFolded(foldedColumn: string, value: string) {
  return sql<boolean>`${sql.ref(foldedColumn)} = ${foldCase(value)}`;
}

/** Case-insensitive "contains" by SQL lower(): ASCII letters only (text without a folded column). */
export function containsInsensitive(column: string, needle: string) {
  const escaped = needle.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`);
  return sql<boolean>`lower(${sql.ref(column)}) like ${`%${escaped}%`} escape '\\'`;
}
