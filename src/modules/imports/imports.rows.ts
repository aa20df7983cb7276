import { isUtf8 } from 'node:buffer';
import { pipeline, Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { TSchema } from '@sinclair/typebox';
import type { ValidationIssue } from '../../lib/http/errors.js';
import { checksForJsonText, textIssues } from '../../lib/http/input-text.js';
import { unknownFieldIssue, unknownFields } from '../../lib/http/ignored-fields.js';
import { csvHeader, schemasAt, type CsvHeader, type CsvOptions, type JsonSchema } from './imports.header.js';

export type { CsvOptions };

/** One row of an upload: a record to write, or a refusal found before any rule ran (malformed JSON, a bad CSV record). */
export type UploadRow = { row: number; record: unknown } | { row: number; refused: { ref: string | null; detail: string | ValidationIssue[] } };

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A CSV cell as the field's JSON type when the schema wants a number or a boolean and the text is one; else the text (the rules then say what is wrong). */
function cellValue(schemas: readonly JsonSchema[], text: string): unknown {
  const types = new Set(schemas.flatMap((s) => [s.type ?? []].flat()));
  const t = text.trim();
  if ((types.has('number') || types.has('integer')) && NUMBER.test(t)) return Number(t);
  if (types.has('boolean') && /^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  return text;
}

// Names that reach an object's prototype: a header naming one (`__proto__.x`) would write to every
// object of the process (found by a fresh-clone probe: one import crashed the server). Such a column is
// refused at complete (FORBIDDEN_SEGMENTS), and never followed here.
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

function setPath(target: Record<string, unknown>, path: readonly (string | number)[], value: unknown): void {
  if (path.some((seg) => typeof seg === 'string' && FORBIDDEN_SEGMENTS.has(seg))) return;
  let at: Record<string | number, unknown> = target;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!;
    const nextIsIndex = typeof path[i + 1] === 'number';
    let child = Object.hasOwn(at, key) ? at[key] : undefined;
    if (typeof child !== 'object' || child === null) at[key] = child = nextIsIndex ? [] : {};
    at = child as Record<string | number, unknown>;
  }
  at[path[path.length - 1]!] = value;
}

/** Arrays built from `stops.1…`, `stops.3…` keep no holes (a position with no cell at all is left out). */
function compact(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map(compact);
  if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) (value as Record<string, unknown>)[k] = compact(v);
  }
  return value;
}

const refOfRecord = (record: unknown): string | null => {
  const ref = typeof record === 'object' && record !== null ? (record as { external_reference_id?: unknown }).external_reference_id : undefined;
  return typeof ref === 'string' ? ref : null;
};

/** The longest record an upload may hold: an NDJSON line, a CSV record (a load with many stops is a few KB). */
export const MAX_RECORD_BYTES = 1 << 20;

/**
 * An NDJSON upload's lines, without their line ends: LF, CRLF or a lone CR (as readline took them, so
 * row numbers stay what they were). A line longer than MAX_RECORD_BYTES (its end not counted) is never
 * held whole: it comes out as `{ tooLong }` (its length) once its end is reached, so a file without a
 * single line end cannot grow one string without bound.
 */
export async function* ndjsonLines(
  stream: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
): AsyncGenerator<{ text: string } | { tooLong: number } | { badUtf8: number }> {
  let pieces: Buffer[] = [];
  let held = 0;
  let overflow = 0;
  // The last chunk ended with CR: an LF opening the next one belongs to that line end.
  let afterCR = false;
  const end = (last: Buffer) => {
    const length = held + last.length + overflow;
    let out: { text: string } | { tooLong: number } | { badUtf8: number };
    if (overflow > 0 || length > MAX_RECORD_BYTES) out = { tooLong: length };
    else {
      const bytes = pieces.length === 0 ? last : Buffer.concat([...pieces, last]);
      // Never replaced (a Windows-1252 file would go in with its accents turned to U+FFFD): refused.
      out = isUtf8(bytes) ? { text: bytes.toString('utf8') } : { badUtf8: invalidUtf8At(bytes) };
    }
    pieces = [];
    held = 0;
    overflow = 0;
    return out;
  };
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    if (afterCR && buf.length > 0) {
      if (buf[0] === 0x0a) start = 1;
      afterCR = false;
    }
    for (let i = start; i < buf.length; i++) {
      const b = buf[i];
      if (b !== 0x0a && b !== 0x0d) continue;
      yield end(buf.subarray(start, i));
      if (b === 0x0d) {
        if (i + 1 < buf.length) {
          if (buf[i + 1] === 0x0a) i++;
        } else afterCR = true;
      }
      start = i + 1;
    }
    const rest = buf.subarray(start);
    if (rest.length === 0) continue;
    if (overflow > 0 || held + rest.length > MAX_RECORD_BYTES) {
      // Past the limit: count what comes until the line ends, keep nothing.
      overflow += held + rest.length;
      pieces = [];
      held = 0;
    } else {
      pieces.push(Buffer.from(rest));
      held += rest.length;
    }
  }
  if (held > 0 || overflow > 0) yield end(Buffer.alloc(0));
}

/** The offset of the first byte that does not belong to well-formed UTF-8 (RFC 3629), for a buffer isUtf8 refused. */
export function invalidUtf8At(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0 || i + need >= bytes.length + (need === 0 ? 1 : 0)) return i;
    if (need > 0 && !isUtf8(bytes.subarray(i, i + need + 1))) return i;
    i += need + 1;
  }
  return bytes.length;
}

/** A CSV record's cells (bytes: the parser never decodes) as text, or the first cell that is not UTF-8. */
function decodeCells(cells: readonly (Buffer | string)[]): string[] | { column: number; offset: number } {
  const out: string[] = [];
  for (const [column, cell] of cells.entries()) {
    // csv-parse hands the first cell after a BOM as text (it decoded it to find the BOM).
    if (typeof cell === 'string') {
      out.push(cell);
      continue;
    }
    if (!isUtf8(cell)) return { column, offset: invalidUtf8At(cell) };
    out.push(cell.toString('utf8'));
  }
  return out;
}

function csvParser(opts: CsvOptions) {
  return parse({
    bom: true,
    delimiter: opts.delimiter ?? ',',
    relax_column_count: true,
    skip_empty_lines: true,
    // A record may span lines (quoted newlines); bound how far one may grow.
    max_record_size: MAX_RECORD_BYTES,
    // Cells as bytes, decoded by decodeCells: invalid UTF-8 is refused, never replaced. `info`: where each record ends.
    encoding: null,
    info: true,
  });
}

/**
 * The records of a CSV upload: the upload and the parser in one pipeline, so that the upload's read
 * error (a part gone under a running import) fails the records instead of going unheard (`pipe` does
 * not forward it: an uncaught error that stopped the process), and a consumer that stops early (a
 * parse error, the header read) closes the upload's file too.
 */
function csvRecords(stream: Readable, opts: CsvOptions): ReturnType<typeof csvParser> {
  const parser = csvParser(opts);
  // The error reaches the consumer through the parser, which the pipeline destroys with it.
  pipeline(stream, parser, () => undefined);
  return parser;
}

type CsvRecord = { record: (Buffer | string)[]; info: { bytes: number } };

/** The first record of a CSV stream (its header), or null when it has none. */
export async function readCsvHeader(stream: Readable, opts: CsvOptions): Promise<string[] | null> {
  const parser = csvRecords(stream, opts);
  try {
    for await (const { record } of parser as AsyncIterable<CsvRecord>) {
      const names = decodeCells(record);
      if (Array.isArray(names)) return names;
      throw new Error(`column ${names.column + 1} of the header is not UTF-8 (byte ${names.offset} of its name): save the file as UTF-8`);
    }
    return null;
  } finally {
    stream.destroy();
    parser.destroy();
  }
}

/** The rows of an upload, in order, numbered from 1 (NDJSON lines; CSV records after the header); `after`: rows already done are skipped unparsed where possible. */
export async function* uploadRows(
  stream: Readable | AsyncIterable<Buffer>,
  format: 'ndjson' | 'csv',
  opts: { csv: CsvOptions; createSchema: TSchema; after?: number; strict?: boolean },
): AsyncGenerator<UploadRow> {
  const rows = format === 'ndjson' ? ndjsonRows(stream, opts.after ?? 0) : csvRows(stream, opts);
  if (!opts.strict) return yield* rows;
  for await (const r of rows) {
    // Strict (docs/imports.md, "Rows"): a field the record does not have refuses the row, named as a request's would be.
    const unknown = 'record' in r ? unknownFields(opts.createSchema, r.record, ['body']) : [];
    yield 'record' in r && unknown.length > 0 ? { row: r.row, refused: { ref: refOfRecord(r.record), detail: unknown.map(unknownFieldIssue) } } : r;
  }
}

async function* ndjsonRows(stream: Readable | AsyncIterable<Buffer>, after: number): AsyncGenerator<UploadRow> {
  let row = 0;
  for await (const next of ndjsonLines(stream)) {
    row++;
    if (row <= after) continue;
    if ('badUtf8' in next) {
      yield {
        row,
        refused: {
          ref: null,
          detail: `The line is not UTF-8 at its byte ${next.badUtf8} (counted from 0): save the file as UTF-8 (a Windows-1252 or Latin-1 export is not)`,
        },
      };
      continue;
    }
    if ('tooLong' in next) {
      yield {
        row,
        refused: { ref: null, detail: `The line is ${next.tooLong} bytes; a record is at most ${MAX_RECORD_BYTES} bytes (1 MiB): is a line end missing?` },
      };
      continue;
    }
    const line = next.text;
    if (line.trim() === '') continue;
    let record: unknown;
    const text = row === 1 && line.charCodeAt(0) === 0xfeff ? line.slice(1) : line;
    try {
      record = JSON.parse(text);
    } catch (err) {
      yield { row, refused: { ref: null, detail: `Malformed JSON body: ${(err as Error).message}` } };
      continue;
    }
    // The text an API body may not carry (NUL, a lone surrogate) is refused here as there, with the same
    // detail: neither engine could store it as the rest of the row's text (PostgreSQL refuses both).
    const checks = checksForJsonText(text);
    const issues = checks ? textIssues(record, ['body'], checks) : [];
    if (issues.length > 0) {
      yield { row, refused: { ref: refOfRecord(record), detail: issues } };
      continue;
    }
    yield { row, record };
  }
}

async function* csvRows(stream: Readable | AsyncIterable<Buffer>, opts: { csv: CsvOptions; createSchema: TSchema; after?: number }): AsyncGenerator<UploadRow> {
  const after = opts.after ?? 0;
  const schema = opts.createSchema as unknown as JsonSchema;
  const source = csvSource(stream);
  const parser = csvRecords(source, opts.csv);
  let header: CsvHeader | null = null;
  let cellSchemas: JsonSchema[][] = [];
  let row = 0;
  try {
    for await (const { record: raw } of parser as AsyncIterable<CsvRecord>) {
      const cells = decodeCells(raw);
      if (!header) {
        // complete read the header already (readCsvHeader): a header that is not UTF-8 never gets here.
        header = csvHeader(Array.isArray(cells) ? cells : [], opts.csv);
        cellSchemas = header.paths.map((p) => (p ? schemasAt(schema, p) : []));
        continue;
      }
      row++;
      if (row <= after) continue;
      if (!Array.isArray(cells)) {
        const name = header.names[cells.column] ?? String(cells.column + 1);
        yield {
          row,
          refused: {
            ref: null,
            detail: `The column ${JSON.stringify(name)} is not UTF-8 at its byte ${cells.offset} (counted from 0): save the file as UTF-8 (a Windows-1252 or Latin-1 export is not)`,
          },
        };
        continue;
      }
      if (cells.length !== header.paths.length) {
        yield {
          row,
          refused: {
            ref: null,
            detail: [
              {
                type: 'value_error',
                loc: ['body'],
                msg: `Value error, the record has ${cells.length} cells but the header has ${header.paths.length} columns`,
              },
            ],
          },
        };
        continue;
      }
      // A NUL in a cell (raw bytes of a CSV can hold one) is refused as an API body's would be.
      const nulAt = cells.findIndex((cell) => cell.includes('\u0000'));
      if (nulAt >= 0) {
        const path = header.paths[nulAt] ?? [header.names[nulAt] ?? String(nulAt)];
        yield { row, refused: { ref: null, detail: textIssues(cells[nulAt], ['body', ...path], { nul: true, surrogates: false }) } };
        continue;
      }
      const record: Record<string, unknown> = {};
      cells.forEach((cell, i) => {
        const path = header!.paths[i];
        // An empty cell is an absent field (docs/imports.md, "Rows").
        if (path && cell !== '') setPath(record, path, cellValue(cellSchemas[i]!, cell));
      });
      yield { row, record: compact(record) };
    }
  } finally {
    source.destroy();
  }
}

/** How many rows an upload has (a pass over it that writes nothing; a CSV that cannot be read fails here, before any row is written). */
/** A CSV upload is parsed from a stream (files.open); NDJSON from a stream or from reused chunks (files.chunks). */
function csvSource(stream: Readable | AsyncIterable<Buffer>): Readable {
  if (!(stream instanceof Readable)) throw new TypeError('a CSV upload is read from a stream (ImportFiles.open), not from reused chunks');
  return stream;
}

export async function countRows(stream: Readable | AsyncIterable<Buffer>, format: 'ndjson' | 'csv', csv: CsvOptions): Promise<number> {
  if (format === 'ndjson') {
    let n = 0;
    for await (const next of ndjsonLines(stream)) if (!('text' in next) || next.text.trim() !== '') n++;
    return n;
  }
  let n = -1;
  for await (const _record of csvRecords(csvSource(stream), csv)) n++;
  return Math.max(0, n);
}
