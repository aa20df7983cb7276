import { OPEN_STATUSES } from '../../domain/enums.js';
import { RECORD_KINDS, type ReferencedRecordKind } from '../../domain/records.js';
import type { LocationsTable } from '../../lib/db/types.js';
import { cellArea, label, nearCity, utc } from '../format.js';
import { cellOf } from '../../domain/grid.js';
import { html, segment, type SafeHtml } from '../html.js';
import type { LoadLine } from '../../modules/insights/insights.service.js';

/** What the data and detail pages share: records' paths, places, equipment colours, status badges, load tables. */

/** A kind's list page: its collection, as in the API's paths (src/domain/records.ts). */
export const listPath = (kind: ReferencedRecordKind) => `/${RECORD_KINDS[kind].collection}`;
/** A record's page, addressed by its external_reference_id. */
const recordPath = (kind: ReferencedRecordKind) => (ref: string) => `${listPath(kind)}/${segment(ref)}`;
export const locationPath = recordPath('locations');
export const carrierPath = recordPath('carriers');
export const customerPath = recordPath('customers');
export const loadPath = recordPath('loads');
/** A lane, anchored on two of the organization's locations and an equipment type. */
export const lanePath = (originRef: string, destinationRef: string, equipment: string) =>
  `/lanes/${segment(originRef)}/${segment(destinationRef)}/${segment(equipment)}`;

export const API_DOCS = '/docs';

const EQUIPMENT_CLASSES = 8;
const equipmentSeen: string[] = [];
/** A stable colour class per equipment type (`eq-0` … `eq-7`), the same on every map. */
export function equipmentClass(equipment: string): string {
  let i = equipmentSeen.indexOf(equipment);
  if (i < 0) {
    // Known types first, in a fixed order, so colours do not depend on which page was seen first.
    const known = ['DRY_VAN', 'REEFER', 'FLATBED', 'STEP_DECK', 'LOWBOY', 'POWER_ONLY', 'CONTAINER', 'TANKER'];
    i = known.indexOf(equipment);
    if (i < 0) {
      equipmentSeen.push(equipment);
      i = (equipmentSeen.length - 1 + known.length) % EQUIPMENT_CLASSES;
    }
  }
  return `eq-${i % EQUIPMENT_CLASSES}`;
}

/**
 * A location as a place: `Dallas, US-TX`; without a city, the nearest city to its coordinates
 * (`near Dallas, TX`), else its name and state.
 */
export function placeLabel(
  l: (Pick<LocationsTable, 'city' | 'state' | 'name'> & Partial<Pick<LocationsTable, 'latitude' | 'longitude' | 'country'>>) | undefined,
): string {
  if (!l) return '—';
  const near =
    !l.city && l.latitude !== undefined && l.longitude !== undefined
      ? nearCity({ city: l.city, latitude: l.latitude, longitude: l.longitude, country: l.country ?? null })
      : null;
  return near ?? [l.city ?? l.name, l.state].filter(Boolean).join(', ');
}

/** A lane by the areas of its two ends (their grid cells' main places): `Dallas, TX → Houston, TX`. */
export function laneAreas(origin: { latitude: number; longitude: number }, destination: { latitude: number; longitude: number }): string {
  return `${cellArea(cellOf(origin.latitude, origin.longitude)).name} → ${cellArea(cellOf(destination.latitude, destination.longitude)).name}`;
}

export function statusBadge(status: string): SafeHtml {
  const kind = OPEN_STATUSES.has(status) ? 'warn' : status === 'CANCELLED' || status === 'ON_HOLD' || status === 'INACTIVE' ? 'bad' : 'ok';
  return html`<span class="badge ${kind}">${label(status)}</span>`;
}
export function loadTable(caption: string, loads: LoadLine[], cols: { customer?: boolean; carrier?: boolean } = {}): SafeHtml {
  return html`<div class="table-wrap"><table>
  <caption>${caption}</caption>
  <thead><tr><th scope="col">Reference</th><th scope="col">Status</th><th scope="col">Equipment</th>${cols.customer ? html`<th scope="col">Customer</th>` : ''}${
    cols.carrier ? html`<th scope="col">Carrier</th>` : ''
  }<th scope="col">First pickup</th></tr></thead>
  <tbody>${loads.map(
    (l) => html`<tr><th scope="row"><a href="${loadPath(l.external_reference_id)}">${l.external_reference_id}</a></th><td>${statusBadge(l.status)}</td>
    <td>${label(l.equipment_type)}</td>${cols.customer ? html`<td>${l.customer_name ?? '—'}</td>` : ''}${cols.carrier ? html`<td>${l.carrier_name ?? html`<span class="muted">none</span>`}</td>` : ''}
    <td class="nowrap">${utc(l.pickup_at)}</td></tr>`,
  )}</tbody>
</table></div>`;
}

export function emptyState(text: string): SafeHtml {
  return html`<p class="empty">${text} Records arrive through the API: see the <a href="${API_DOCS}">API documentation</a>.</p>`;
}
