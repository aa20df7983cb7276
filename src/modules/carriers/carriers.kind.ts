import type { Executor } from '../../lib/db/index.js';
import type { CarrierContactsTable, CarriersTable } from '../../lib/db/types.js';
import { foldCase } from '../../lib/fold.js';
import { newId } from '../../lib/ids.js';
import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { simpleKindData, type NewRecordBase, type RecordDefinition } from '../shared/record-kind.js';
import { tenantRecords } from '../shared/tenant-records.repo.js';
import { sentFields } from '../shared/records.js';
import { contactsOf, replaceContacts } from './carriers.repo.js';
import { CarrierCreate, CarrierUpdate, type AddressInput, type Carrier, type Contact, type ContactInput } from './carriers.schema.js';

const repo = tenantRecords('carriers');

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
  const address = Object.fromEntries(Object.entries(ADDRESS_COLUMNS).map(([field, column]) => [field, row[column]])) as Carrier['address'] & object;
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
  const patch: Partial<CarriersTable> = sentFields(input, ['name', 'mc_number', 'dot_number', 'phone_number', 'email']);
  if (input.address !== undefined) Object.assign(patch, addressColumns(input.address));
  if (input.name !== undefined) patch.name_folded = foldCase(input.name);
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
    // A contact with no name, email or phone (fields sent under other names) is refused in every mode
    // (docs/api.md, "Unknown fields: `Lanebridge-Ignored-Fields` and `Prefer: handling=strict`").
    if (![c.first_name, c.last_name, c.primary_email, c.primary_phone].some((v) => typeof v === 'string' && v.trim() !== '')) {
      issues.push({
        type: 'value_error',
        loc: ['body', 'contacts', position],
        msg: 'Value error, a contact needs at least one of first_name, last_name, primary_email or primary_phone',
      });
    }
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

/** Carriers as answered, with their contacts (one read for all the rows). */
export async function presentCarriers(_deps: void, tx: Executor, orgId: string, rows: CarriersTable[]): Promise<Carrier[]> {
  const contacts = await contactsOf(
    tx,
    orgId,
    rows.map((r) => r.id),
  );
  const byCarrier = new Map<string, CarrierContactsTable[]>();
  for (const c of contacts) {
    const list = byCarrier.get(c.carrier_id) ?? [];
    list.push(c);
    byCarrier.set(c.carrier_id, list);
  }
  return rows.map((r) => toCarrier(r, byCarrier.get(r.id) ?? []));
}

/** A new carrier's row, then its contacts. */
async function insertCarrier(_deps: void, tx: Executor, input: CarrierCreate, base: NewRecordBase): Promise<CarriersTable> {
  const orgId = base.org_id;
  const row: CarriersTable = {
    id: base.id,
    org_id: base.org_id,
    external_reference_id: base.external_reference_id,
    created_at: base.created_at,
    updated_at: base.updated_at,
    name: input.name,
    name_folded: foldCase(input.name),
    mc_number: input.mc_number ?? null,
    dot_number: input.dot_number ?? null,
    phone_number: input.phone_number ?? null,
    email: input.email ?? null,
    ...addressColumns(input.address ?? null),
  };
  await repo.insert(tx, row);
  await replaceContacts(tx, orgId, row.id, contactRows(orgId, row.id, input.contacts ?? [], new Set()));
  return row;
}

/** The columns sent; `contacts` sent replaces the list when it differs (the carrier is then touched). */
async function carrierUpdateColumns(_deps: void, tx: Executor, orgId: string, row: CarriersTable, input: CarrierUpdate) {
  let contactsChanged = false;
  if (input.contacts !== undefined) {
    const current = await contactsOf(tx, orgId, [row.id]);
    const next = contactRows(orgId, row.id, input.contacts, new Set(current.map((c) => c.id)));
    contactsChanged = !sameContacts(current, next);
    if (contactsChanged) await replaceContacts(tx, orgId, row.id, next);
  }
  return { patch: scalarColumns(input), touched: contactsChanged };
}

/** Carriers (docs/api.md, "Carriers"): their contacts are carried in carrier_contacts. */
export const CARRIER_KIND: RecordDefinition<'carriers', CarrierCreate, CarrierUpdate, Carrier> = Object.assign(simpleKindData('carriers'), {
  createSchema: CarrierCreate,
  updateSchema: CarrierUpdate,
  insert: insertCarrier,
  updateColumns: carrierUpdateColumns,
  present: presentCarriers,
});
