// Tenant isolation (issue 9, point 5): two organizations' random operations, interleaved, against a
// model of what each one owns. Properties: no response to one organization ever carries the other's
// ids, external references or data (unless the request itself named them); no request of one can read,
// reference, change or delete the other's records; each organization's lists are exactly its model.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers.js';
import { createTenant } from './support.js';

const RUNS = Number(process.env.RELIABILITY_TENANT_RUNS ?? 40);
const SEED = process.env.RELIABILITY_SEED ? Number(process.env.RELIABILITY_SEED) : Date.now() % 2_147_483_647;

const t = useApp();

type Actor = 'A' | 'B';
type Kind = 'customers' | 'carriers' | 'locations' | 'loads';
const KINDS: Kind[] = ['customers', 'carriers', 'locations', 'loads'];
const PREFIX: Record<Kind, string> = { customers: 'CU', carriers: 'CA', locations: 'LO', loads: 'LD' };
const other = (a: Actor): Actor => (a === 'A' ? 'B' : 'A');

/** References: shared names both organizations create, and names only one of them creates. */
function refs(kind: Kind, owner: Actor | 'S') {
  return [1, 2].map((n) => `${owner}-${PREFIX[kind]}${n}`);
}
const anyRef = (kind: Kind) => fc.constantFrom(...refs(kind, 'S'), ...refs(kind, 'A'), ...refs(kind, 'B'));
const ownRef = (kind: Kind, actor: Actor) => fc.constantFrom(...refs(kind, 'S'), ...refs(kind, actor));

const ZIPS = [
  { postal_code: '75201', state: 'TX' },
  { postal_code: '77002', state: 'TX' },
  { postal_code: '75202', state: 'TX' },
];

interface LoadLinks {
  customer: string;
  carrier: string | null;
  locations: string[];
}

type Op =
  | { t: 'create' | 'update'; actor: Actor; kind: Kind; ref: string; links: LoadLinks; zip: number; delivered: boolean }
  | { t: 'batch'; actor: Actor; kind: Kind; items: { ref: string; links: LoadLinks; zip: number; delivered: boolean }[] }
  | { t: 'delete' | 'get'; actor: Actor; kind: Kind; ref: string }
  | { t: 'byId'; actor: Actor; kind: Kind; owner: Actor; index: number; method: 'GET' | 'DELETE' | 'PUT' }
  | { t: 'list'; actor: Actor; kind: Kind }
  | { t: 'rate'; actor: Actor; origin: string; destination: string }
  | { t: 'rates'; actor: Actor }
  | { t: 'recs'; actor: Actor; ref: string }
  | { t: 'batchDelete'; actor: Actor; refs: string[] };

const links: fc.Arbitrary<LoadLinks> = fc.record({
  customer: anyRef('customers'),
  carrier: fc.option(anyRef('carriers'), { nil: null }),
  locations: fc.array(anyRef('locations'), { minLength: 2, maxLength: 3 }),
});
const actor = fc.constantFrom<Actor>('A', 'B');
const kind = fc.constantFrom(...KINDS);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(actor, kind).chain(([a, k]) =>
      fc.record({
        t: fc.constant('create' as const),
        actor: fc.constant(a),
        kind: fc.constant(k),
        ref: ownRef(k, a),
        links,
        zip: fc.nat(2),
        delivered: fc.boolean(),
      }),
    ),
  },
  {
    weight: 4,
    arbitrary: fc.tuple(actor, kind).chain(([a, k]) =>
      fc.record({
        t: fc.constant('update' as const),
        actor: fc.constant(a),
        kind: fc.constant(k),
        ref: anyRef(k),
        links,
        zip: fc.nat(2),
        delivered: fc.boolean(),
      }),
    ),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(actor, kind).chain(([a, k]) =>
      fc.record({
        t: fc.constant('batch' as const),
        actor: fc.constant(a),
        kind: fc.constant(k),
        items: fc.uniqueArray(fc.record({ ref: ownRef(k, a), links, zip: fc.nat(2), delivered: fc.boolean() }), {
          minLength: 1,
          maxLength: 4,
          selector: (i) => i.ref,
        }),
      }),
    ),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(actor, kind)
      .chain(([a, k]) => fc.record({ t: fc.constantFrom('delete' as const, 'get' as const), actor: fc.constant(a), kind: fc.constant(k), ref: anyRef(k) })),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('byId' as const),
      actor,
      kind,
      owner: actor,
      index: fc.nat(20),
      method: fc.constantFrom<'GET' | 'DELETE' | 'PUT'>('GET', 'DELETE', 'PUT'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('list' as const), actor, kind }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('rate' as const), actor, origin: anyRef('locations'), destination: anyRef('locations') }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('rates' as const), actor }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('recs' as const), actor, ref: anyRef('loads') }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('batchDelete' as const), actor, refs: fc.uniqueArray(anyRef('loads'), { minLength: 1, maxLength: 3 }) }) },
);

// ---------------------------------------------------------------------------------------------
// The model: what each organization owns

interface Rec {
  id: string;
  marker: string;
  links?: LoadLinks;
}

class Org {
  records: Record<Kind, Map<string, Rec>> = { customers: new Map(), carriers: new Map(), locations: new Map(), loads: new Map() };
  /** Every service id this organization was ever given (records, contacts, stops, rates, snapshots). */
  ids = new Set<string>();
  rateIds = new Set<string>();
  seq = 0;
  constructor(
    readonly name: Actor,
    readonly key: string,
  ) {}

  marker() {
    return `org${this.name}-data-${++this.seq}`;
  }

  /** Whether the load's references all exist in this organization. */
  resolves(l: LoadLinks) {
    return (
      this.records.customers.has(l.customer) &&
      (l.carrier === null || this.records.carriers.has(l.carrier)) &&
      l.locations.every((r) => this.records.locations.has(r))
    );
  }

  /** Whether a load of this organization still uses the record (delete is then 409). */
  inUse(kind: Kind, ref: string) {
    if (kind === 'loads') return false;
    for (const l of this.records.loads.values()) {
      const k = l.links!;
      if (kind === 'customers' && k.customer === ref) return true;
      if (kind === 'carriers' && k.carrier === ref) return true;
      if (kind === 'locations' && k.locations.includes(ref)) return true;
    }
    return false;
  }
}

function body(kind: Kind, ref: string | null, marker: string, l: LoadLinks, zip: number, delivered: boolean): Record<string, unknown> {
  const withRef = (o: Record<string, unknown>) => (ref === null ? o : { external_reference_id: ref, ...o });
  switch (kind) {
    case 'customers':
      return withRef({ name: marker, phone: '+1-555-0100' });
    case 'carriers':
      return withRef({ name: marker, dot_number: marker, contacts: [{ first_name: marker, primary_email: `${marker}@example.test` }] });
    case 'locations':
      return withRef({ name: marker, city: marker, ...ZIPS[zip] });
    case 'loads':
      return withRef({
        equipment_type: 'DRY_VAN',
        transport_mode: 'FTL',
        status: delivered ? 'DELIVERED' : 'ACTIVE',
        description: marker,
        customer_external_reference_id: l.customer,
        carrier_external_reference_id: l.carrier,
        stops: l.locations.map((loc, i) => ({
          stop_type: i === 0 ? 'Pickup' : 'Delivery',
          location_external_reference_id: loc,
          early_arrival: `2026-04-0${i + 1}T08:00:00Z`,
          late_arrival: `2026-04-0${i + 1}T10:00:00Z`,
        })),
        financial_rates: [{ rate_entity: 'CARRIER', amount: 1000 + zip, description: marker }],
      });
  }
}

/** All ids in a response body (so that the owner's set can be grown and the other's checked). */
function idsIn(text: string): string[] {
  return text.match(/\b(?:cust|carrier|contact|loc|load|stop|rate|mrs|key|org|user)_[0-9a-z]{26}\b/g) ?? [];
}

// ---------------------------------------------------------------------------------------------

async function send(org: Org, method: string, url: string, payload?: unknown) {
  const res = await t.app.inject({
    method: method as never,
    url,
    headers: { 'x-api-key': org.key, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
  return {
    status: res.statusCode,
    text: res.body,
    json: res.body ? JSON.parse(res.body) : null,
    request: `${method} ${url} ${payload === undefined ? '' : JSON.stringify(payload)}`,
  };
}

/** The response to `org` carries nothing of `foe` that the request did not name itself. */
function assertNoLeak(org: Org, foe: Org, res: { text: string; request: string }, label: string) {
  const foreignMarker = `org${foe.name}-data-`;
  expect(res.text.includes(foreignMarker), `${label}: response carries the other organization's data`).toBe(false);
  for (const id of idsIn(res.text)) {
    if (foe.ids.has(id)) expect(res.request.includes(id), `${label}: response carries the other organization's id ${id}`).toBe(true);
  }
  for (const k of KINDS) {
    for (const r of refs(k, foe.name)) {
      if (res.text.includes(`"${r}"`) || res.text.includes(`'${r}'`))
        expect(res.request.includes(r), `${label}: response carries the other organization's reference ${r}`).toBe(true);
    }
  }
}

async function apply(op: Op, orgs: Record<Actor, Org>, log: string[]) {
  const me = orgs[op.actor];
  const foe = orgs[other(op.actor)];
  const base = (k: Kind) => `/v2/tms-api/${k}`;
  const check = (res: Awaited<ReturnType<typeof send>>, expected: number | number[]) => {
    const label = `${op.actor}: ${res.request.slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}\nafter:\n${log.slice(-12).join('\n')}`;
    log.push(`${op.actor} ${res.request.slice(0, 160)} → ${res.status}`);
    expect([expected].flat(), label).toContain(res.status);
    assertNoLeak(me, foe, res, label);
    for (const id of idsIn(res.text)) if (!foe.ids.has(id)) me.ids.add(id);
    return res;
  };
  switch (op.t) {
    case 'create': {
      const marker = me.marker();
      const exists = me.records[op.kind].has(op.ref);
      const ok = op.kind !== 'loads' || me.resolves(op.links);
      const res = check(
        await send(me, 'POST', base(op.kind), body(op.kind, op.ref, marker, op.links, op.zip, op.delivered)),
        exists ? (ok ? 409 : [409, 422]) : ok ? 201 : 422,
      );
      if (res.status === 201) me.records[op.kind].set(op.ref, { id: res.json.id, marker, links: op.links });
      return;
    }
    case 'update': {
      const marker = me.marker();
      const existing = me.records[op.kind].get(op.ref);
      const ok = op.kind !== 'loads' || me.resolves(op.links);
      const res = check(
        await send(me, 'PUT', `${base(op.kind)}/${op.ref}`, body(op.kind, null, marker, op.links, op.zip, op.delivered)),
        !existing ? 404 : ok ? 200 : 422,
      );
      if (res.status === 200) me.records[op.kind].set(op.ref, { id: existing!.id, marker, links: op.links });
      return;
    }
    case 'batch': {
      const key = op.kind.replace(/s$/, '');
      const markers = op.items.map(() => me.marker());
      const items = op.items.map((it, i) => ({
        operation: 'upsert',
        external_reference_id: it.ref,
        [key]: body(op.kind, null, markers[i]!, it.links, it.zip, it.delivered),
      }));
      const res = check(await send(me, 'POST', `/v2/tms-api/batch/${op.kind}`, { items }), 200);
      op.items.forEach((it, i) => {
        const r = res.json.results[i];
        const ok = op.kind !== 'loads' || me.resolves(it.links);
        expect(r.success, `${op.actor} batch item ${it.ref}: ${JSON.stringify(r)}`).toBe(ok);
        if (!ok) expect(r.error.status).toBe(422);
        else {
          const prev = me.records[op.kind].get(it.ref);
          if (prev) expect(r.id).toBe(prev.id);
          me.records[op.kind].set(it.ref, { id: r.id, marker: markers[i]!, links: it.links });
        }
      });
      return;
    }
    case 'delete': {
      const exists = me.records[op.kind].has(op.ref);
      const res = check(await send(me, 'DELETE', `${base(op.kind)}/${op.ref}`), !exists ? 404 : me.inUse(op.kind, op.ref) ? 409 : 204);
      if (res.status === 204) me.records[op.kind].delete(op.ref);
      return;
    }
    case 'get': {
      const rec = me.records[op.kind].get(op.ref);
      const res = check(await send(me, 'GET', `${base(op.kind)}/${op.ref}`), rec ? 200 : 404);
      if (rec) {
        expect(res.json.id).toBe(rec.id);
        expect(op.kind === 'loads' ? res.json.description : res.json.name).toBe(rec.marker);
      }
      return;
    }
    case 'byId': {
      // A service id of either organization, used where the API takes a reference.
      const owner = orgs[op.owner];
      const candidates = [...owner.records[op.kind].entries()];
      if (candidates.length === 0) return;
      const [ref, rec] = candidates[op.index % candidates.length]!;
      const mine = op.owner === op.actor;
      if (op.method === 'DELETE') {
        // D3: delete takes the reference or the service id; only ever in one's own organization.
        const res = check(await send(me, 'DELETE', `${base(op.kind)}/${rec.id}`), !mine ? 404 : me.inUse(op.kind, ref) ? 409 : 204);
        if (res.status === 204) me.records[op.kind].delete(ref);
      } else if (op.method === 'GET') {
        // GET takes the service id as DELETE does, in one's own organization; someone else's id is unknown.
        const res = check(await send(me, 'GET', `${base(op.kind)}/${rec.id}`), mine ? 200 : 404);
        if (mine) {
          expect(res.json.id).toBe(rec.id);
          expect(op.kind === 'loads' ? res.json.description : res.json.name).toBe(rec.marker);
        }
      } else {
        // PUT too: one's own record by its id is updated, someone else's id is unknown.
        const marker = me.marker();
        const res = check(await send(me, 'PUT', `${base(op.kind)}/${rec.id}`, { [op.kind === 'loads' ? 'description' : 'name']: marker }), mine ? 200 : 404);
        if (mine && res.status === 200) {
          expect(res.json.id).toBe(rec.id);
          me.records[op.kind].set(ref, { ...rec, marker });
        }
      }
      if (!mine) {
        // Whatever was tried, the owner still sees its record as it left it.
        const seen = await send(owner, 'GET', `${base(op.kind)}/${ref}`);
        expect(seen.status, `${op.owner}'s ${ref} after ${op.actor}'s ${op.method} by id`).toBe(200);
        expect(op.kind === 'loads' ? seen.json.description : seen.json.name).toBe(rec.marker);
      }
      return;
    }
    case 'list': {
      const res = check(await send(me, 'GET', `${base(op.kind)}?page_size=100`), 200);
      expectListIsModel(me, op.kind, res.json);
      return;
    }
    case 'rate': {
      const ok = me.records.locations.has(op.origin) && me.records.locations.has(op.destination);
      const res = check(
        await send(me, 'POST', '/v2/tms-api/market-rates', {
          origin: { location_external_reference_id: op.origin },
          destination: { location_external_reference_id: op.destination },
          equipment_type: 'DRY_VAN',
          rate_per_mile: 2.5,
          source: me.marker(),
        }),
        ok ? 201 : 422,
      );
      if (res.status === 201) me.rateIds.add(res.json.id);
      return;
    }
    case 'rates': {
      const res = check(await send(me, 'GET', '/v2/tms-api/market-rates?page_size=100'), 200);
      expect(new Set(res.json.items.map((r: { id: string }) => r.id))).toEqual(me.rateIds);
      return;
    }
    case 'recs': {
      const rec = me.records.loads.get(op.ref);
      const res = check(await send(me, 'GET', `/v2/tms-api/loads/${op.ref}/carrier-recommendations`), rec ? 200 : 404);
      if (rec) {
        const own = new Set([...me.records.carriers.values()].map((c) => c.id));
        for (const c of res.json.carrier_recommendations) expect(own.has(c.carrier_id), `recommended carrier ${c.carrier_id} is not ${op.actor}'s`).toBe(true);
      }
      return;
    }
    case 'batchDelete': {
      const items = op.refs.map((ref) => ({ operation: 'delete', external_reference_id: ref }));
      const res = check(await send(me, 'POST', '/v2/tms-api/batch/loads', { items }), 200);
      op.refs.forEach((ref, i) => {
        const r = res.json.results[i];
        const exists = me.records.loads.has(ref);
        expect(r.success, `${op.actor} batch delete ${ref}: ${JSON.stringify(r)}`).toBe(exists);
        if (!exists) expect(r.error.status).toBe(404);
        else me.records.loads.delete(ref);
      });
      return;
    }
  }
}

/**
 * Both organizations start alike: records under the same shared references (S-…) and some under their
 * own (A-… / B-…), delivered loads with their own carriers on the same lanes, and open loads there.
 */
function preamble(): Op[] {
  const ops: Op[] = [];
  for (const a of ['A', 'B'] as const) {
    const L = (customer: string, carrier: string | null, locations: string[]) => ({ customer, carrier, locations });
    const create = (kind: Kind, ref: string, l: LoadLinks = L('', null, []), delivered = false, zip = 0): Op => ({
      t: 'create',
      actor: a,
      kind,
      ref,
      links: l,
      zip,
      delivered,
    });
    ops.push(
      create('customers', 'S-CU1'),
      create('customers', `${a}-CU1`),
      create('carriers', 'S-CA1'),
      create('carriers', `${a}-CA1`),
      create('locations', 'S-LO1', undefined, false, 0),
      create('locations', 'S-LO2', undefined, false, 1),
      create('locations', `${a}-LO1`, undefined, false, 2),
      create('loads', `${a}-LD1`, L(`${a}-CU1`, `${a}-CA1`, ['S-LO1', 'S-LO2']), true),
      create('loads', 'S-LD1', L('S-CU1', 'S-CA1', ['S-LO1', 'S-LO2']), true),
      create('loads', 'S-LD2', L('S-CU1', null, ['S-LO1', 'S-LO2']), false),
    );
  }
  return ops;
}

function expectListIsModel(org: Org, kind: Kind, page: { items: any[]; pagination: { total: number } }) {
  const model = [...org.records[kind].entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  expect(page.pagination.total, `${org.name} ${kind} total`).toBe(model.length);
  expect(
    page.items.map((i) => [i.external_reference_id, i.id, kind === 'loads' ? i.description : i.name]).sort(([a], [b]) => (a < b ? -1 : 1)),
    `${org.name} ${kind} list`,
  ).toEqual(model.map(([ref, r]) => [ref, r.id, r.marker]));
}

describe('tenant isolation', () => {
  it(`two organizations' interleaved operations never see or touch each other's records (${RUNS} runs)`, async () => {
    let requests = 0;
    const counted = t.app.inject.bind(t.app);
    t.app.inject = ((opts: never) => {
      requests++;
      return counted(opts);
    }) as typeof t.app.inject;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 20, maxLength: 60 }), async (ops) => {
          const [a, b] = [await createTenant(t.store, 'Isolation A'), await createTenant(t.store, 'Isolation B')];
          const orgs: Record<Actor, Org> = { A: new Org('A', a.key), B: new Org('B', b.key) };
          orgs.A.ids.add(a.orgId);
          orgs.B.ids.add(b.orgId);
          const log: string[] = [];
          for (const op of [...preamble(), ...ops]) await apply(op, orgs, log);
          // In the end each organization's lists are exactly its model; the other's work left no trace.
          for (const o of [orgs.A, orgs.B]) {
            for (const k of KINDS) {
              const res = await send(o, 'GET', `/v2/tms-api/${k}?page_size=100`);
              expect(res.status).toBe(200);
              assertNoLeak(o, orgs[other(o.name)], res, `${o.name} final ${k} list`);
              expectListIsModel(o, k, res.json);
            }
          }
          // No id was ever handed to both.
          for (const id of orgs.A.ids) expect(orgs.B.ids.has(id), `id ${id} seen by both`).toBe(false);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    } finally {
      t.app.inject = counted;
    }
    console.log('tenants', { seed: SEED, runs: RUNS, requests });
  }, 240_000);
});
