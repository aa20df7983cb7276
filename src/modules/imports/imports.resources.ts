import type { TSchema } from '@sinclair/typebox';
import type { LocPart, ValidationIssue } from '../../lib/http/errors.js';
import { RECORD_KINDS } from '../../domain/records.js';
import type { BatchItem, BatchResult, RunOptions } from '../shared/batch.js';
import { CarrierCreate } from '../carriers/carriers.schema.js';
import { CustomerCreate } from '../customers/customers.schema.js';
import { LoadCreate } from '../loads/loads.schema.js';
import { LocationCreate } from '../locations/locations.schema.js';
import { IMPORT_RESOURCES, type ImportResource } from './imports.schema.js';

/** A resource's batch of the write path (the same runner /batch/<resource> uses), without the 100-item cap of the endpoint. */
export interface ImportWriter {
  batch(orgId: string, items: BatchItem[], opts: RunOptions): Promise<BatchResult>;
}

/** An import's `emit_events` (docs/imports.md, "The shape"). */
export type ImportEmit = 'summary' | 'all';

/**
 * One resource an import takes (docs/imports.md, "The shape"): everything the service and the runner
 * need of it, in one object.
 */
export interface ImportResourceDefinition {
  resource: ImportResource;
  /** The key of its batch items (`{operation, <noun>: record}`), and of its refused rows' locations there. */
  noun: string;
  /** The single create's schema: a CSV's columns are placed and typed by it and its required ones checked (imports.header.ts). */
  createSchema: TSchema;
  /** Its writer by emit_events: `summary` writes through a pipeline without the outbox (no per-row events). */
  writers: Record<ImportEmit, ImportWriter>;
  /** The detail of a refused row: a batch item's locations (`body.items[i].<noun>…`) as the single create would name them (`body…`). */
  refusal(detail: string | ValidationIssue[], index: number): string | ValidationIssue[];
}

export type ImportResources = Record<ImportResource, ImportResourceDefinition>;

/** The create schema of each resource an import takes. */
const CREATE_SCHEMAS: Record<ImportResource, TSchema> = { locations: LocationCreate, customers: CustomerCreate, carriers: CarrierCreate, loads: LoadCreate };

/** A refused row's detail with the batch's locations of item `index` (`body.items[index].<noun>…`) as the single create's (`body…`). */
function rowDetail(detail: string | ValidationIssue[], index: number, noun: string): string | ValidationIssue[] {
  if (typeof detail === 'string') return detail;
  return detail.map((issue) => {
    const loc = issue.loc;
    if (loc[0] === 'body' && loc[1] === 'items' && loc[2] === index) {
      const rest: LocPart[] = loc.slice(loc[3] === noun ? 4 : 3);
      return Object.assign({}, issue, { loc: ['body', ...rest] });
    }
    return issue;
  });
}

/** One definition of `resource`, written by `writers` (its record service over each pipeline). */
function importResource(resource: ImportResource, writers: Record<ImportEmit, ImportWriter>): ImportResourceDefinition {
  const noun = RECORD_KINDS[resource].noun;
  return { resource, noun, createSchema: CREATE_SCHEMAS[resource], writers, refusal: (detail, index) => rowDetail(detail, index, noun) };
}

/**
 * The resources an import takes, each written by its record service: `all` over the API's pipeline,
 * `summary` over the pipeline without the outbox (app.ts).
 */
export function importResources(services: Record<ImportEmit, Record<ImportResource, ImportWriter>>): ImportResources {
  const entries = IMPORT_RESOURCES.map((resource) => [
    resource,
    importResource(resource, { summary: services.summary[resource], all: services.all[resource] }),
  ]);
  return Object.fromEntries(entries) as ImportResources;
}
