/**
 * The floor under an import's rows per second: what the database alone takes to store the rows of N
 * history loads, with none of the service around it (no parsing, no checks, no references to look up, no
 * lane stats, no checkpoint row, no HTTP). If this is below a target, no change to the service meets it.
 *
 *   npx tsx bench/import-floor.bench.ts [--db sqlite|postgres|both] [--loads 1000000] [--chunk 1000] [--variants indexed,bare]
 *
 * For each engine: bench/imports.bench.ts imports 1,000 history loads through the service into a fresh
 * database (kept, LANEBRIDGE_BENCH_KEEP=1), so the schema is the migrations' and the rows are exactly what
 * the service writes for that file (loads, their stops and rates, the lane history of the delivered
 * ones). Those rows are the templates: load i is a copy of template i mod 1,000 with new ids (the
 * service's), a new reference and created/updated now. They are written `--chunk` loads per
 * transaction, as the import runner's largest chunk, in the service's statements:
 *   - SQLite: multi-row INSERTs of 100 rows per table, the service's pragmas (WAL, synchronous NORMAL,
 *     16 MiB cache, foreign keys on) and its checkpoint thread (src/lib/db/sqlite-checkpoints.ts, with
 *     its catch-up between chunks);
 *   - PostgreSQL: one `insert … select from unnest(…)` per table and chunk on one connection, as
 *     src/lib/db/bulk.ts.
 * Variants: `indexed`, the schema as the migrations leave it; `bare`, every secondary index and foreign
 * key dropped first (the tables with their primary keys and unique constraints only): what the indexes
 * that the API's reads need cost.
 * Figures: loads per second (wall), microseconds per load in each table's statements and the commit,
 * this process's CPU per load, and on PostgreSQL the backend's CPU per load (/proc).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { newId, type IdKind } from '../src/lib/ids.js';
import { backgroundCheckpoints } from '../src/lib/db/sqlite-checkpoints.js';
import { PG_ADMIN_URL } from './scratch-databases.js';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    loads: { type: 'string', default: '1000000' },
    chunk: { type: 'string', default: '1000' },
    variants: { type: 'string', default: 'indexed,bare' },
  },
});
const LOADS = Number(args.loads);
const CHUNK = Number(args.chunk);
const TARGETS: Record<string, number> = { sqlite: 10_000, postgres: 5_000 };
const here = dirname(fileURLToPath(import.meta.url));
const log = (msg: string) => process.stderr.write(`[import-floor ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

type Row = Record<string, unknown>;
const TABLES = ['loads', 'load_stops', 'load_rates', 'lane_history'] as const;
type Table = (typeof TABLES)[number];
interface Templates {
  loads: Row[];
  parts: Map<string, { load_stops: Row[]; load_rates: Row[]; lane_history: Row[] }>;
}

/** The 1,000 template loads and their rows, read from the database the service imported them into. */
function templatesOf(rows: Record<Table, Row[]>): Templates {
  const parts = new Map(rows.loads.map((l) => [l.id as string, { load_stops: [] as Row[], load_rates: [] as Row[], lane_history: [] as Row[] }]));
  for (const t of ['load_stops', 'load_rates', 'lane_history'] as const) for (const r of rows[t]) parts.get(r.load_id as string)?.[t].push(r);
  return { loads: rows.loads, parts };
}

const kindOf = (id: string) => id.slice(0, id.indexOf('_')) as IdKind;

/** Loads `from` … `from + n − 1`: each a copy of a template with new ids, a new reference and created now. */
function chunkRows(tpl: Templates, from: number, n: number): Record<Table, Row[]> {
  const out: Record<Table, Row[]> = { loads: [], load_stops: [], load_rates: [], lane_history: [] };
  const now = new Date().toISOString();
  for (let i = from; i < from + n; i++) {
    const t = tpl.loads[i % tpl.loads.length]!;
    const id = newId(kindOf(t.id as string));
    out.loads.push({ ...t, id, external_reference_id: `FLOOR-${i}`, created_at: now, updated_at: now, status_updated_at: now });
    const p = tpl.parts.get(t.id as string)!;
    for (const s of p.load_stops) out.load_stops.push({ ...s, id: newId(kindOf(s.id as string)), load_id: id });
    for (const r of p.load_rates) out.load_rates.push({ ...r, id: newId(kindOf(r.id as string)), load_id: id });
    for (const h of p.lane_history) out.lane_history.push({ ...h, load_id: id });
  }
  return out;
}

interface Measure {
  engine: string;
  variant: string;
  loads: number;
  seconds: number;
  perTable: Record<Table | 'commit', number>;
  processCpuMs: number;
  backendCpuMs: number | null;
}

// ---------------------------------------------------------------------------------------------- SQLite

function sqliteFloor(file: string, variant: string, tpl: Templates): Promise<Measure> {
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma(`foreign_keys = ${variant === 'bare' ? 'OFF' : 'ON'}`);
  raw.pragma('busy_timeout = 5000');
  raw.pragma('journal_size_limit = 67108864');
  raw.pragma('cache_size = -16384');
  if (variant === 'bare') {
    const names = raw
      .prepare(`select name from sqlite_schema where type = 'index' and sql is not null and tbl_name in (${TABLES.map(() => '?').join(', ')})`)
      .pluck()
      .all(...TABLES) as string[];
    for (const n of names) raw.exec(`drop index "${n}"`);
  }
  const checkpoints = backgroundCheckpoints(raw, file);
  const statements = new Map<string, Database.Statement>();
  const insert = (table: Table, rows: Row[]) => {
    if (rows.length === 0) return;
    const cols = Object.keys(rows[0]!);
    for (let i = 0; i < rows.length;) {
      const n = Math.min(100, rows.length - i) >= 100 ? 100 : 2 ** Math.floor(Math.log2(rows.length - i));
      const key = `${table}:${n}`;
      let s = statements.get(key);
      if (!s)
        statements.set(
          key,
          (s = raw.prepare(
            `insert into "${table}" (${cols.map((c) => `"${c}"`).join(', ')}) values ${Array.from({ length: n }, () => `(${cols.map(() => '?').join(', ')})`).join(', ')}`,
          )),
        );
      const values: unknown[] = [];
      for (let k = i; k < i + n; k++) for (const c of cols) values.push(rows[k]![c]);
      s.run(values);
      i += n;
    }
  };
  return run('sqlite', variant, tpl, {
    async chunk(rows, perTable) {
      raw.exec('begin immediate');
      for (const t of TABLES) {
        const at = performance.now();
        insert(t, rows[t]);
        perTable[t] += performance.now() - at;
      }
      const at = performance.now();
      raw.exec('commit');
      perTable.commit += performance.now() - at;
      // The runner's pause between chunks (DataStore.betweenWrites): the log is copied and rewound.
      await checkpoints.catchUp();
    },
    backendCpuMs: () => null,
    async close() {
      await checkpoints.stop();
      raw.close();
    },
  });
}

// ------------------------------------------------------------------------------------------ PostgreSQL

async function postgresFloor(url: string, variant: string, tpl: Templates): Promise<Measure> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  if (variant === 'bare') {
    const { rows: fks } = await client.query<{ t: string; c: string }>(
      `select conrelid::regclass::text as t, conname as c from pg_constraint where contype = 'f' and conrelid::regclass::text = any($1)`,
      [TABLES],
    );
    for (const f of fks) await client.query(`alter table "${f.t}" drop constraint "${f.c}"`);
    const { rows: idx } = await client.query<{ i: string }>(
      `select indexrelid::regclass::text as i from pg_index where indrelid::regclass::text = any($1) and not indisprimary and not indisunique`,
      [TABLES],
    );
    for (const i of idx) await client.query(`drop index "${i.i}"`);
  }
  const texts = new Map<Table, { text: string; cols: string[] }>();
  for (const t of TABLES) {
    const cols = Object.keys(t === 'loads' ? tpl.loads[0]! : firstPart(tpl, t));
    const { rows } = await client.query<{ column_name: string; udt_name: string }>(
      `select column_name, udt_name from information_schema.columns where table_schema = current_schema() and table_name = $1`,
      [t],
    );
    const types = new Map(rows.map((r) => [r.column_name, r.udt_name]));
    texts.set(t, {
      cols,
      text: `insert into "${t}" (${cols.map((c) => `"${c}"`).join(', ')}) select * from unnest(${cols.map((c, i) => `$${i + 1}::"${types.get(c)}"[]`).join(', ')})`,
    });
  }
  const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  // The backend's CPU from /proc (utime + stime, in the kernel's 100 ticks a second): only when it is a
  // PostgreSQL process of this machine (not one in a container or on another host: then no figure).
  const local = (() => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('postgres');
    } catch {
      return false;
    }
  })();
  const cpu = () => {
    if (!local) return null;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  };
  return run('postgres', variant, tpl, {
    async chunk(rows, perTable) {
      await client.query('begin');
      for (const t of TABLES) {
        if (rows[t].length === 0) continue;
        const { cols, text } = texts.get(t)!;
        const at = performance.now();
        // Named (prepared once on the connection), as the service sends statements of few parameters.
        await client.query({ name: `floor_${t}`, text, values: cols.map((c) => rows[t].map((r) => r[c] ?? null)) });
        perTable[t] += performance.now() - at;
      }
      const at = performance.now();
      await client.query('commit');
      perTable.commit += performance.now() - at;
    },
    backendCpuMs: cpu,
    close: () => client.end(),
  });
}

function firstPart(tpl: Templates, t: Exclude<Table, 'loads'>): Row {
  for (const p of tpl.parts.values()) if (p[t].length > 0) return p[t][0]!;
  throw new Error(`no template row of ${t}`);
}

// ------------------------------------------------------------------------------------------------- run

async function run(
  engine: string,
  variant: string,
  tpl: Templates,
  io: { chunk(rows: Record<Table, Row[]>, perTable: Measure['perTable']): Promise<void>; backendCpuMs(): number | null; close(): Promise<void> },
): Promise<Measure> {
  const perTable: Measure['perTable'] = { loads: 0, load_stops: 0, load_rates: 0, lane_history: 0, commit: 0 };
  const cpu0 = process.cpuUsage();
  const backend0 = io.backendCpuMs();
  const began = performance.now();
  let lastLog = began;
  try {
    for (let from = 0; from < LOADS; from += CHUNK) {
      await io.chunk(chunkRows(tpl, from, Math.min(CHUNK, LOADS - from)), perTable);
      if (performance.now() - lastLog > 30_000) {
        lastLog = performance.now();
        log(`${engine} ${variant}: ${from + CHUNK} loads, ${Math.round((from + CHUNK) / ((lastLog - began) / 1000))} loads/s`);
      }
    }
    const seconds = (performance.now() - began) / 1000;
    const used = process.cpuUsage(cpu0);
    const backend1 = io.backendCpuMs();
    return {
      engine,
      variant,
      loads: LOADS,
      seconds,
      perTable,
      processCpuMs: (used.user + used.system) / 1000,
      backendCpuMs: backend0 === null || backend1 === null ? null : backend1 - backend0,
    };
  } finally {
    await io.close();
  }
}

/** Runs bench/imports.bench.ts on `engine` for 1,000 loads with its database kept: that database (a SQLite file, a PostgreSQL database name). */
function importedTemplates(engine: 'sqlite' | 'postgres'): string {
  log(`${engine}: importing 1,000 template loads through the service (bench/imports.bench.ts)`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'imports.bench.ts'), '--db', engine, '--loads', '1000', '--no-pin'], {
    env: { ...process.env, LANEBRIDGE_BENCH_KEEP: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const kept = /kept (?:SQLite|PostgreSQL) database (\S+)/.exec(r.stderr ?? '')?.[1];
  if (r.status !== 0 || !kept) {
    // What the failed run kept is removed.
    if (kept && engine === 'sqlite') rmSync(dirname(kept), { recursive: true, force: true });
    if (kept && engine === 'postgres') spawnSync('psql', [PG_ADMIN_URL, '-c', `drop database if exists ${kept} with (force)`], { stdio: 'ignore' });
    throw new Error(`imports.bench.ts failed (${r.status}): ${(r.stderr ?? '').slice(-2000)}`);
  }
  return kept;
}

const TEMPLATE_SQL: Record<Table, string> = {
  loads: `select * from loads where external_reference_id like 'IMP-%' order by id`,
  load_stops: `select s.* from load_stops s join loads l on l.id = s.load_id where l.external_reference_id like 'IMP-%' order by s.load_id, s.stop_number`,
  load_rates: `select r.* from load_rates r join loads l on l.id = r.load_id where l.external_reference_id like 'IMP-%' order by r.load_id, r.position`,
  lane_history: `select h.* from lane_history h join loads l on l.id = h.load_id where l.external_reference_id like 'IMP-%'`,
};

async function measureSqlite(variants: string[]): Promise<Measure[]> {
  const kept = importedTemplates('sqlite');
  const dir = mkdtempSync(join(tmpdir(), 'lanebridge-import-floor-'));
  try {
    const src = new Database(kept, { readonly: true });
    const tpl = templatesOf(Object.fromEntries(TABLES.map((t) => [t, src.prepare(TEMPLATE_SQL[t]).all() as Row[]])) as Record<Table, Row[]>);
    src.close();
    const out: Measure[] = [];
    for (const variant of variants) {
      const file = join(dir, `${variant}.db`);
      // The kept file with its log copied in (a copy of the main file alone could miss the last commits).
      const copy = new Database(kept);
      await copy.backup(file);
      copy.close();
      out.push(await sqliteFloor(file, variant, tpl));
      rmSync(file, { force: true });
      rmSync(`${file}-wal`, { force: true });
      rmSync(`${file}-shm`, { force: true });
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(dirname(kept), { recursive: true, force: true });
  }
}

async function measurePostgres(variants: string[]): Promise<Measure[]> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const urlOf = (name: string) => Object.assign(new URL(PG_ADMIN_URL), { pathname: `/${name}` }).toString();
  let kept: string | null = null;
  try {
    kept = importedTemplates('postgres');
    const src = new pg.Client({ connectionString: urlOf(kept) });
    await src.connect();
    const rows = {} as Record<Table, Row[]>;
    for (const t of TABLES) rows[t] = (await src.query(TEMPLATE_SQL[t])).rows as Row[];
    await src.end();
    const tpl = templatesOf(rows);
    const out: Measure[] = [];
    for (const variant of variants) {
      const name = `${kept}_${variant}`;
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.query(`create database ${name} template ${kept}`);
      try {
        out.push(await postgresFloor(urlOf(name), variant, tpl));
      } finally {
        await admin.query(`drop database if exists ${name} with (force)`);
      }
    }
    return out;
  } finally {
    if (kept) await admin.query(`drop database if exists ${kept} with (force)`);
    await admin.end();
  }
}

const variants = args.variants!.split(',').filter(Boolean);
const results: Measure[] = [];
if (args.db === 'sqlite' || args.db === 'both') results.push(...(await measureSqlite(variants)));
if (args.db === 'postgres' || args.db === 'both') results.push(...(await measurePostgres(variants)));
const us = (ms: number, n: number) => ((ms * 1000) / n).toFixed(0);
process.stdout.write(
  `| engine | variant | loads | seconds | loads/s | target | µs a load: loads / stops / rates / history / commit | this process's CPU µs a load | PostgreSQL backend's CPU µs a load |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n` +
    results
      .map((m) => {
        const p = m.perTable;
        return `| ${m.engine} | ${m.variant} | ${m.loads.toLocaleString('en-US')} | ${m.seconds.toFixed(1)} | ${Math.round(m.loads / m.seconds).toLocaleString('en-US')} | ${TARGETS[m.engine]!.toLocaleString('en-US')} | ${[p.loads, p.load_stops, p.load_rates, p.lane_history, p.commit].map((x) => us(x, m.loads)).join(' / ')} | ${us(m.processCpuMs, m.loads)} | ${m.backendCpuMs === null ? '–' : us(m.backendCpuMs, m.loads)} |`;
      })
      .join('\n') +
    '\n',
);
