import { describe, expect, it } from 'vitest';
import type { ImportWriter } from '../../../src/modules/imports/imports.resources.js';
import { importResources } from '../../../src/modules/imports/imports.resources.js';
import { LoadCreate } from '../../../src/modules/loads/loads.schema.js';

const writer = (): ImportWriter => ({ batch: async () => ({ results: [] }) as never });

describe('importResources (one definition per resource an import takes)', () => {
  const all = { locations: writer(), customers: writer(), carriers: writer(), loads: writer() };
  const summary = { locations: writer(), customers: writer(), carriers: writer(), loads: writer() };
  const resources = importResources({ all, summary });

  it('holds each resource its noun, create schema and a writer for each emit_events', () => {
    expect(Object.keys(resources).sort()).toEqual(['carriers', 'customers', 'loads', 'locations']);
    expect(resources.loads).toMatchObject({ resource: 'loads', noun: 'load', createSchema: LoadCreate });
    expect(resources.loads.writers.all).toBe(all.loads);
    expect(resources.loads.writers.summary).toBe(summary.loads);
  });

  it('names a refused row’s problems as the single create would (body…, not body.items[i].<noun>…)', () => {
    const detail = [
      { type: 'missing', loc: ['body', 'items', 3, 'load', 'stops', 0], msg: 'Field required' },
      { type: 'missing', loc: ['body', 'items', 3, 'operation'], msg: 'Field required' },
      { type: 'missing', loc: ['body', 'items', 4, 'load'], msg: 'Field required' },
    ];
    expect(resources.loads.refusal(detail, 3)).toEqual([
      { type: 'missing', loc: ['body', 'stops', 0], msg: 'Field required' },
      { type: 'missing', loc: ['body', 'operation'], msg: 'Field required' },
      detail[2],
    ]);
    expect(resources.customers.refusal('Customer not found', 0)).toBe('Customer not found');
  });
});
