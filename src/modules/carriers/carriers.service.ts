import type { DataStore, Executor } from '../../lib/db/index.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { inTransaction, retryOnUniqueRace } from '../../lib/db/tx.js';
import type { CarrierContactsTable, CarriersTable } from '../../lib/db/types.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ConflictError, NotFoundError, ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { compileBodyValidator } from '../../lib/http/validation.js';
import { assertSameReference, changedFields } from '../shared/records.js';
import { carriersRepo as repo } from './carriers.repo.js';
import {
  CarrierCreate,
  type AddressInput,
  type Carrier,
  type CarrierListQuery,
  type CarrierUpdate,
  type Contact,
  type ContactInput,
} from './carriers.schema.js';

const validateCreate = compileBodyValidator(CarrierCreate);

const ADDRESS_COLUMNS = {
  address_line1: 'address_line1',
  address_line2: 'address_line2',
  city: 'address_city',
  state: 'address_state',
  postal_code: 'address_postal_code',
  country: 'address_country',
} as const;

function addressColumns(address: AddressInput | null): Pick<CarriersTable, (typeof ADDRESS_COLUMNS)[keyof typeof ADDRESS_COLUMNS]> {
  const a = address ?? {};
  return {
    address_line1: a.address_line1 ?? null,
    address_line2: a.address_line2 ?? null,
    address_city: a.city ?? null,
    address_state: a.state ?? null,
    address_postal_code: a.postal_code ?? null,
    address_country: a.country ?? null,
  };
}

function toContact(row: CarrierContactsTable): Contact {
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    primary_email: row.primary_email,
    primary_phone: row.primary_phone,
    is_primary_contact: row.is_primary_contact === 1,
  };
}

function toCarrier(row: CarriersTable, contacts: CarrierContactsTable[]): Carrier {
  const address = Object.fromEntries(
    Object.entries(ADDRESS_COLUMNS).map(([field, column]) => [field, row[column]]),
  ) as Carrier['address'] & object;
  const hasAddress = Object.values(address).some((v) => v !== null);
  return {
    id: row.id,
    external_reference_id: row.external_reference_id,
    name: row.name,
    mc_number: row.mc_number,
    dot_number: row.dot_number,
    phone_number: row.phone_number,
    email: row.email,
    address: hasAddress ? address : null,
    contacts: contacts.map(toContact),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function scalarColumns(input: CarrierUpdate): Partial<CarriersTable> {
  const patch: Partial<CarriersTable> = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.mc_number !== undefined) patch.mc_number = input.mc_number;
  if (input.dot_number !== undefined) patch.dot_number = input.dot_number;
  if (input.phone_number !== undefined) patch.phone_number = input.phone_number;
  if (input.email !== undefined) patch.email = input.email;
  if (input.address !== undefined) Object.assign(patch, addressColumns(input.address));
  return patch;
}

/**
 * Builds the contact rows that replace a carrier's list: a contact sent with the id of one of this
 * carrier's contacts keeps that id; one without an id gets a new one; an id of no contact of this
 * carrier is refused, so a caller cannot graft another record's contact.
 */
function contactRows(orgId: string, carrierId: string, input: ContactInput[], existingIds: ReadonlySet<string>): CarrierContactsTable[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  const rows = input.map((c, position) => {
    if (c.id !== undefined && (!existingIds.has(c.id) || seen.has(c.id))) {
      issues.push({
        type: 'value_error',
        loc: ['body', 'contacts', position, 'id'],
        msg: seen.has(c.id ?? '')
          ? `Contact id '${c.id}' appears twice`
          : `Contact id '${c.id}' is not a contact of this carrier: omit the id to add a new contact`,
      });
    }
    if (c.id) seen.add(c.id);
    return {
      id: c.id ?? newId('contact'),
      org_id: orgId,
      carrier_id: carrierId,
      position,
      first_name: c.first_name ?? null,
      last_name: c.last_name ?? null,
      primary_email: c.primary_email ?? null,
      primary_phone: c.primary_phone ?? null,
      is_primary_contact: c.is_primary_contact ? 1 : 0,
    };
  });
  if (issues.length > 0) throw new ValidationError(issues);
  return rows;
}

function sameContacts(a: CarrierContactsTable[], b: CarrierContactsTable[]): boolean {
  return JSON.stringify(a.map(toContact)) === JSON.stringify(b.map(toContact));
}

export function carriersService(store: DataStore, clock: Clock) {
  async function insert(tx: Executor, orgId: string, input: CarrierCreate): Promise<Carrier> {
    const now = toIso(clock.now());
    const row: CarriersTable = {
      id: newId('carrier'),
      org_id: orgId,
      external_reference_id: input.external_reference_id,
      name: input.name,
      mc_number: input.mc_number ?? null,
      dot_number: input.dot_number ?? null,
      phone_number: input.phone_number ?? null,
      email: input.email ?? null,
      ...addressColumns(input.address ?? null),
      created_at: now,
      updated_at: now,
    };
    await repo.insert(tx, row);
    const contacts = contactRows(orgId, row.id, input.contacts ?? [], new Set());
    await repo.replaceContacts(tx, orgId, row.id, contacts);
    return toCarrier(row, contacts);
  }

  async function applyUpdate(tx: Executor, orgId: string, row: CarriersTable, input: CarrierUpdate): Promise<Carrier> {
    const current = await repo.contactsOf(tx, orgId, [row.id]);
    let contacts = current;
    let contactsChanged = false;
    if (input.contacts !== undefined) {
      contacts = contactRows(orgId, row.id, input.contacts, new Set(current.map((c) => c.id)));
      contactsChanged = !sameContacts(current, contacts);
      if (contactsChanged) await repo.replaceContacts(tx, orgId, row.id, contacts);
    }
    const patch = changedFields(row, scalarColumns(input));
    if (!patch && !contactsChanged) return toCarrier(row, current);
    const updated = { ...row, ...patch, updated_at: toIso(clock.now()) };
    await repo.update(tx, orgId, row.id, { ...patch, updated_at: updated.updated_at });
    return toCarrier(updated, contacts);
  }

  async function withContacts(tx: Executor, orgId: string, rows: CarriersTable[]): Promise<Carrier[]> {
    const contacts = await repo.contactsOf(tx, orgId, rows.map((r) => r.id));
    const byCarrier = new Map<string, CarrierContactsTable[]>();
    for (const c of contacts) {
      const list = byCarrier.get(c.carrier_id) ?? [];
      list.push(c);
      byCarrier.set(c.carrier_id, list);
    }
    return rows.map((r) => toCarrier(r, byCarrier.get(r.id) ?? []));
  }

  return {
    async list(orgId: string, query: CarrierListQuery) {
      const { rows, total } = await repo.list(store.db, orgId, query, query);
      return { items: await withContacts(store.db, orgId, rows), pagination: pagination(query.page, query.page_size, total) };
    },

    async get(orgId: string, ref: string): Promise<Carrier> {
      const row = await repo.findByRef(store.db, orgId, ref);
      if (!row) throw new NotFoundError('Carrier', ref);
      return (await withContacts(store.db, orgId, [row]))[0]!;
    },

    async create(orgId: string, input: CarrierCreate): Promise<Carrier> {
      try {
        return await inTransaction(store, (tx) => insert(tx, orgId, input));
      } catch (err) {
        if (isUniqueViolation(err)) throw ConflictError.duplicate('Carrier', input.external_reference_id);
        throw err;
      }
    },

    async update(orgId: string, ref: string, input: CarrierUpdate): Promise<Carrier> {
      assertSameReference(ref, input.external_reference_id);
      return inTransaction(store, async (tx) => {
        const existing = await repo.findByRef(tx, orgId, ref);
        if (!existing) throw new NotFoundError('Carrier', ref);
        return applyUpdate(tx, orgId, existing, input);
      });
    },

    async upsert(orgId: string, ref: string, input: CarrierUpdate): Promise<{ carrier: Carrier; created: boolean }> {
      assertSameReference(ref, input.external_reference_id);
      return retryOnUniqueRace(() =>
        inTransaction(store, async (tx) => {
          const existing = await repo.findByRef(tx, orgId, ref);
          if (existing) return { carrier: await applyUpdate(tx, orgId, existing, input), created: false };
          const candidate = { ...input, external_reference_id: ref };
          const issues = validateCreate(candidate, ['body']);
          if (issues) throw new ValidationError(issues);
          return { carrier: await insert(tx, orgId, candidate as CarrierCreate), created: true };
        }),
      );
    },

    async delete(orgId: string, refOrId: string): Promise<void> {
      await inTransaction(store, async (tx) => {
        const row =
          (await repo.findByRef(tx, orgId, refOrId)) ??
          (refOrId.startsWith('carrier_') ? await repo.findById(tx, orgId, refOrId) : undefined);
        if (!row) throw new NotFoundError('Carrier', refOrId);
        await repo.delete(tx, orgId, row.id);
      });
    },
  };
}

export type CarriersService = ReturnType<typeof carriersService>;
