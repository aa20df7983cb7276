/**
 * The one case fold of every case-insensitive filter (docs/api.md, "Lists"), applied in JavaScript on
 * both sides: to the stored folded column when a record is written (and by migration 0013 to the rows
 * that existed) and to the filter's value. Both engines then compare the same folded text byte for byte,
 * whatever their collation (PostgreSQL's `lower()` under "C" and SQLite's only fold ASCII).
 *
 * NFKC first (compatibility forms: `ﬁ` is `fi`, full-width letters are ASCII, composed and decomposed
 * accents are one form), then upper and lower case (JavaScript's locale-independent Unicode mappings:
 * `ß` → `SS` → `ss`, `Ö` → `ö`), then the final sigma `ς` as `σ` (JavaScript lowers `Σ` by position).
 * This is Unicode's full case folding for practical purposes, minus the Turkish dotted/dotless i
 * special case (the default, locale-independent mapping is used).
 */
export function foldCase(text: string): string {
  return text.normalize('NFKC').toUpperCase().toLowerCase().replace(/ς/g, 'σ').normalize('NFC');
}

/** The folded text of an optional value (null stays null). */
export function foldOrNull(text: string | null | undefined): string | null {
  return text === null || text === undefined ? null : foldCase(text);
}
