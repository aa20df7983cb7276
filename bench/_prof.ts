import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDataStore } from '../src/lib/db/index.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';
const url = process.argv[2]!;
const N = Number(process.argv[3] ?? 30);
const CITIES = [['DAL','75201','TX'],['HOU','77002','TX'],['CHI','60601','IL'],['ATL','30303','GA'],['LAX','90012','CA'],['MEM','38103','TN'],['IND','46204','IN'],['DEN','80202','CO'],['PHX','85004','AZ'],['NWK','07102','NJ']];
const config = { ...loadConfig({}), databaseUrl: url, rateLimits: false, logLevel: 'silent' };
const store = openDataStore(url, { poolSize: 10 });
await store.migrate();
const { app, services } = await buildApp({ config, store, logger: false, ...(process.env.FU ? { recommendationFollowUp: 'manual' } : {}) } as never);
const org = await services.accounts.createOrganization('p');
const key = await services.accounts.createKey(org.id, { name: 'b', externalSystem: 'b', scopes: [...SCOPES] });
const headers = { 'x-api-key': key.key, 'content-type': 'application/json' };
const send = async (u: string, body: unknown) => { const r = await app.inject({ method: 'POST', url: u, headers, payload: JSON.stringify(body) }); if (r.statusCode !== 200 || !r.body.includes('"error_count":0')) throw new Error(r.body.slice(0, 500)); };
await send('/v2/tms-api/batch/locations', { items: CITIES.map(([ref, zip, state]) => ({ operation: 'upsert', external_reference_id: ref, location: { name: ref, postal_code: zip, state } })) });
await send('/v2/tms-api/batch/customers', { items: [0,1,2].map((i) => ({ operation: 'upsert', external_reference_id: `CUST-${i}`, customer: { name: `C${i}` } })) });
await send('/v2/tms-api/batch/carriers', { items: Array.from({ length: 12 }, (_, i) => ({ operation: 'upsert', external_reference_id: `CAR-${i}`, carrier: { name: `Car ${i}` } })) });
const d = (n: number) => String(n).padStart(2, '0');
const batch = (round: number) => ({ items: Array.from({ length: 100 }, (_, i) => { const lane = i % 10; const delivered = i % 3 !== 2; const day = 1 + ((round + i) % 27); const ref = `N-${round}-${i}`;
  return { operation: 'upsert', external_reference_id: ref, load: { status: delivered ? 'DELIVERED' : 'ACTIVE', equipment_type: 'DRY_VAN', transport_mode: 'FTL', customer_external_reference_id: `CUST-${i % 3}`, ...(delivered ? { carrier_external_reference_id: `CAR-${(i * 7 + round) % 12}` } : {}),
    stops: [{ stop_type: 'PICKUP', location_external_reference_id: CITIES[lane]![0], early_arrival: `2026-10-${d(day)}T08:00:00Z`, late_arrival: `2026-10-${d(day)}T10:00:00Z` }, { stop_type: 'DELIVERY', location_external_reference_id: CITIES[(lane + 3) % 10]![0], early_arrival: `2026-10-${d(day + 1)}T08:00:00Z`, late_arrival: `2026-10-${d(day + 1)}T12:00:00Z` }],
    financial_rates: delivered ? [{ rate_entity: 'CUSTOMER', amount: 2400 + i }, { rate_entity: 'CARRIER', amount: 1900 + i }] : [{ rate_entity: 'CUSTOMER', amount: 2400 + i }] } }; }) });
const ms: number[] = [];
for (let r = 0; r < N; r++) { const t = performance.now(); await send('/v2/tms-api/batch/loads', batch(r)); ms.push(performance.now() - t); }
ms.sort((a, b) => a - b);
console.log('median', ms[ms.length >> 1]!.toFixed(1), 'min', ms[0]!.toFixed(1));
await app.close();
