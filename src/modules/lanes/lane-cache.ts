import type { Coordinates } from '../../geo/index.js';
import type { LaneSnapshot } from '../../domain/lane.js';
import type { LaneMarketRate } from '../../domain/market.js';
import type { OrgVersions } from '../../lib/db/versions.js';
import type { CacheCounters } from '../../lib/http/read-cache.js';
import { boundedMemo } from '../../lib/memo.js';
import { carrierPairs, packedBytes, packLaneRows, unpackLaneRows } from './lane-rows.js';
import type { LaneHistoryRow } from './lane-area.repo.js';

/**
 * Everything the lanes keep in memory between requests, and the one rule that makes it right.
 *
 * THE RULE. An entry is keyed by the organization and the lane (equipment type and the two places'
 * coordinates; the history rows also by the radius they were read at), and kept with the text of the
 * organization's counters it was read under (src/lib/db/versions.ts, `org_versions`). It is used only
 * while those counters are unchanged; any other counters make it stale (it is read again and replaced).
 * The counters are read FIRST, the rows after: a write committed between the two is at worst newer than
 * the counters it is kept under, never older. Every write that changes what an entry holds moves a
 * counter in its own transaction (any process):
 * - market snapshots (the latest on a lane, a lane's history of them): `market_rates`, moved by a
 *   market-rate write (the only write that inserts snapshots);
 * - a lane's history rows: `lane_history` and `carriers` (historyVersionOf): every transaction that
 *   changes a history row (a load's, or a moved place's: migration 0022), sets the on-time grace, or
 *   writes a carrier (the rows name carriers). A write of an open load changes no history and moves
 *   neither.
 * So an entry under the current counters is what a read would find. Nothing is kept inside a writing
 * transaction's view: callers pass no counters there (a transaction that priced loads before its own
 * market write commits would keep its uncommitted snapshot under the old counter; only the market-rate
 * write inserts snapshots, and its answer and event are the snapshot's).
 *
 * The three memos are bounded (least lately used out first); the lane rows can be switched off
 * (READ_CACHE=off), the market ones are always on.
 */

/** What a lane's history rows can change with, as one text: the organization's `lane_history` and `carriers` counters. */
export const historyVersionOf = (v: Pick<OrgVersions, 'lane_history' | 'carriers'>): string => `${v.lane_history}.${v.carriers}`;

// Lanes whose latest market snapshot is kept (a key of about 80 characters and a small entry each).
const MARKET_LATEST_MAX = 20_000;
// Lanes whose market history is kept for their evidence, and the snapshots kept in all (about 100 bytes
// each: some 10 MB). Two years of monthly snapshots are about 25 a lane; a lane among dense feeds (weekly,
// many market pairs within its radius) can have thousands, so the bound is on the snapshots too.
const MARKET_HISTORY_MAX = 2_000;
const MARKET_HISTORY_SNAPSHOTS_MAX = 100_000;
// Lanes whose history rows are kept for their open loads' GETs, and the bytes kept in all (packedBytes:
// about 50 a row of two or three stops). The million-load benchmark's 1,000 open loads are 1,000 lanes
// of about 460 rows, some 23 MB (the least lately used lane goes first: a cycle through more than the
// bound would never hit).
const LANE_ROWS_MAX = 20_000;
const LANE_ROWS_BYTES_MAX = 32 * 1024 * 1024;

/** A bounded memo whose entries carry the counters they were read under (THE RULE above). */
function versionedMemo<V>(opts: { maxEntries: number; maxWeight?: number; weight?: (value: V) => number }) {
  const weight = opts.weight;
  const memo = boundedMemo<{ version: string; value: V }>({
    maxEntries: opts.maxEntries,
    maxWeight: opts.maxWeight,
    weight: weight ? (e) => weight(e.value) : undefined,
  });
  return {
    /** The entry, when it was kept under `version`; undefined when absent or stale. */
    get(key: string, version: string): { value: V } | undefined {
      const kept = memo.get(key);
      return kept && kept.version === version ? kept : undefined;
    },
    set(key: string, version: string, value: V): void {
      memo.set(key, { version, value });
    },
  };
}

/** The key of a lane in an organization: equipment type and the two places. */
export const laneKeyOf = (orgId: string, equipmentType: string, origin: Coordinates, destination: Coordinates) =>
  `${orgId}|${equipmentType}|${origin.latitude},${origin.longitude}|${destination.latitude},${destination.longitude}`;

/** A lane's history rows as read (laneCandidates) with each row's proximity weight to the lane. */
export interface WeighedRows {
  rows: LaneHistoryRow[];
  /** PostgreSQL's on-time grace read with the rows; never kept (a hit reads it again beside the cards). */
  graceMinutes?: number | null;
  proximity?: Float64Array;
}

export function laneCache(opts: { keepLaneRows?: boolean; laneRowsCounters?: CacheCounters } = {}) {
  /**
   * The latest snapshot per lane for a market max_buy_rate (docs/api.md, "Loads"). A changed batch's
   * hundred open loads were a hundred lane reads of 400 cell pairs each, about 0.6 ms apiece on PostgreSQL
   * at 160,000 snapshots, in every batch's answers and every open load's GET.
   */
  const marketLatest = versionedMemo<LaneSnapshot | null>({ maxEntries: MARKET_LATEST_MAX });
  /**
   * The market history of a lane (its evidence's price against the market): an open load's GET read the
   * lane's fifty-odd snapshots every time (0.2 ms on SQLite, 0.8 ms on PostgreSQL at a million loads).
   */
  const marketHistory = versionedMemo<LaneMarketRate[]>({
    maxEntries: MARKET_HISTORY_MAX,
    maxWeight: MARKET_HISTORY_SNAPSHOTS_MAX,
    weight: (onLane) => onLane.length,
  });
  /**
   * A lane's history rows, packed in columns (lane-rows.ts) with their proximity weights to the lane. An
   * open load's GET read the same 400-odd rows of its lane each time: about 1.2 ms of SQLite's 2.7 a
   * request at a million loads, and on PostgreSQL the largest statement and the JSON parsed from it.
   */
  const laneRows = opts.keepLaneRows
    ? versionedMemo<ReturnType<typeof packLaneRows>>({ maxEntries: LANE_ROWS_MAX, maxWeight: LANE_ROWS_BYTES_MAX, weight: packedBytes })
    : null;
  const counters = opts.laneRowsCounters ?? { hit() {}, miss() {} };
  const carrierPair = carrierPairs();

  return {
    marketLatest,

    /** A lane's market snapshots on the lane under the organization's market counter; `read` on a miss. */
    async marketHistory(key: string, marketVersion: number, read: () => Promise<LaneMarketRate[]>): Promise<LaneMarketRate[]> {
      const version = String(marketVersion);
      const kept = marketHistory.get(key, version);
      if (kept) return kept.value;
      const onLane = await read();
      marketHistory.set(key, version, onLane);
      return onLane;
    },

    /**
     * A lane's history rows (`key`: laneKeyOf and the radius) under `historyVersion` (historyVersionOf);
     * `read` on a miss (rows and their proximity weights). No counters (inside a writing transaction) or
     * the memo off: always `read`.
     */
    async laneRows(key: string, historyVersion: string | undefined, read: () => Promise<WeighedRows & { proximity: Float64Array }>): Promise<WeighedRows> {
      if (!laneRows || historyVersion === undefined) return read();
      const kept = laneRows.get(key, historyVersion);
      if (kept) {
        counters.hit();
        return unpackLaneRows(kept.value);
      }
      counters.miss();
      const found = await read();
      laneRows.set(key, historyVersion, packLaneRows(found.rows, found.proximity, carrierPair));
      return found;
    },
  };
}

export type LaneCache = ReturnType<typeof laneCache>;
