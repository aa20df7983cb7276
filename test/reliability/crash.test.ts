// Crash safety (issue 9, point 1): SIGKILL the server in the middle of a stream of batch writes, restart
// it on the same database, and check that nothing answered 2xx is lost and nothing is half-written; and
// (issue 15) that every committed change has its event in the outbox and no uncommitted one has.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDataStore } from '../../src/lib/db/index.js';
import { createTenantInDb, freshPgDatabase, httpRequest, parse, pgAdminUrl, startReadyServer, tempDir, type ServerProcess, serverCleanups } from './support.js';
import { waitFor, letTimePass } from '../helpers.js';

const cleanups = serverCleanups();

const LOCATIONS = [
  { ref: 'L-DAL', postal_code: '75201', state: 'TX' },
  { ref: 'L-HOU', postal_code: '77002', state: 'TX' },
  { ref: 'L-CHI', postal_code: '60601', state: 'IL' },
  { ref: 'L-ATL', postal_code: '30303', state: 'GA' },
  { ref: 'L-LAX', postal_code: '90012', state: 'CA' },
  { ref: 'L-DEN', postal_code: '80202', state: 'CO' },
];
const CARRIERS = ['CAR-1', 'CAR-2', 'CAR-3'];
const CUSTOMERS = ['CUST-1', 'CUST-2'];

/** Every load says in its description how many stops and rates it must have: the SQL check needs nothing else. */
const describeLoad = (stops: number, rates: number, version: number) => `S${stops}R${rates}V${version}`;

function loadBody(rnd: () => number, version: number) {
  const nStops = 2 + Math.floor(rnd() * 5); // 2..6
  const nRates = 1 + Math.floor(rnd() * 4); // 1..4
  const day = 1 + Math.floor(rnd() * 27);
  const stops = Array.from({ length: nStops }, (_, i) => {
    const loc = LOCATIONS[Math.floor(rnd() * LOCATIONS.length)]!;
    const at = new Date(Date.UTC(2026, 2, day, 6 + i));
    return {
      stop_type: i === 0 ? 'Pickup' : i === nStops - 1 ? 'Delivery' : rnd() < 0.5 ? 'Pickup' : 'Delivery',
      location_external_reference_id: loc.ref,
      early_arrival: at.toISOString(),
      late_arrival: new Date(at.getTime() + 3_600_000).toISOString(),
    };
  });
  const delivered = rnd() < 0.4;
  return {
    equipment_type: rnd() < 0.5 ? 'DRY_VAN' : 'REEFER',
    transport_mode: 'FTL',
    customer_external_reference_id: CUSTOMERS[Math.floor(rnd() * CUSTOMERS.length)]!,
    carrier_external_reference_id: delivered || rnd() < 0.5 ? CARRIERS[Math.floor(rnd() * CARRIERS.length)]! : null,
    status: delivered ? 'DELIVERED' : 'ACTIVE',
    description: describeLoad(nStops, nRates, version),
    stops,
    financial_rates: Array.from({ length: nRates }, (_, i) => ({
      rate_entity: i % 2 === 0 ? 'CARRIER' : 'CUSTOMER',
      amount: Math.round(rnd() * 500_000) / 100,
      rate_type: i === 0 ? 'LINEHAUL' : 'FUEL_SURCHARGE',
    })),
  };
}

/** A small deterministic generator per worker: the stream is reproducible apart from the kill instant. */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

interface Sent {
  /** Descriptions (loads) or names (customers) in the order they were sent for one reference. */
  versions: string[];
  /** Index into versions of the last one answered 2xx with success for that item, or -1. */
  acked: number;
}

interface StreamLog {
  loads: Map<string, Sent>;
  customers: Map<string, Sent>;
  answered: number;
  failedInFlight: string[];
}

async function seed(port: number, headers: Record<string, string>) {
  const post = async (path: string, body: unknown) => {
    const r = await httpRequest(port, { method: 'POST', path, body, headers });
    expect(r.status, r.text).toBe(200);
    expect(parse(r).error_count, r.text).toBe(0);
  };
  await post('/v2/tms-api/batch/customers', { items: CUSTOMERS.map((ref) => ({ operation: 'create', customer: { external_reference_id: ref, name: ref } })) });
  await post('/v2/tms-api/batch/carriers', { items: CARRIERS.map((ref) => ({ operation: 'create', carrier: { external_reference_id: ref, name: ref } })) });
  await post('/v2/tms-api/batch/locations', {
    items: LOCATIONS.map((l) => ({ operation: 'create', location: { external_reference_id: l.ref, name: l.ref, postal_code: l.postal_code, state: l.state } })),
  });
}

/** Workers sending batch writes back to back until the server dies (or a bound is reached). */
async function stream(server: ServerProcess, headers: Record<string, string>, log: StreamLog, opts: { workers: number; maxRequests: number }) {
  let sentRequests = 0;
  let nameSeq = 0;
  const worker = async (w: number) => {
    const rnd = rng(1000 + w);
    let n = 0;
    while (sentRequests < opts.maxRequests) {
      sentRequests++;
      const kind = n % 3;
      n++;
      let path: string;
      let items: { operation: string; external_reference_id: string; [k: string]: unknown }[];
      let book: Map<string, Sent>;
      let version: (ref: string) => string;
      if (kind === 2) {
        // Customers: creates and upserts of known ones.
        path = '/v2/tms-api/batch/customers';
        book = log.customers;
        const refs = [...new Set(Array.from({ length: 25 }, () => `W${w}-C${Math.floor(rnd() * 60)}`))];
        items = refs.map((ref, i) => {
          const name = `${ref} v${++nameSeq}`;
          return { operation: 'upsert', external_reference_id: ref, customer: { name, phone: `+1-555-${String(i).padStart(4, '0')}` } };
        });
        version = (ref) => String((items.find((it) => it.external_reference_id === ref)!.customer as { name: string }).name);
      } else {
        // Loads: new ones, and upserts that replace the stops and rates of answered ones.
        path = '/v2/tms-api/batch/loads';
        book = log.loads;
        const known = [...log.loads.entries()].filter(([ref, s]) => ref.startsWith(`W${w}-`) && s.acked >= 0).map(([ref]) => ref);
        const used = new Set<string>();
        items = Array.from({ length: 10 + Math.floor(rnd() * 16) }, (_, i) => {
          let ref = kind === 1 && known.length > 0 ? known[Math.floor(rnd() * known.length)]! : `W${w}-L${n}-${i}`;
          if (used.has(ref)) ref = `W${w}-L${n}-${i}`;
          used.add(ref);
          const v = book.get(ref)?.versions.length ?? 0;
          return { operation: kind === 1 ? 'upsert' : 'create', external_reference_id: ref, load: loadBody(rnd, v) };
        });
        version = (ref) => String((items.find((it) => it.external_reference_id === ref)!.load as { description: string }).description);
      }
      for (const it of items) {
        const entry = book.get(it.external_reference_id) ?? { versions: [], acked: -1 };
        entry.versions.push(version(it.external_reference_id));
        book.set(it.external_reference_id, entry);
      }
      try {
        const res = await httpRequest(server.port, { method: 'POST', path, body: { items }, headers, timeoutMs: 30_000 });
        if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${res.text.slice(0, 300)}`);
        const body = parse<{ results: { success: boolean; external_reference_id: string; error?: unknown }[] }>(res);
        for (const r of body.results) {
          if (!r.success) throw new Error(`batch item failed: ${JSON.stringify(r)}`);
          const entry = book.get(r.external_reference_id)!;
          entry.acked = entry.versions.lastIndexOf(version(r.external_reference_id));
        }
        log.answered++;
      } catch (err) {
        const code = (err as { code?: string }).code ?? (err as Error).message;
        if (server.proc.exitCode === null && server.proc.signalCode === null && !/ECONNRESET|socket hang up|ECONNREFUSED|EPIPE/.test(code)) throw err;
        log.failedInFlight.push(code);
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, (_, w) => worker(w)));
}

async function crashScenario(databaseUrl: string, dialect: 'sqlite' | 'postgres') {
  const tenant = await createTenantInDb(databaseUrl, `Crash ${dialect}`);
  const headers = { 'x-api-key': tenant.key };
  // info: if the process ends before the kill, its output says how (a signal from outside shows as 'shutting down').
  const first = await startReadyServer({ databaseUrl, logLevel: 'info' });
  await seed(first.port, headers);

  const log: StreamLog = { loads: new Map(), customers: new Map(), answered: 0, failedInFlight: [] };
  const streaming = stream(first, headers, log, { workers: 3, maxRequests: 400 });
  // Let a few batches through, then kill while the workers are in the middle of the next ones.
  await waitFor(() => log.answered >= 6, { timeout: 20_000, what: 'six answered batches' });
  await letTimePass(30 + Math.floor(Math.random() * 120));
  first.kill('SIGKILL');
  const died = await first.exited;
  await streaming;
  expect(died.signal, `the server ended by itself (code ${died.code}) before the kill:\n${first.output().slice(-3000)}`).toBe('SIGKILL');
  expect(log.answered).toBeGreaterThanOrEqual(6);
  // The kill interrupted requests in flight (each worker always has one).
  expect(log.failedInFlight.length).toBeGreaterThanOrEqual(1);

  // Restart on the same database: it must come up (migrations, WAL recovery) and serve everything answered.
  const second = await startReadyServer({ databaseUrl });
  const ackedLoads = [...log.loads.entries()].filter(([, s]) => s.acked >= 0);
  expect(ackedLoads.length).toBeGreaterThan(20);
  for (const [ref, s] of ackedLoads) {
    const r = await httpRequest(second.port, { path: `/v2/tms-api/loads/${encodeURIComponent(ref)}`, headers });
    expect(r.status, `${ref}: ${r.text.slice(0, 200)}`).toBe(200);
    const body = parse(r);
    // The answered version, or a later one whose request was in flight at the kill.
    expect(s.versions.slice(s.acked), ref).toContain(body.description);
    const [, stops, rates] = /^S(\d+)R(\d+)V\d+$/.exec(body.description)!;
    expect(body.stops, ref).toHaveLength(Number(stops));
    expect(body.financial_rates, ref).toHaveLength(Number(rates));
  }
  for (const [ref, s] of log.customers) {
    if (s.acked < 0) continue;
    const r = await httpRequest(second.port, { path: `/v2/tms-api/customers/${encodeURIComponent(ref)}`, headers });
    expect(r.status, ref).toBe(200);
    expect(s.versions.slice(s.acked), ref).toContain(parse(r).name);
  }
  second.kill('SIGTERM');
  expect((await second.exited).code).toBe(0);

  // The same checks in SQL, over every load of the organization, acknowledged or not.
  const store = openDataStore(databaseUrl, { poolSize: 1 });
  try {
    const db = store.db;
    const loads = await db
      .selectFrom('loads')
      .select((eb) => [
        'loads.id',
        'loads.external_reference_id',
        'loads.description',
        'loads.status',
        'loads.carrier_id',
        eb.selectFrom('load_stops').whereRef('load_stops.load_id', '=', 'loads.id').select(eb.fn.countAll<number>().as('n')).as('stops'),
        eb.selectFrom('load_rates').whereRef('load_rates.load_id', '=', 'loads.id').select(eb.fn.countAll<number>().as('n')).as('rates'),
        eb
          .selectFrom('load_stops')
          .whereRef('load_stops.load_id', '=', 'loads.id')
          .select((e) => e.fn.max<number>('stop_number').as('m'))
          .as('max_stop'),
        eb.selectFrom('lane_history').whereRef('lane_history.load_id', '=', 'loads.id').select(eb.fn.countAll<number>().as('n')).as('history'),
      ])
      .where('loads.org_id', '=', tenant.orgId)
      .execute();
    expect(loads.length).toBeGreaterThanOrEqual(ackedLoads.length);
    for (const l of loads) {
      const m = /^S(\d+)R(\d+)V\d+$/.exec(l.description ?? '');
      expect(m, `${l.external_reference_id} description ${l.description}`).not.toBeNull();
      expect({ ref: l.external_reference_id, stops: Number(l.stops), rates: Number(l.rates), maxStop: Number(l.max_stop) }).toEqual({
        ref: l.external_reference_id,
        stops: Number(m![1]),
        rates: Number(m![2]),
        maxStop: Number(m![1]),
      });
      // Lane history is written in the load's own transaction: delivered loads with a carrier have one row.
      expect(Number(l.history), l.external_reference_id).toBe(l.status === 'DELIVERED' && l.carrier_id ? 1 : 0);
    }
    // Every sent load reference is either whole in the database or absent; never-sent ones do not exist.
    const sentRefs = new Set(log.loads.keys());
    for (const l of loads) expect(sentRefs.has(l.external_reference_id), l.external_reference_id).toBe(true);
    // D11: every committed change has its event, written in its transaction; nothing else has one.
    const events = await db
      .selectFrom('events')
      .select(['sequence', 'type', 'record_id', 'data'])
      .where('org_id', '=', tenant.orgId)
      .orderBy('sequence')
      .execute();
    expect(
      events.map((e) => Number(e.sequence)),
      'sequences without gaps',
    ).toEqual(events.map((_, i) => i + 1));
    const loadEvents = new Map<string, { type: string; description: string }[]>();
    for (const e of events.filter((e) => e.type === 'load.created' || e.type === 'load.updated')) {
      const data = JSON.parse(e.data) as { id: string; description: string };
      expect(data.id).toBe(e.record_id);
      loadEvents.set(data.id, [...(loadEvents.get(data.id) ?? []), { type: e.type, description: data.description }]);
    }
    const byId = new Map(loads.map((l) => [l.id, l]));
    // No event for a load that was never committed.
    for (const id of loadEvents.keys()) expect(byId.has(id), `event of an absent load ${id}`).toBe(true);
    for (const l of loads) {
      const own = loadEvents.get(l.id) ?? [];
      expect(own[0]?.type, `${l.external_reference_id} has its load.created`).toBe('load.created');
      // The last event shows the load as it stands; every event shows a version that was sent.
      expect(own[own.length - 1]!.description, l.external_reference_id).toBe(l.description);
      for (const ev of own) expect(log.loads.get(l.external_reference_id)!.versions, l.external_reference_id).toContain(ev.description);
    }
    // Every acknowledged version has its event.
    const refToId = new Map(loads.map((l) => [l.external_reference_id, l.id]));
    for (const [ref, sent] of ackedLoads)
      expect(
        (loadEvents.get(refToId.get(ref)!) ?? []).map((e) => e.description),
        ref,
      ).toContain(sent.versions[sent.acked]);
    const orphans = await sql<{ n: number }>`
      select (select count(*) from load_stops s where not exists (select 1 from loads l where l.id = s.load_id))
           + (select count(*) from load_rates r where not exists (select 1 from loads l where l.id = r.load_id))
           + (select count(*) from lane_history h where not exists (select 1 from loads l where l.id = h.load_id)) as n`.execute(db);
    expect(Number(orphans.rows[0]!.n)).toBe(0);
    if (dialect === 'sqlite') {
      const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db);
      expect(integrity.rows.map((r) => r.integrity_check)).toEqual(['ok']);
      const fk = await sql`pragma foreign_key_check`.execute(db);
      expect(fk.rows).toEqual([]);
    }
    return { answered: log.answered, acknowledgedLoads: ackedLoads.length, loadsInDb: loads.length, interrupted: log.failedInFlight.length };
  } finally {
    await store.close();
  }
}

describe('crash safety: SIGKILL in the middle of batch writes', () => {
  it('SQLite: every answered write survives, every load is whole or absent, integrity_check is ok', async () => {
    const dir = tempDir('crash');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const figures = await crashScenario(join(dir, 'crash.db'), 'sqlite');
    console.log('crash sqlite', figures);
  }, 120_000);

  const admin = pgAdminUrl();
  it.skipIf(!admin)(
    'PostgreSQL (fresh database): every answered write survives, every load is whole or absent',
    async () => {
      const db = await freshPgDatabase(admin!, `lanebridge_rel_crash_${process.pid}`);
      cleanups.push(() => db.drop());
      const figures = await crashScenario(db.url, 'postgres');
      console.log('crash postgres', figures);
    },
    120_000,
  );
});
