/**
 * Benchmark data generator:  npm run bench:seed -- --loads 1000000 [--reset]
 *
 * Fills the database of DATABASE_URL (SQLite path or postgres://) with one organization of realistic
 * data: 2,000 customers, 3,000 carriers, 5,000 locations at real US ZIP codes weighted toward freight
 * markets, and N loads with two to four stops, mixed statuses and equipment, about 70% delivered history
 * with carriers (with their lane history and lane stats). Rows go in through bulk inserts in large
 * transactions, bypassing HTTP, but computed by the same rules as the service (distance estimate,
 * pickup date, delivery date, lane cells). Writes bench/results/seed.json with the organization, an API
 * key and sample references for the scenarios.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { allUsZipCodes } from '../src/geo/postal.js';
import { haversineMiles, timezoneAt } from '../src/geo/index.js';
import { isPostgresUrl, openDataStore, sqlitePathFromUrl } from '../src/lib/db/index.js';
import { newId } from '../src/lib/ids.js';
import { foldCase } from '../src/lib/fold.js';
import { accountsService } from '../src/modules/accounts/accounts.service.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';
import { cellOf } from '../src/domain/grid.js';

const here = dirname(fileURLToPath(import.meta.url));

/** A carrier's share of on-time arrivals (0.70–0.97, fixed per carrier): carriers differ, as scorecards show. */
function carrierReliability(ref: string): number {
  let h = 0;
  for (const ch of ref) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return 0.7 + (h % 28) / 100;
}

/** Milliseconds after the deadline a truck arrives: on time mostly early or just in, a tail late by up to 6 h. */
function actualLateness(rand: () => number, onTime: number): number {
  const r = rand();
  if (r < onTime) return Math.round((-120 + rand() * 130) * 60_000);
  return Math.round((16 + Math.pow(rand(), 2) * 344) * 60_000);
}

/** Freight markets (metro centres) and their relative weight in the generated lanes. */
const MARKETS: [string, number, number, number][] = [
  ['Dallas', 32.78, -96.8, 10],
  ['Houston', 29.76, -95.37, 9],
  ['Chicago', 41.88, -87.63, 10],
  ['Atlanta', 33.75, -84.39, 9],
  ['Los Angeles', 34.05, -118.24, 10],
  ['Ontario CA', 34.06, -117.65, 6],
  ['Memphis', 35.15, -90.05, 6],
  ['Indianapolis', 39.77, -86.16, 6],
  ['Columbus', 39.96, -83.0, 5],
  ['Kansas City', 39.1, -94.58, 5],
  ['St. Louis', 38.63, -90.2, 5],
  ['Nashville', 36.16, -86.78, 5],
  ['Charlotte', 35.23, -80.84, 5],
  ['Jacksonville', 30.33, -81.66, 4],
  ['Miami', 25.76, -80.19, 4],
  ['Phoenix', 33.45, -112.07, 5],
  ['Denver', 39.74, -104.99, 4],
  ['Salt Lake City', 40.76, -111.89, 3],
  ['Seattle', 47.61, -122.33, 4],
  ['Portland', 45.52, -122.68, 3],
  ['Oakland', 37.8, -122.27, 4],
  ['Fresno', 36.74, -119.79, 3],
  ['Laredo', 27.51, -99.51, 4],
  ['San Antonio', 29.42, -98.49, 4],
  ['El Paso', 31.76, -106.49, 3],
  ['Oklahoma City', 35.47, -97.52, 3],
  ['Minneapolis', 44.98, -93.27, 4],
  ['Detroit', 42.33, -83.05, 4],
  ['Cleveland', 41.5, -81.69, 3],
  ['Pittsburgh', 40.44, -80.0, 3],
  ['Harrisburg', 40.27, -76.88, 4],
  ['Newark', 40.74, -74.17, 5],
  ['Baltimore', 39.29, -76.61, 3],
  ['Richmond', 37.54, -77.44, 3],
  ['Savannah', 32.08, -81.09, 3],
  ['Louisville', 38.25, -85.76, 3],
  ['Cincinnati', 39.1, -84.51, 3],
  ['Milwaukee', 43.04, -87.91, 3],
  ['Omaha', 41.26, -95.93, 2],
  ['Boston', 42.36, -71.06, 3],
];

const HISTORY_STATUSES: [string, number][] = [
  ['DELIVERED', 40],
  ['COMPLETED', 20],
  ['PAYMENT_PROCESSING', 5],
  ['ACCOUNTING_REVIEW', 5],
];
const OPEN_STATUSES: [string, number][] = [
  ['ACTIVE', 5],
  ['SPOT', 2],
  ['TENDERED', 2],
  ['TENDER_REJECTED', 1],
];
const OTHER_STATUSES: [string, number][] = [
  ['COVERED', 4],
  ['DISPATCHED', 4],
  ['AT_SHIPPER', 2],
  ['EN_ROUTE', 5],
  ['AT_RECEIVER', 1],
  ['CANCELLED', 3],
  ['ON_HOLD', 1],
];
const EQUIPMENT: [string, number][] = [
  ['DRY_VAN', 60],
  ['REEFER', 25],
  ['FLATBED', 10],
  ['STEPDECK', 3],
  ['POWER_ONLY', 2],
];
const DAY = 86_400_000;

// Company names for the name_contains scenario: words from a few languages (Québec and Mexican names
// among them, with capitals outside ASCII), picked by position so the random sequence stays as it was.
const NAME_WORDS = [
  'Ölwerk',
  'Müller',
  'Québec',
  'Énergie',
  'Transportes',
  'Logística',
  'Northern',
  'Atlantic',
  'Prairie',
  'Summit',
  'Great Lakes',
  'Río Bravo',
  'Señor',
  'Łódź',
  'Blue Ridge',
  'Pacific',
  'Lone Star',
  'Mañana',
  'Saint-Éloi',
  'Ironwood',
];
const companyName = (i: number, kind: string) => `${NAME_WORDS[i % NAME_WORDS.length]} ${NAME_WORDS[(i * 7 + 3) % NAME_WORDS.length]} ${kind} ${i + 1}`;

/** Deterministic pseudo-random numbers (mulberry32), so every seed of a size is the same data. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function weighted<T>(rand: () => number, items: [T, number][]): T {
  const total = items.reduce((s, [, w]) => s + w, 0);
  let r = rand() * total;
  for (const [v, w] of items) {
    r -= w;
    if (r <= 0) return v;
  }
  return items[items.length - 1]![0];
}

/** Inserts rows in bulk: prepared statements in one transaction on SQLite, multi-row VALUES on PostgreSQL. */
interface BulkWriter {
  insert(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}

function sqliteWriter(path: string): BulkWriter {
  const db = new SqliteDatabase(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144');
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    async insert(table, columns, rows) {
      const key = `${table}:${columns.join(',')}`;
      let stmt = statements.get(key);
      if (!stmt) {
        stmt = db.prepare(`insert into ${table} (${columns.join(',')}) values (${columns.map(() => '?').join(',')})`);
        statements.set(key, stmt);
      }
      const s = stmt;
      db.transaction(() => {
        for (const r of rows) s.run(r);
      })();
    },
    async exec(sql) {
      db.exec(sql);
    },
    async close() {
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
    },
  };
}

function postgresWriter(url: string): BulkWriter {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    async insert(table, columns, rows) {
      const perStatement = Math.floor(60_000 / columns.length);
      const client = await pool.connect();
      try {
        await client.query('begin');
        for (let i = 0; i < rows.length; i += perStatement) {
          const chunk = rows.slice(i, i + perStatement);
          const values: unknown[] = [];
          const tuples = chunk.map(
            (r) =>
              `(${r
                .map((v) => {
                  values.push(v);
                  return `$${values.length}`;
                })
                .join(',')})`,
          );
          await client.query(`insert into ${table} (${columns.join(',')}) values ${tuples.join(',')}`, values);
        }
        await client.query('commit');
      } catch (err) {
        await client.query('rollback');
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async close() {
      await pool.end();
    },
  };
}

async function main() {
  const { values } = parseArgs({
    options: { loads: { type: 'string', default: '100000' }, reset: { type: 'boolean', default: false }, out: { type: 'string' } },
  });
  const loadCount = Number(values.loads);
  if (!Number.isInteger(loadCount) || loadCount < 100) throw new Error('--loads must be a whole number of at least 100');
  const databaseUrl = process.env.DATABASE_URL ?? './data/bench.db';
  const postgres = isPostgresUrl(databaseUrl);
  const started = Date.now();
  const log = (msg: string) => process.stderr.write(`[seed ${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);

  if (values.reset) {
    if (postgres) {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      await c.query('drop schema public cascade; create schema public');
      await c.end();
    } else {
      const path = sqlitePathFromUrl(databaseUrl);
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    }
    log('database reset');
  }
  const store = openDataStore(databaseUrl);
  await store.migrate();
  const accounts = accountsService(store);
  const org = await accounts.createOrganization('Benchmark Freight');
  const key = await accounts.createKey(org.id, {
    name: 'bench',
    externalSystem: 'bench',
    scopes: [...SCOPES],
    perMinute: 1_000_000_000,
    perDay: 1_000_000_000,
  });
  await store.close();

  const w = postgres ? postgresWriter(databaseUrl) : sqliteWriter(sqlitePathFromUrl(databaseUrl));
  const rand = rng(loadCount);
  const orgId = org.id;
  const now = Date.now();
  const iso = (t: number) => new Date(t).toISOString();

  // Locations at real ZIP codes: 90% near a freight market (by market weight), 10% anywhere.
  const zips = [...allUsZipCodes()].filter((z) => !['US-AK', 'US-HI', 'US-PR', 'US-GU', 'US-VI', 'US-AS', 'US-MP'].includes(z.state));
  const byMarket = MARKETS.map(([, lat, lon]) => zips.filter((z) => haversineMiles(z, { latitude: lat, longitude: lon }) < 60));
  const marketWeights: [number, number][] = MARKETS.map((m, i) => [i, m[3]]);
  const locations: { id: string; ref: string; market: number; latitude: number; longitude: number }[] = [];
  const locationRows: unknown[][] = [];
  for (let i = 0; i < 5000; i++) {
    const anywhere = rand() < 0.1;
    const market = anywhere ? -1 : weighted(rand, marketWeights);
    const pool = anywhere ? zips : byMarket[market]!;
    const z = pool[Math.floor(rand() * pool.length)]!;
    const id = newId('loc', now - 800 * DAY + i * 1000);
    const ref = `LOC-${String(i + 1).padStart(5, '0')}`;
    locations.push({ id, ref, market, latitude: z.latitude, longitude: z.longitude });
    const t = iso(now - 800 * DAY + i * 1000);
    locationRows.push([
      id,
      orgId,
      ref,
      `Facility ${z.zip}`,
      foldCase(`Facility ${z.zip}`),
      null,
      null,
      null,
      null,
      z.state,
      z.zip,
      'US',
      z.latitude,
      z.longitude,
      null,
      null,
      '07:00',
      '17:00',
      null,
      null,
      null,
      timezoneAt(z.latitude, z.longitude),
      'postal_code',
      t,
      t,
    ]);
  }
  await w.insert(
    'locations',
    [
      'id',
      'org_id',
      'external_reference_id',
      'name',
      'name_folded',
      'address_line1',
      'address_line2',
      'city',
      'city_folded',
      'state',
      'postal_code',
      'country',
      'latitude',
      'longitude',
      'email',
      'phone_number',
      'weekday_open_hours',
      'weekday_close_hours',
      'weekend_open_hours',
      'weekend_close_hours',
      'internal_notes',
      'timezone',
      'geocode_source',
      'created_at',
      'updated_at',
    ],
    locationRows,
  );
  const locationsByMarket = MARKETS.map((_, m) => locations.filter((l) => l.market === m));

  const customers: string[] = [];
  const customerRows: unknown[][] = [];
  for (let i = 0; i < 2000; i++) {
    const id = newId('cust', now - 800 * DAY + i);
    customers.push(id);
    const t = iso(now - 800 * DAY + i * 1000);
    const name = companyName(i, 'Shipper');
    customerRows.push([
      id,
      orgId,
      `CUST-${String(i + 1).padStart(5, '0')}`,
      name,
      foldCase(name),
      null,
      null,
      null,
      1,
      i % 3 === 0 ? 'consignee' : 'shipper',
      t,
      t,
    ]);
  }
  await w.insert(
    'customers',
    [
      'id',
      'org_id',
      'external_reference_id',
      'name',
      'name_folded',
      'reference_number',
      'domain',
      'phone',
      'is_active',
      'customer_type',
      'created_at',
      'updated_at',
    ],
    customerRows,
  );
  const carriers: { id: string; ref: string }[] = [];
  const carrierRows: unknown[][] = [];
  for (let i = 0; i < 3000; i++) {
    const id = newId('carrier', now - 800 * DAY + i);
    const ref = `CAR-${String(i + 1).padStart(5, '0')}`;
    carriers.push({ id, ref });
    const t = iso(now - 800 * DAY + i * 1000);
    const name = companyName(i, 'Trucking');
    carrierRows.push([id, orgId, ref, name, foldCase(name), `MC${100000 + i}`, `DOT${300000 + i}`, null, null, null, null, null, null, null, null, t, t]);
  }
  await w.insert(
    'carriers',
    [
      'id',
      'org_id',
      'external_reference_id',
      'name',
      'name_folded',
      'mc_number',
      'dot_number',
      'phone_number',
      'email',
      'address_line1',
      'address_line2',
      'address_city',
      'address_state',
      'address_postal_code',
      'address_country',
      'created_at',
      'updated_at',
    ],
    carrierRows,
  );
  log('customers, carriers, locations written');

  const pickLocation = () => {
    const m = weighted(rand, marketWeights);
    const list = locationsByMarket[m]!;
    return list.length > 0 ? list[Math.floor(rand() * list.length)]! : locations[Math.floor(rand() * locations.length)]!;
  };
  // Carriers specialise: each market pair is mostly run by a few dozen carriers.
  const carrierFor = (a: number, b: number) => carriers[(Math.abs(a * 7919 + b * 104729) + Math.floor(rand() * 40) * 61) % carriers.length]!;

  const sample = { history: [] as string[], open: [] as string[] };
  const BATCH = 20_000;
  const loadCols = [
    'id',
    'org_id',
    'external_reference_id',
    'status',
    'equipment_type',
    'transport_mode',
    'description',
    'customer_id',
    'carrier_id',
    'weight',
    'weight_uom',
    'total_distance',
    'total_distance_source',
    'max_buy_rate',
    'max_buy_rate_source',
    'sales_rep',
    'dispatcher_rep',
    'assigned_dispatcher',
    'actual_dispatcher',
    'operation_user',
    'account_manager',
    'pickup_at',
    'status_updated_at',
    'delivered_at',
    'created_at',
    'updated_at',
    'delivery_deadline',
  ];
  const stopCols = [
    'id',
    'org_id',
    'load_id',
    'stop_number',
    'stop_type',
    'location_id',
    'early_arrival',
    'late_arrival',
    'actual_arrival',
    'actual_departure',
    'arrival_deadline',
  ];
  const rateCols = ['id', 'org_id', 'load_id', 'position', 'rate_entity', 'amount', 'currency', 'rate_type', 'description'];
  const laneCols = [
    'load_id',
    'org_id',
    'carrier_id',
    'carrier_external_reference_id',
    'equipment_type',
    'origin_location_id',
    'destination_location_id',
    'origin_latitude',
    'origin_longitude',
    'destination_latitude',
    'destination_longitude',
    'origin_cell',
    'destination_cell',
    'delivered_at',
    'carrier_rate_total',
    'carrier_rate_currency',
    'total_distance',
    'stop_outcomes',
  ];
  const span = 730 * DAY;
  const marketLanes = new Set<string>();
  for (let start = 0; start < loadCount; start += BATCH) {
    const loads: unknown[][] = [];
    const stops: unknown[][] = [];
    const rates: unknown[][] = [];
    const lanes: unknown[][] = [];
    for (let i = start; i < Math.min(loadCount, start + BATCH); i++) {
      const created = now - span + Math.floor((i / loadCount) * span);
      const id = newId('load', created);
      const ref = `LOAD-${String(i + 1).padStart(8, '0')}`;
      const kind = rand();
      const status = kind < 0.7 ? weighted(rand, HISTORY_STATUSES) : kind < 0.8 ? weighted(rand, OPEN_STATUSES) : weighted(rand, OTHER_STATUSES);
      const history = kind < 0.7;
      const equipment = weighted(rand, EQUIPMENT);
      const origin = pickLocation();
      let destination = pickLocation();
      if (destination.market === origin.market) destination = pickLocation();
      const stopCount = 2 + (rand() < 0.25 ? 1 : 0) + (rand() < 0.1 ? 1 : 0);
      const path = [origin];
      for (let s = 2; s < stopCount; s++) path.push(rand() < 0.5 ? pickLocation() : origin);
      path.push(destination);
      const pickupAt = created + Math.floor(rand() * 5 * DAY);
      let miles = 0;
      for (let s = 1; s < path.length; s++) miles += haversineMiles(path[s - 1]!, path[s]!);
      const distance = Math.round(miles * 1.2 * 10) / 10;
      const transitMs = Math.max(6, miles / 45) * 3_600_000;
      const deliveredAt = iso(pickupAt + transitMs + 2 * 3_600_000);
      const carrier =
        history || status === 'COVERED' || status === 'DISPATCHED' || status === 'EN_ROUTE' ? carrierFor(origin.market, destination.market) : null;
      const t = iso(created);
      loads.push([
        id,
        orgId,
        ref,
        status,
        equipment,
        rand() < 0.9 ? 'FTL' : 'LTL',
        null,
        customers[Math.floor(rand() * customers.length)]!,
        carrier?.id ?? null,
        20000 + Math.floor(rand() * 24000),
        'lbs',
        distance,
        'estimated',
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        iso(pickupAt),
        t,
        history ? deliveredAt : null,
        t,
        t,
        deliveredAt,
      ]);
      // D14 actuals as real ones look: delivered loads (and the stops an on-the-way load has passed) mostly
      // on time, a tail late, some never reported; the carrier's own reliability shifts the odds.
      const reported = history ? path.length : status === 'EN_ROUTE' || status === 'AT_RECEIVER' ? 1 : 0;
      const outcomes: string[] = [];
      path.forEach((loc, s) => {
        const type = s === 0 ? 'Pickup' : s === path.length - 1 ? 'Delivery' : rand() < 0.5 ? 'Pickup' : 'Delivery';
        const early = pickupAt + (s / (path.length - 1)) * transitMs;
        const late = s === path.length - 1 ? pickupAt + transitMs + 2 * 3_600_000 : early + 2 * 3_600_000;
        let arrival: number | null = null;
        if (s < reported && rand() >= 0.08) arrival = late + actualLateness(rand, carrier ? carrierReliability(carrier.ref) : 0.85);
        stops.push([
          newId('stop', created),
          orgId,
          id,
          s + 1,
          type,
          loc.id,
          iso(early),
          iso(late),
          arrival === null ? null : iso(arrival),
          arrival === null ? null : iso(arrival + (45 + rand() * 120) * 60_000),
          arrival === null ? null : iso(late),
        ]);
        outcomes.push(`${type === 'Pickup' ? 'p' : 'd'}${arrival === null ? '' : Math.round((arrival - late) / 1000)}`);
      });
      const carrierAmount = Math.round(distance * (1.6 + rand() * 1.4) * 100) / 100;
      if (history || rand() < 0.5) {
        rates.push([newId('rate', created), orgId, id, 0, 'CUSTOMER', Math.round(carrierAmount * 1.18 * 100) / 100, 'USD', 'LINEHAUL', null]);
        if (carrier) rates.push([newId('rate', created), orgId, id, 1, 'CARRIER', carrierAmount, 'USD', 'LINEHAUL', null]);
      }
      if (history && carrier) {
        lanes.push([
          id,
          orgId,
          carrier.id,
          carrier.ref,
          equipment,
          origin.id,
          destination.id,
          origin.latitude,
          origin.longitude,
          destination.latitude,
          destination.longitude,
          cellOf(origin.latitude, origin.longitude),
          cellOf(destination.latitude, destination.longitude),
          deliveredAt,
          carrierAmount,
          'USD',
          distance,
          outcomes.join(','),
        ]);
        if (origin.market >= 0 && destination.market >= 0) marketLanes.add(`${origin.market}|${destination.market}|${equipment}`);
        if (sample.history.length < 2000 && rand() < 0.05) sample.history.push(ref);
      }
      if (!history && ['ACTIVE', 'SPOT', 'TENDERED', 'TENDER_REJECTED'].includes(status) && sample.open.length < 1000 && rand() < 0.2) sample.open.push(ref);
    }
    await w.insert('loads', loadCols, loads);
    await w.insert('load_stops', stopCols, stops);
    await w.insert('load_rates', rateCols, rates);
    await w.insert('lane_history', laneCols, lanes);
    log(`${Math.min(loadCount, start + BATCH)} loads`);
  }
  // D8/D14 market snapshots: every month of the two years, on each market pair and equipment with history
  // (market centre to market centre: within 60 miles of the facilities), around 2.00–2.60 $/mi.
  const snapshotCols = [
    'id',
    'org_id',
    'equipment_type',
    'origin_label',
    'destination_label',
    'origin_latitude',
    'origin_longitude',
    'destination_latitude',
    'destination_longitude',
    'origin_state',
    'destination_state',
    'origin_cell',
    'destination_cell',
    'rate_per_mile',
    'rate_per_mile_low',
    'rate_per_mile_high',
    'currency',
    'source',
    'as_of',
    'created_at',
  ];
  let snapshots: unknown[][] = [];
  for (const key of marketLanes) {
    const [a, b, equipment] = key.split('|') as [string, string, string];
    const [oName, oLat, oLon] = MARKETS[Number(a)]!;
    const [dName, dLat, dLon] = MARKETS[Number(b)]!;
    for (let m = 0; m < 25; m++) {
      const asOf = now - span + m * 30 * DAY;
      const rate = Math.round((2 + rand() * 0.6) * 100) / 100;
      snapshots.push([
        newId('mrs', asOf),
        orgId,
        equipment,
        oName,
        dName,
        oLat,
        oLon,
        dLat,
        dLon,
        null,
        null,
        cellOf(oLat, oLon),
        cellOf(dLat, dLon),
        rate,
        Math.round(rate * 0.9 * 100) / 100,
        Math.round(rate * 1.12 * 100) / 100,
        'USD',
        'bench',
        iso(asOf),
        iso(asOf),
      ]);
      if (snapshots.length >= BATCH) {
        await w.insert('market_rate_snapshots', snapshotCols, snapshots);
        snapshots = [];
      }
    }
  }
  if (snapshots.length > 0) await w.insert('market_rate_snapshots', snapshotCols, snapshots);
  log(`${marketLanes.size * 25} market snapshots`);
  await w.exec(
    `insert into lane_stats (org_id, equipment_type, origin_cell, destination_cell, load_count, carrier_count, last_delivered_at, refreshed_at)
     select org_id, equipment_type, origin_cell, destination_cell, count(*), count(distinct carrier_id), max(delivered_at), '${iso(now)}'
     from lane_history where org_id = '${orgId}' group by org_id, equipment_type, origin_cell, destination_cell`,
  );
  await w.exec(
    `insert into lane_carriers (org_id, equipment_type, origin_cell, destination_cell, carrier_id, loads)
     select org_id, equipment_type, origin_cell, destination_cell, carrier_id, count(*)
     from lane_history where org_id = '${orgId}' group by org_id, equipment_type, origin_cell, destination_cell, carrier_id`,
  );
  await w.exec(`delete from load_status_counts where org_id = '${orgId}'`);
  await w.exec(
    `insert into load_status_counts (org_id, status, n) select org_id, status, count(*) from loads where org_id = '${orgId}' group by org_id, status`,
  );
  // PostgreSQL: VACUUM sets the visibility map, so the lane query's index-only scans stay index-only.
  await w.exec(postgres ? 'vacuum analyze' : 'analyze');
  await w.close();
  const seconds = (Date.now() - started) / 1000;
  log(`done: ${loadCount} loads in ${seconds.toFixed(1)} s`);
  const out = values.out ?? join(here, 'results', 'seed.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    JSON.stringify({ databaseUrl, orgId, key: key.key, loads: loadCount, seconds, sampleHistoryLoads: sample.history, sampleOpenLoads: sample.open }, null, 2),
  );
  process.stdout.write(`${JSON.stringify({ orgId, loads: loadCount, seconds, out })}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
