import { CELL_DEGREES } from '../domain/grid.js';
import { locateSubdivision, mainPlaceIn, nearestPlace } from '../geo/index.js';

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
  return enumValue
    .replace(/_/g, ' ')
    .toLowerCase()
    .replace(/^\w/, (c) => c.toUpperCase());
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

/** `US-TX` → `TX`: a place's state as people write it after a city. */
const stateShort = (code: string) => code.replace(/^[A-Z]{2}-/, '');

/**
 * `near Dallas, TX`: the nearest place (US ZIP table, src/geo/places.ts) to a location that has no
 * city, e.g. one sent with only latitude and longitude; null when it has a city, or no place is
 * within 50 miles, or it is outside the US (no offline city data there).
 */
export function nearCity(l: { city: string | null; latitude: number; longitude: number; country?: string | null }): string | null {
  if (l.city) return null;
  const p = nearestPlace(Number(l.latitude), Number(l.longitude), { country: l.country ?? null });
  return p ? `near ${p.city}, ${stateShort(p.state)}` : null;
}

export interface CellArea {
  /** `Dallas, TX` (the cell's main place), else the subdivision at its centre (`Ontario`), else its box. */
  name: string;
  /** `near Dallas, TX` or `in Ontario`; null when only the box names it. */
  phrase: string | null;
  /** Where the area is drawn on a map: the main place, else the cell's centre. */
  latitude: number;
  longitude: number;
}

/**
 * The area a lane's grid cell stands for: its main place (the place with the most US ZIP codes in
 * the cell: Dallas, not Irving), else the state or province at its centre, else its box.
 */
export function cellArea(cell: number): CellArea {
  const b = cellBox(cell);
  const place = mainPlaceIn(b);
  if (place) {
    const name = `${place.city}, ${stateShort(place.state)}`;
    return { name, phrase: `near ${name}`, latitude: place.latitude, longitude: place.longitude };
  }
  const centre = { latitude: (b.south + b.north) / 2, longitude: (b.west + b.east) / 2 };
  const region = locateSubdivision(centre.latitude, centre.longitude);
  return region ? { name: region.name, phrase: `in ${region.name}`, ...centre } : { name: cellBoxLabel(cell), phrase: null, ...centre };
}
