import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { foldCase } from '../../src/lib/fold.js';
import { openDataStore } from '../../src/lib/db/index.js';
import { migrationProvider } from '../../src/lib/db/migrations/index.js';
import { useApp, isPostgres, json, newTenant, type Tenant } from '../helpers.js';

// D1a: every case-insensitive filter folds Unicode case the same way on both engines, from folded
// columns the write path keeps (migration 0013 backfills them); PostgreSQL serves name_contains from a
// pg_trgm index when the extension can be created, and migrates without it when it cannot.

const t = useApp();

const refsOf = async (a: Tenant, url: string) => {
  const res = await a.get(url);
  expect(res.statusCode, res.body).toBe(200);
  return json(res)
    .items.map((i: { external_reference_id: string }) => i.external_reference_id)
    .sort();
};

describe('foldCase', () => {
  it('folds capitals outside ASCII, compatibility forms and the final sigma', () => {
    expect(foldCase('Ölwerk Müller GmbH')).toBe('ölwerk müller gmbh');
    expect(foldCase('ÉBANO')).toBe(foldCase('Ébano'));
    expect(foldCase('Straße')).toBe(foldCase('STRASSE'));
    expect(foldCase('ΟΔΟΣ')).toBe(foldCase('οδοσ'));
    expect(foldCase('ﬁne')).toBe('fine');
    // Composed and decomposed accents are one text.
    expect(foldCase('Qu\u00e9bec')).toBe(foldCase('Que\u0301bec'));
  });
});

describe('name_contains and city fold Unicode case on both engines', () => {
  it('customers: Ölwerk Müller GmbH is found by ölwerk, ÖLWERK and MÜLLER', async () => {
    const a = await newTenant(t);
    for (const [ref, name] of [
      ['C-1', 'Ölwerk Müller GmbH'],
      ['C-2', 'Acme Foods'],
      ['C-3', 'Straße & Söhne'],
    ]) {
      expect((await a.post('/v2/tms-api/customers', { external_reference_id: ref, name })).statusCode).toBe(201);
    }
    for (const needle of ['ölwerk', 'ÖLWERK', 'Ölwerk', 'MÜLLER', 'müller gmbh']) {
      expect(await refsOf(a, `/v2/tms-api/customers?name_contains=${encodeURIComponent(needle)}`), needle).toEqual(['C-1']);
    }
    expect(await refsOf(a, `/v2/tms-api/customers?name_contains=${encodeURIComponent('STRASSE')}`)).toEqual(['C-3']);
    expect(await refsOf(a, '/v2/tms-api/customers?name_contains=ACME')).toEqual(['C-2']);
    // LIKE's wildcards are text here.
    expect(await refsOf(a, '/v2/tms-api/customers?name_contains=%25')).toEqual([]);
    expect(await refsOf(a, '/v2/tms-api/customers?name_contains=_')).toEqual([]);
    // A rename is folded again by the write path.
    expect((await a.put('/v2/tms-api/customers/C-2', { name: 'Énergie Québec' })).statusCode).toBe(200);
    expect(await refsOf(a, `/v2/tms-api/customers?name_contains=${encodeURIComponent('QUÉBEC')}`)).toEqual(['C-2']);
    expect(await refsOf(a, '/v2/tms-api/customers?name_contains=acme')).toEqual([]);
  });

  it('carriers, through a batch too', async () => {
    const a = await newTenant(t);
    const res = await a.post('/v2/tms-api/batch/carriers', {
      items: [
        { operation: 'create', carrier: { external_reference_id: 'K-1', name: 'Transportes Ñandú' } },
        { operation: 'upsert', external_reference_id: 'K-2', carrier: { name: 'ÉCLAIR Logistique' } },
      ],
    });
    expect(json(res).success_count).toBe(2);
    expect(await refsOf(a, `/v2/tms-api/carriers?name_contains=${encodeURIComponent('ÑANDÚ')}`)).toEqual(['K-1']);
    expect(await refsOf(a, `/v2/tms-api/carriers?name_contains=${encodeURIComponent('éclair')}`)).toEqual(['K-2']);
  });

  it('locations: city Ébano is found by ébano and ÉBANO; name_contains folds too', async () => {
    const a = await newTenant(t);
    const base = { latitude: 22.22, longitude: -98.38, country: 'MX' };
    expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'E-1', name: 'Almacén ÉBANO', city: 'Ébano', ...base })).statusCode).toBe(201);
    expect((await a.post('/v2/tms-api/locations', { external_reference_id: 'E-2', name: 'Other', city: 'Ebano', ...base })).statusCode).toBe(201);
    for (const city of ['Ébano', 'ébano', 'ÉBANO']) {
      expect(await refsOf(a, `/v2/tms-api/locations?city=${encodeURIComponent(city)}`), city).toEqual(['E-1']);
    }
    expect(await refsOf(a, `/v2/tms-api/locations?name_contains=${encodeURIComponent('almacén')}`)).toEqual(['E-1']);
    // Clearing the city clears its folded form.
    expect((await a.put('/v2/tms-api/locations/E-1', { city: null })).statusCode).toBe(200);
    expect(await refsOf(a, `/v2/tms-api/locations?city=${encodeURIComponent('ébano')}`)).toEqual([]);
    // The folded columns never show in an answer.
    const one = json(await a.get('/v2/tms-api/locations/E-2'));
    expect(one).not.toHaveProperty('name_folded');
    expect(one).not.toHaveProperty('city_folded');
  });
});

describe('PostgreSQL: an index serves name_contains', () => {
  it.runIf(isPostgres())('the pg_trgm GIN indexes exist and the planner can use them', async () => {
    const { rows } = await sql<{ indexname: string }>`select indexname from pg_indexes where indexname like '%name_folded_trgm_idx' order by indexname`.execute(
      t.store.db,
    );
    expect(rows.map((r) => r.indexname)).toEqual(['carriers_name_folded_trgm_idx', 'customers_name_folded_trgm_idx', 'locations_name_folded_trgm_idx']);
    const plan = await t.store.db.transaction().execute(async (tx) => {
      await sql`set local enable_seqscan = off`.execute(tx);
      const r = await sql<{ 'QUERY PLAN': string }>`explain select id from customers where name_folded like '%müller%'`.execute(tx);
      return r.rows.map((x) => x['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('customers_name_folded_trgm_idx');
  });
});

describe('migration 0013 backfills the rows that existed before it', () => {
  it('rows written before the folded columns are found afterwards (SQLite, and PostgreSQL on its own database)', async () => {
    const pgUrl = inject('databaseUrl');
    let url: string;
    let dir: string | null = null;
    let admin: pg.Client | null = null;
    let dbName = '';
    if (pgUrl) {
      admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      dbName = `lanebridge_backfill_${process.pid}`;
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.query(`create database ${dbName}`);
      const u = new URL(pgUrl);
      u.pathname = `/${dbName}`;
      url = u.toString();
    } else {
      dir = mkdtempSync(join(tmpdir(), 'lanebridge-backfill-'));
      url = join(dir, 'old.db');
    }
    const store = openDataStore(url);
    try {
      const dialect = pgUrl ? 'postgres' : 'sqlite';
      const migrator = new Migrator({ db: store.db as Kysely<unknown>, provider: migrationProvider(dialect), allowUnorderedMigrations: true });
      const before = await migrator.migrateTo('0012_webhooks');
      expect(before.error).toBeUndefined();
      const now = new Date().toISOString();
      await sql`insert into organizations (id, name, created_at) values ('org_old', 'Old', ${now})`.execute(store.db);
      await sql`insert into customers (id, org_id, external_reference_id, name, is_active, created_at, updated_at) values ('cust_old', 'org_old', 'OLD-1', 'Ölwerk Müller GmbH', 1, ${now}, ${now})`.execute(
        store.db,
      );
      await store.migrate();
      const { rows } = await sql<{ name_folded: string }>`select name_folded from customers where id = 'cust_old'`.execute(store.db);
      expect(rows[0]!.name_folded).toBe('ölwerk müller gmbh');
    } finally {
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (admin) {
        await admin.query(`drop database if exists ${dbName} with (force)`);
        await admin.end();
      }
    }
  });
});

describe('PostgreSQL without pg_trgm', () => {
  it.runIf(isPostgres())('a role that may not create extensions still migrates; name_contains still folds', async () => {
    const adminUrl = inject('databaseUrl')!;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    const dbName = `lanebridge_notrgm_${process.pid}`;
    const role = `lanebridge_notrgm_${process.pid}`;
    await admin.query(`drop database if exists ${dbName} with (force)`);
    await admin.query(`drop role if exists ${role}`);
    await admin.query(`create role ${role} login`);
    await admin.query(`create database ${dbName}`);
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    // The role may create tables in public but not extensions (CREATE on the database is what pg_trgm, a trusted extension, needs).
    const owner = new pg.Client({ connectionString: u.toString() });
    await owner.connect();
    await owner.query(`grant create, usage on schema public to ${role}`);
    await owner.end();
    u.username = role;
    const store = openDataStore(u.toString());
    try {
      await store.migrate();
      const ext = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname = 'pg_trgm'`.execute(store.db);
      expect(ext.rows[0]!.n).toBe(0);
      const now = new Date().toISOString();
      await sql`insert into organizations (id, name, created_at) values ('org_n', 'N', ${now})`.execute(store.db);
      await sql`insert into customers (id, org_id, external_reference_id, name, name_folded, is_active, created_at, updated_at) values ('cust_n', 'org_n', 'N-1', 'Ölwerk', ${foldCase('Ölwerk')}, 1, ${now}, ${now})`.execute(
        store.db,
      );
      const { listCustomers } = await import('../../src/modules/customers/customers.repo.js');
      const page = await listCustomers(store.db, 'org_n', { name_contains: 'ÖLWERK' }, { page: 1, page_size: 10, sort: 'created_at' } as never);
      expect(page.rows.map((r) => r.external_reference_id)).toEqual(['N-1']);
    } finally {
      await store.close();
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.query(`drop role if exists ${role}`);
      await admin.end();
    }
  });
});
