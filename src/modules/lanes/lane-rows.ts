import type { LaneHistoryRow } from './lane-area.repo.js';

/**
 * One lane's history rows as the recommendations read them (laneCandidates), kept in memory in columns,
 * for that one lane: each row's proximity weight to the lane instead of its two ends (the rows beyond
 * the radius, weight 0, left out: they count for nothing), typed arrays for the numbers, each carrier,
 * currency and weight once, the stop outcomes as one text. About 50 bytes a row, where the same rows as
 * objects hold about 350 (three objects, five strings and four boxed numbers each). `unpackLaneRows`
 * gives back the rows within the radius, equal to the ones packed field for field and in the same order,
 * with their weights, so whatever is worked out from them (the ranking's sums included) is the same to
 * the last bit.
 */
export interface PackedLaneRows {
  readonly count: number;
  /** The distinct proximity weights; `proximityOf[i]` is row i's. */
  readonly proximities: readonly number[];
  readonly proximityOf: Uint8Array;
  /** Distinct (carrier id, carrier reference) pairs; `carrierOf[i]` is row i's. */
  readonly carriers: readonly { id: string; ref: string }[];
  readonly carrierOf: Uint32Array;
  readonly deliveredAtMs: Float64Array;
  /** Rows whose delivery date is not the ISO text of its instant (kept as read); empty when every one is. */
  readonly deliveredAtAsRead: ReadonlyMap<number, string>;
  /** NaN where null. */
  readonly carrierRateTotal: Float64Array;
  readonly currencies: readonly (string | null)[];
  readonly currencyOf: Uint16Array;
  /** NaN where null. */
  readonly totalDistance: Float64Array;
  /** Every row's stop outcomes, one after another; row i's end at `outcomeEnds[i]`. */
  readonly outcomes: string;
  readonly outcomeEnds: Uint32Array;
}

/**
 * The ends of the rows given back: the rows carry their proximity weight instead (`unpackLaneRows`), and
 * a distance from here is NaN, so a weight worked out from it again would be 0, never a wrong one.
 */
export const ENDS_NOT_KEPT: { readonly latitude: number; readonly longitude: number } = Object.freeze({ latitude: Number.NaN, longitude: Number.NaN });

/**
 * The carriers of every kept lane, each (id, reference) once: a carrier runs many lanes, and its two texts
 * as read are new strings in every lane's rows (about 100 bytes a carrier a lane otherwise). Started
 * again past `max` carriers (what was kept keeps its own).
 */
export function carrierPairs(max = 50_000) {
  const pairs = new Map<string, { id: string; ref: string }>();
  return (id: string, ref: string): { id: string; ref: string } => {
    const key = `${id}\u0000${ref}`;
    let pair = pairs.get(key);
    if (!pair) {
      if (pairs.size >= max) pairs.clear();
      pairs.set(key, (pair = { id, ref }));
    }
    return pair;
  };
}

/**
 * The rows of `rows` whose `proximity` (the ranking's weight to the lane, in the rows' order) is not 0,
 * packed; `pairOf` gives the carriers' shared (id, reference) pairs (carrierPairs).
 */
export function packLaneRows(
  all: readonly LaneHistoryRow[],
  proximity: Float64Array,
  pairOf: (id: string, ref: string) => { id: string; ref: string } = (id, ref) => ({ id, ref }),
): PackedLaneRows {
  const rows = all.filter((_, i) => proximity[i] !== 0);
  const weights = proximity.filter((w) => w !== 0);
  const n = rows.length;
  const proximityIndex = new Map<number, number>();
  const proximities: number[] = [];
  const carrierIndex = new Map<string, number>();
  const carriers: { id: string; ref: string }[] = [];
  const currencyIndex = new Map<string | null, number>();
  const currencies: (string | null)[] = [];
  const packed = {
    count: n,
    proximities,
    proximityOf: new Uint8Array(n),
    carriers,
    carrierOf: new Uint32Array(n),
    deliveredAtMs: new Float64Array(n),
    deliveredAtAsRead: new Map<number, string>(),
    carrierRateTotal: new Float64Array(n),
    currencies,
    currencyOf: new Uint16Array(n),
    totalDistance: new Float64Array(n),
    outcomes: '',
    outcomeEnds: new Uint32Array(n),
  };
  const outcomes: string[] = new Array(n);
  let length = 0;
  for (let i = 0; i < n; i++) {
    const r = rows[i]!;
    const pair = `${r.carrierId}\u0000${r.carrierRef}`;
    let c = carrierIndex.get(pair);
    if (c === undefined) {
      carrierIndex.set(pair, (c = carriers.length));
      carriers.push(pairOf(r.carrierId, r.carrierRef));
    }
    packed.carrierOf[i] = c;
    let w = proximityIndex.get(weights[i]!);
    if (w === undefined) {
      proximityIndex.set(weights[i]!, (w = proximities.length));
      proximities.push(weights[i]!);
    }
    packed.proximityOf[i] = w;
    packed.deliveredAtMs[i] = r.deliveredAtMs;
    if (!(Number.isFinite(r.deliveredAtMs) && new Date(r.deliveredAtMs).toISOString() === r.deliveredAt)) packed.deliveredAtAsRead.set(i, r.deliveredAt);
    packed.carrierRateTotal[i] = r.carrierRateTotal ?? Number.NaN;
    const currency = r.carrierRateCurrency ?? null;
    let k = currencyIndex.get(currency);
    if (k === undefined) {
      currencyIndex.set(currency, (k = currencies.length));
      currencies.push(currency);
    }
    packed.currencyOf[i] = k;
    packed.totalDistance[i] = r.totalDistance ?? Number.NaN;
    outcomes[i] = r.stopOutcomes;
    length += r.stopOutcomes.length;
    packed.outcomeEnds[i] = length;
  }
  packed.outcomes = outcomes.join('');
  return packed;
}

/**
 * About how many bytes `p` holds: 35 a row in typed arrays, the stop outcomes' text (a load may have up
 * to 100 stops, so a row's outcomes from a few characters to over a thousand), the delivery dates kept
 * as read and the per-lane lists.
 */
export function packedBytes(p: PackedLaneRows): number {
  let asRead = 0;
  for (const text of p.deliveredAtAsRead.values()) asRead += 40 + text.length;
  return 200 + 35 * p.count + p.outcomes.length + asRead + 8 * (p.carriers.length + p.currencies.length + p.proximities.length);
}

/**
 * The rows packed, as new objects (a caller may keep or change them without touching what is kept), and
 * their proximity weights; their ends are ENDS_NOT_KEPT.
 */
export function unpackLaneRows(p: PackedLaneRows): { rows: LaneHistoryRow[]; proximity: Float64Array } {
  const out: LaneHistoryRow[] = new Array(p.count);
  const proximity = new Float64Array(p.count);
  let start = 0;
  for (let i = 0; i < p.count; i++) {
    proximity[i] = p.proximities[p.proximityOf[i]!]!;
    const carrier = p.carriers[p.carrierOf[i]!]!;
    const ms = p.deliveredAtMs[i]!;
    const rate = p.carrierRateTotal[i]!;
    const miles = p.totalDistance[i]!;
    const end = p.outcomeEnds[i]!;
    out[i] = {
      carrierId: carrier.id,
      carrierRef: carrier.ref,
      origin: ENDS_NOT_KEPT,
      destination: ENDS_NOT_KEPT,
      deliveredAt: p.deliveredAtAsRead.get(i) ?? new Date(ms).toISOString(),
      deliveredAtMs: ms,
      carrierRateTotal: Number.isNaN(rate) ? null : rate,
      carrierRateCurrency: p.currencies[p.currencyOf[i]!]!,
      totalDistance: Number.isNaN(miles) ? null : miles,
      stopOutcomes: p.outcomes.slice(start, end),
    };
    start = end;
  }
  return { rows: out, proximity };
}
