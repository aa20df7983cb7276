import type { ImportsTable } from '../../lib/db/types.js';
import type { CsvOptions } from './imports.header.js';
import { FINISHED, type Import } from './imports.schema.js';

/** What an import was created with beside its columns: its CSV options, and whether it is strict. */
export const optionsOf = (row: Pick<ImportsTable, 'options'>): { csv?: CsvOptions; strict?: boolean } =>
  row.options ? (JSON.parse(row.options) as { csv?: CsvOptions; strict?: boolean }) : {};

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/** The import as the API answers it: its counts, and the progress worked out from them (`now` for a running one). */
export function presentImport(row: ImportsTable, now: Date): Import {
  const total = num(row.rows_total);
  const processed = Number(row.rows_processed);
  const finished = FINISHED.has(row.status);
  const end = row.finished_at ? Date.parse(row.finished_at) : now.getTime();
  const seconds = row.started_at ? (end - Date.parse(row.started_at)) / 1000 : 0;
  const rate = seconds > 0 && processed > 0 ? processed / seconds : null;
  let eta: number | null = null;
  if (finished) eta = 0;
  else if (total !== null && rate) eta = Math.ceil((total - processed) / rate);
  let percent: number | null = total === null ? null : total === 0 ? 100 : Math.floor((processed / total) * 1000) / 10;
  if (row.status === 'completed' || row.status === 'completed_with_errors') percent = 100;
  return {
    id: row.id,
    resource: row.resource,
    format: row.format,
    emit_events: row.emit_events,
    operation: row.operation,
    strict: optionsOf(row).strict === true,
    status: row.status,
    parts: row.parts,
    bytes_total: Number(row.bytes_total),
    rows_total: total,
    rows_processed: processed,
    rows_succeeded: Number(row.rows_succeeded),
    rows_failed: Number(row.rows_failed),
    percent,
    rows_per_second: rate === null ? null : Math.round(rate * 10) / 10,
    eta_seconds: eta,
    error: row.error,
    created_at: row.created_at,
    updated_at: row.updated_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}
