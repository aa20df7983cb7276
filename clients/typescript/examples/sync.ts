/**
 * Example: push a TMS export to Lanebridge, then read back what it holds and what changed.
 *
 *   LANEBRIDGE_URL=http://127.0.0.1:8080 LANEBRIDGE_API_KEY=lbk_… npx tsx clients/typescript/examples/sync.ts
 *
 * 1. Upserts customers, carriers, locations and loads with the batch endpoints (each batch under an
 *    Idempotency-Key, so a retried batch is applied once; 429 and 503 are retried after Retry-After).
 * 2. Walks every page of loads.
 * 3. Reads the change feed from the cursor kept in SYNC_CURSOR_FILE (default: none, from the start)
 *    and stores the new cursor there.
 * Prints one JSON object on stdout: what was pushed, read and seen in the feed. Exits 1 on a failure.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { allPages, createLanebridgeClient, LanebridgeError, readFeed, type LanebridgeClient, type Schemas } from '../src/index.js';

/** What a TMS export might hold (your system's records, mapped to Lanebridge's fields). */
const EXPORT = {
  customers: [
    { external_reference_id: 'CUST-ACME', name: 'Acme Foods', customer_type: 'shipper' },
    { external_reference_id: 'CUST-OLWERK', name: 'Ölwerk Müller GmbH', phone: '+49 30 1234567' },
  ] satisfies Schemas['CustomerCreate'][],
  carriers: [
    {
      external_reference_id: 'CAR-BLUE',
      name: 'Blue Line Trucking',
      dot_number: 'DOT789012',
      contacts: [{ first_name: 'Ana', last_name: 'Ruiz', primary_email: 'ana@blueline.example', is_primary_contact: true }],
    },
  ] satisfies Schemas['CarrierCreate'][],
  locations: [
    { external_reference_id: 'LOC-DAL', name: 'Dallas DC', postal_code: '75201', state: 'TX', city: 'Dallas' },
    { external_reference_id: 'LOC-HOU', name: 'Houston Port', postal_code: '77002', state: 'US-TX', city: 'Houston' },
    { external_reference_id: 'LOC-CHI', name: 'Chicago Crossdock', latitude: 41.8781, longitude: -87.6298, country: 'US' },
  ] satisfies Schemas['LocationCreate'][],
  loads: [
    {
      external_reference_id: 'LOAD-1001',
      customer_external_reference_id: 'CUST-ACME',
      equipment_type: 'DRY_VAN', // the server also accepts any letter case; the types ask for the canonical spelling
      transport_mode: 'FTL',
      status: 'ACTIVE',
      stops: [
        { location_external_reference_id: 'LOC-DAL', stop_type: 'Pickup', early_arrival: '2026-12-01T08:00:00Z', late_arrival: '2026-12-01T12:00:00Z' },
        { location_external_reference_id: 'LOC-HOU', stop_type: 'Delivery', early_arrival: '2026-12-02T08:00:00', late_arrival: '2026-12-02T16:00:00' },
      ],
      financial_rates: [{ rate_entity: 'CUSTOMER', amount: 1850 }],
    },
    {
      external_reference_id: 'LOAD-1002',
      customer_external_reference_id: 'CUST-OLWERK',
      equipment_type: 'REEFER',
      transport_mode: 'LTL',
      carrier_external_reference_id: 'CAR-BLUE',
      stops: [
        { location_external_reference_id: 'LOC-CHI', stop_type: 'Pickup', early_arrival: '2026-12-03T07:00:00Z', late_arrival: '2026-12-03T09:00:00Z' },
        { location_external_reference_id: 'LOC-DAL', stop_type: 'Delivery', early_arrival: '2026-12-05T07:00:00Z', late_arrival: '2026-12-05T17:00:00Z' },
      ],
    },
  ] satisfies Schemas['LoadCreate'][],
};

type BatchResult = Schemas['BatchResult'];

function failures(kind: string, result: BatchResult): string[] {
  return result.results
    .filter((r) => !r.success)
    .map((r) => `${kind} ${r.external_reference_id ?? `#${r.index}`}: ${r.error?.status} ${JSON.stringify(r.error?.detail)}`);
}

function unwrap<T>(kind: string, answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data === undefined) throw new LanebridgeError(answer.response.status, answer.error, answer.response.headers.get('x-request-id'));
  return answer.data;
}

/** Pushes the export: every record upserted (created when new, updated when it exists). */
async function push(client: LanebridgeClient) {
  const customers = unwrap(
    'customers',
    await client.POST('/v2/tms-api/batch/customers', {
      body: { items: EXPORT.customers.map((customer) => ({ operation: 'upsert' as const, customer })) },
    }),
  );
  const carriers = unwrap(
    'carriers',
    await client.POST('/v2/tms-api/batch/carriers', {
      body: { items: EXPORT.carriers.map((carrier) => ({ operation: 'upsert' as const, carrier })) },
    }),
  );
  // Locations before the loads whose stops name them.
  const locations = unwrap(
    'locations',
    await client.POST('/v2/tms-api/batch/locations', {
      body: { items: EXPORT.locations.map((location) => ({ operation: 'upsert' as const, location })) },
    }),
  );
  const loads = unwrap(
    'loads',
    await client.POST('/v2/tms-api/batch/loads', {
      body: { items: EXPORT.loads.map((load) => ({ operation: 'upsert' as const, load })) },
    }),
  );
  const failed = [...failures('customer', customers), ...failures('carrier', carriers), ...failures('location', locations), ...failures('load', loads)];
  return {
    counts: { customers: customers.success_count, carriers: carriers.success_count, locations: locations.success_count, loads: loads.success_count },
    failed,
  };
}

async function sync(options: { baseUrl: string; apiKey: string; cursorFile?: string }) {
  const client = createLanebridgeClient({ baseUrl: options.baseUrl, apiKey: options.apiKey });
  const pushed = await push(client);

  const loads = await allPages(client, '/v2/tms-api/loads', { query: { sort: 'external_reference_id' } });

  let after = 0;
  if (options.cursorFile) {
    try {
      after = Number(JSON.parse(readFileSync(options.cursorFile, 'utf8')).after) || 0;
    } catch {
      after = 0;
    }
  }
  const eventTypes: Record<string, number> = {};
  let nextAfter = after;
  for await (const page of readFeed(client, { after })) {
    for (const event of page.items) eventTypes[event.type] = (eventTypes[event.type] ?? 0) + 1;
    nextAfter = page.next_after;
    // Keep the cursor once the page is handled: the next run starts after it.
    if (options.cursorFile) writeFileSync(options.cursorFile, JSON.stringify({ after: nextAfter }));
  }

  return {
    pushed: pushed.counts,
    failed: pushed.failed,
    loads: loads.map((l) => ({
      external_reference_id: l.external_reference_id,
      status: l.status,
      customer: l.customer_name,
      carrier: l.carrier_name,
      stops: l.stops.map((s) => `${s.stop_type} ${s.location_external_reference_id}`),
      total_distance: l.total_distance,
    })),
    events: { after, next_after: nextAfter, types: eventTypes },
  };
}

async function main() {
  const baseUrl = process.env.LANEBRIDGE_URL;
  const apiKey = process.env.LANEBRIDGE_API_KEY;
  if (!baseUrl || !apiKey) {
    process.stderr.write('Set LANEBRIDGE_URL (e.g. http://127.0.0.1:8080) and LANEBRIDGE_API_KEY (lbk_…).\n');
    process.exit(2);
  }
  const report = await sync({ baseUrl, apiKey, cursorFile: process.env.SYNC_CURSOR_FILE });
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (report.failed.length > 0) {
    process.stderr.write(`${report.failed.join('\n')}\n`);
    process.exit(1);
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
