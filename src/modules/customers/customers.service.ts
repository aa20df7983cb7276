import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction, retryOnUniqueRace } from '../../lib/db/tx.js';
import type { CustomersTable } from '../../lib/db/types.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, NotFoundError, ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { assertSameReference, changedFields } from '../shared/records.js';
import { customersRepo as repo } from './customers.repo.js';
import { CustomerCreate, type Customer, type CustomerListQuery, type CustomerUpdate } from './customers.schema.js';

const validateCreate = compileBodyValidator(CustomerCreate);

function toCustomer(row: CustomersTable): Customer {
  return {
    id: row.id,
    external_reference_id: row.external_reference_id,
    name: row.name,
    reference_number: row.reference_number,
    domain: row.domain,
    phone: row.phone,
    is_active: row.is_active === 1,
    customer_type: row.customer_type,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function patchColumns(input: CustomerUpdate): Partial<CustomersTable> {
  const patch: Partial<CustomersTable> = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.reference_number !== undefined) patch.reference_number = input.reference_number;
  if (input.domain !== undefined) patch.domain = input.domain;
  if (input.phone !== undefined) patch.phone = input.phone;
  if (input.is_active !== undefined) patch.is_active = input.is_active ? 1 : 0;
  if (input.customer_type !== undefined) patch.customer_type = input.customer_type;
  return patch;
}

export function customersService(store: DataStore, clock: Clock) {
  async function insert(tx: Executor, orgId: string, input: CustomerCreate): Promise<CustomersTable> {
    const now = toIso(clock.now());
    const row: CustomersTable = {
      id: newId('cust'),
      org_id: orgId,
      external_reference_id: input.external_reference_id,
      name: input.name,
      reference_number: input.reference_number ?? null,
      domain: input.domain ?? null,
      phone: input.phone ?? null,
      is_active: input.is_active === false ? 0 : 1,
      customer_type: input.customer_type ?? null,
      created_at: now,
      updated_at: now,
    };
    await repo.insert(tx, row);
    return row;
  }

  async function applyUpdate(tx: Executor, orgId: string, row: CustomersTable, input: CustomerUpdate): Promise<CustomersTable> {
    const patch = changedFields(row, patchColumns(input));
    if (!patch) return row;
    const updated = { ...row, ...patch, updated_at: toIso(clock.now()) };
    await repo.update(tx, orgId, row.id, { ...patch, updated_at: updated.updated_at });
    return updated;
  }

  async function findByRefOrId(tx: Executor, orgId: string, refOrId: string) {
    return (await repo.findByRef(tx, orgId, refOrId)) ?? (refOrId.startsWith('cust_') ? await repo.findById(tx, orgId, refOrId) : undefined);
  }

  return {
    async list(orgId: string, query: CustomerListQuery) {
      const { rows, total } = await repo.list(store.db, orgId, query, query);
      return { items: rows.map(toCustomer), pagination: pagination(query.page, query.page_size, total) };
    },

    async get(orgId: string, ref: string): Promise<Customer> {
      const row = await repo.findByRef(store.db, orgId, ref);
      if (!row) throw new NotFoundError('Customer', ref);
      return toCustomer(row);
    },

    async create(orgId: string, input: CustomerCreate): Promise<Customer> {
      try {
        return toCustomer(await inTransaction(store, (tx) => insert(tx, orgId, input)));
      } catch (err) {
        if (isUniqueViolation(err)) throw ConflictError.duplicate('Customer', input.external_reference_id);
        throw err;
      }
    },

    async update(orgId: string, ref: string, input: CustomerUpdate): Promise<Customer> {
      assertSameReference(ref, input.external_reference_id);
      const row = await inTransaction(store, async (tx) => {
        const existing = await repo.findByRef(tx, orgId, ref);
        if (!existing) throw new NotFoundError('Customer', ref);
        return applyUpdate(tx, orgId, existing, input);
      });
      return toCustomer(row);
    },

    /** Creates the customer when absent (the create rules apply), otherwise updates the fields sent. */
    async upsert(orgId: string, ref: string, input: CustomerUpdate): Promise<{ customer: Customer; created: boolean }> {
      assertSameReference(ref, input.external_reference_id);
      return retryOnUniqueRace(() =>
        inTransaction(store, async (tx) => {
          const existing = await repo.findByRef(tx, orgId, ref);
          if (existing) return { customer: toCustomer(await applyUpdate(tx, orgId, existing, input)), created: false };
          const candidate = { ...input, external_reference_id: ref };
          const issues = validateCreate(candidate, ['body']);
          if (issues) throw new ValidationError(issues);
          return { customer: toCustomer(await insert(tx, orgId, candidate as CustomerCreate)), created: true };
        }),
      );
    },

    /** `refOrId` is the external reference id or the service id (published clients delete by id). */
    async delete(orgId: string, refOrId: string): Promise<void> {
      await inTransaction(store, async (tx) => {
        const row = await findByRefOrId(tx, orgId, refOrId);
        if (!row) throw new NotFoundError('Customer', refOrId);
        await repo.delete(tx, orgId, row.id);
      });
    },
  };
}

export type CustomersService = ReturnType<typeof customersService>;
