/**
 * D16: what the unknown-field walk costs a batch of 100 loads (the envelope and each item's data object
 * beside its schema), in process: `npx tsx bench/ignored-fields.bench.ts`.
 */
import { unknownFields } from '../src/lib/http/ignored-fields.js';
import { LoadUpdate } from '../src/modules/loads/loads.schema.js';
import { batchRequestSchema } from '../src/modules/shared/batch.js';
const env = batchRequestSchema('load', ['create', 'update', 'upsert', 'delete']);
const item = (i: number) => ({
  operation: 'upsert',
  load: {
    external_reference_id: `L-${i}`,
    equipment_type: 'DRY_VAN',
    transport_mode: 'FTL',
    status: 'DELIVERED',
    customer_external_reference_id: 'C1',
    carrier_external_reference_id: 'CAR1',
    weight: 1000,
    weight_uom: 'lbs',
    description: 'x',
    stops: [
      { stop_type: 'Pickup', location_external_reference_id: 'DAL', early_arrival: '2026-03-02T08:00:00.000Z', late_arrival: '2026-03-02T10:00:00.000Z' },
      { stop_type: 'Delivery', location_external_reference_id: 'HOU', early_arrival: '2026-03-03T08:00:00.000Z', late_arrival: '2026-03-03T12:00:00.000Z' },
    ],
    financial_rates: [{ rate_entity: 'CARRIER', amount: 1200 }],
  },
});
const body: { items: { operation: string; load: Record<string, unknown> }[] } = { items: Array.from({ length: 100 }, (_, i) => item(i)) };
function walk() {
  const out: ReturnType<typeof unknownFields> = [];
  unknownFields(env, body, ['body'], out);
  for (let i = 0; i < body.items.length; i++) unknownFields(LoadUpdate, body.items[i]!.load, ['body', 'items', i, 'load'], out);
  return out;
}
for (let i = 0; i < 200; i++) walk();
const n = 2000;
const t0 = process.hrtime.bigint();
for (let i = 0; i < n; i++) walk();
const us = Number(process.hrtime.bigint() - t0) / n / 1000;
console.log(`walk of a 100-load batch: ${us.toFixed(1)} µs; found ${walk().length}`);
