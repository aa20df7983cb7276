import type { ImportsTable } from '../../lib/db/types.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import type { ImportFiles } from './imports.files.js';
import { csvHeader, headerBoundsProblem, headerPlacementProblem, missingColumns } from './imports.header.js';
import { optionsOf } from './imports.present.js';
import type { ImportResources } from './imports.resources.js';
import { FORBIDDEN_SEGMENTS, readCsvHeader } from './imports.rows.js';
import type { ImportResource } from './imports.schema.js';

// Columns a CSV header may have (a load with 20 stops of 8 columns each is under 200).
const MAX_CSV_COLUMNS = 500;

/** The uploaded parts, checked: numbered 1…N without a gap, and a CSV's header has every required column. */
export async function checkedParts(files: ImportFiles, resources: ImportResources, row: ImportsTable): Promise<{ n: number; bytes: number }[]> {
  const id = row.id;
  const parts = await files.parts(id);
  if (parts.length === 0)
    throw ValidationError.single(
      ['path', 'id'],
      `Value error, no part was uploaded: send the file with PUT /v2/tms-api/imports/${id}/parts/1 (then 2, 3 … for a file over 64 MiB) first`,
    );
  const gap = parts.findIndex((p, i) => p.n !== i + 1);
  if (gap >= 0)
    throw ValidationError.single(
      ['path', 'id'],
      `Value error, part ${gap + 1} is missing: parts are numbered 1, 2, 3 … without a gap (uploaded: ${parts.map((p) => p.n).join(', ')})`,
    );
  if (row.format === 'csv') {
    const csv = optionsOf(row).csv ?? {};
    let names: string[] | null;
    try {
      names = await readCsvHeader(files.open(id, parts.length), csv);
    } catch (err) {
      throw ValidationError.single(['body'], `Value error, the CSV header cannot be read: ${(err as Error).message}`);
    }
    if (!names) throw ValidationError.single(['body'], 'Value error, the CSV is empty: its first record must be a header naming the columns');
    // A header is a record's fields: a few dozen columns. Bounded before anything walks it (a header of
    // thousands of stop columns held the event loop for seconds), and no column may name a prototype.
    if (names.length > MAX_CSV_COLUMNS)
      throw ValidationError.single(['body'], `Value error, the CSV header has ${names.length} columns; at most ${MAX_CSV_COLUMNS} are accepted`);
    const header = csvHeader(names, csv);
    const bounds = headerBoundsProblem(header);
    if (bounds) throw ValidationError.single(['body'], bounds);
    const forbidden = header.names.filter((_, i) => header.paths[i]?.some((seg) => typeof seg === 'string' && FORBIDDEN_SEGMENTS.has(seg)));
    if (forbidden.length > 0)
      throw ValidationError.single(
        ['body'],
        `Value error, the CSV header names no field of a record with column ${JSON.stringify(forbidden[0])}: rename or drop it`,
      );
    const placement = headerPlacementProblem(header, resources[row.resource as ImportResource].createSchema);
    if (placement) throw ValidationError.single(['body'], placement);
    const missing = missingColumns(header, resources[row.resource as ImportResource].createSchema);
    if (missing.length > 0) {
      const issues: ValidationIssue[] = missing.map((field) => ({
        type: 'missing',
        loc: ['body', ...field.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) - 1 : s))],
        msg: `Field required: the CSV header has no column for '${field}' (add one, or map a header to it in csv.columns)`,
      }));
      throw new ValidationError(issues);
    }
  }
  return parts;
}
