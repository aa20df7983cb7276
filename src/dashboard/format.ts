import { CELL_DEGREES } from '../domain/grid.js';

/** `2026-03-04 14:05 UTC`: stored times are UTC, and the list pages say so. */
export function utc(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** A time as the location's clock shows it (e.g. `Wed, Mar 4, 2026, 08:00 CST`), for scheduling. */
export function inZone(iso: string, timeZone: string | null | undefined): string {
  if (!timeZone) return utc(iso);
  let f = zoneFormats.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', {
        timeZone,
        weekday: 'short',
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'short',
      });
    } catch {
      return utc(iso);
    }
    zoneFormats.set(timeZone, f);
  }
  return f.format(new Date(iso));
}

/** `08:00–17:00`, or a dash when either end is unknown (unknown is not the same as closed). */
export function hours(open: string | null | undefined, close: string | null | undefined): string {
  if (!open && !close) return 'not given';
  return `${open ?? '?'}–${close ?? '?'}`;
}

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

export function money(amount: number | null | undefined, currency = 'USD'): string {
  if (amount === null || amount === undefined) return '—';
  if (currency === 'USD') return usd.format(amount);
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

export function miles(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return `${Math.round(value).toLocaleString('en-US')} mi`;
}

export function count(n: number): string {
  return n.toLocaleString('en-US');
}

export function label(enumValue: string): string {
  return enumValue.replace(/_/g, ' ').toLowerCase().replace(/^\w/, (c) => c.toUpperCase());
}

export interface CellBox {
  south: number;
  north: number;
  west: number;
  east: number;
}

/** The bounds of a lane grid cell (see modules/lanes/grid.ts: row-major 1-degree cells from 90°S, 180°W). */
export function cellBox(cell: number): CellBox {
  const columns = 360 / CELL_DEGREES;
  const row = Math.floor(cell / columns);
  const col = cell % columns;
  const south = row * CELL_DEGREES - 90;
  const west = col * CELL_DEGREES - 180;
  return { south, north: south + CELL_DEGREES, west, east: west + CELL_DEGREES };
}

const lat = (v: number) => `${Math.abs(v)}°${v < 0 ? 'S' : 'N'}`;
const lon = (v: number) => `${Math.abs(v)}°${v < 0 ? 'W' : 'E'}`;

/** `32°N–33°N, 97°W–96°W` */
export function cellBoxLabel(cell: number): string {
  const b = cellBox(cell);
  return `${lat(b.south)}–${lat(b.north)}, ${lon(b.west)}–${lon(b.east)}`;
}
