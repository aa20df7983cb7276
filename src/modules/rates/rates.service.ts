import type { MarketRateSnapshotsTable } from '../../lib/db/types.js';
import { type Clock, toIso } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { ValidationError } from '../../lib/http/errors.js';
import { pagination } from '../../lib/http/pagination.js';
import { cellOf } from '../../domain/grid.js';
import { geocodeLocation } from '../locations/locations.geocoding.js';
import type { WritePipeline } from '../shared/write-pipeline.js';
import { insertSnapshot, listSnapshots, locationPoint } from './rates.repo.js';
import type { LanePointInput, MarketRate, MarketRateCreate, MarketRateListQuery } from './rates.schema.js';

interface ResolvedPoint {
  label: string;
  locationRef: string | null;
  latitude: number;
  longitude: number;
  state: string | null;
}

function toMarketRate(row: MarketRateSnapshotsTable): MarketRate {
  const point = (label: string, latitude: number, longitude: number, state: string | null) => ({
    location_external_reference_id: label.startsWith('location:') ? label.slice('location:'.length) : null,
    label: label.startsWith('location:') ? label.slice('location:'.length) : label,
    latitude,
    longitude,
    state,
  });
  return {
    id: row.id,
    equipment_type: row.equipment_type,
    origin: point(row.origin_label, row.origin_latitude, row.origin_longitude, row.origin_state),
    destination: point(row.destination_label, row.destination_latitude, row.destination_longitude, row.destination_state),
    rate_per_mile: row.rate_per_mile,
    rate_per_mile_low: row.rate_per_mile_low,
    rate_per_mile_high: row.rate_per_mile_high,
    currency: row.currency,
    source: row.source,
    as_of: row.as_of,
    created_at: row.created_at,
  };
}

export function marketRatesService(pipeline: WritePipeline, clock: Clock) {
  /** A lane end: a location of the organization, or geocoded exactly as a location would be (docs/api.md, "Market rate snapshots"). */
  async function resolvePoint(orgId: string, field: 'origin' | 'destination', input: LanePointInput): Promise<ResolvedPoint> {
    if (input.location_external_reference_id !== undefined) {
      const loc = await locationPoint(pipeline.reader, orgId, input.location_external_reference_id);
      if (!loc) {
        throw ValidationError.single(
          ['body', field, 'location_external_reference_id'],
          `Value error, no location with external_reference_id '${input.location_external_reference_id}' in your organization`,
        );
      }
      return { label: `location:${input.location_external_reference_id}`, locationRef: input.location_external_reference_id, ...loc };
    }
    try {
      const geo = geocodeLocation(input);
      const label =
        geo.geocode_source === 'postal_code' ? `${geo.postal_code} ${geo.state ?? ''} ${geo.country}`.replace(/\s+/g, ' ') : `${geo.latitude},${geo.longitude}`;
      return { label, locationRef: null, latitude: geo.latitude, longitude: geo.longitude, state: geo.state };
    } catch (err) {
      if (err instanceof ValidationError) throw err.nestedUnder(['body', field]);
      throw err;
    }
  }

  return {
    async create(orgId: string, input: MarketRateCreate): Promise<MarketRate> {
      const low = input.rate_per_mile_low ?? null;
      const high = input.rate_per_mile_high ?? null;
      if (low !== null && low > input.rate_per_mile)
        throw ValidationError.single(['body', 'rate_per_mile_low'], 'Value error, rate_per_mile_low is above rate_per_mile');
      if (high !== null && high < input.rate_per_mile)
        throw ValidationError.single(['body', 'rate_per_mile_high'], 'Value error, rate_per_mile_high is below rate_per_mile');
      const origin = await resolvePoint(orgId, 'origin', input.origin);
      const destination = await resolvePoint(orgId, 'destination', input.destination);
      const now = toIso(clock.now());
      const row: MarketRateSnapshotsTable = {
        id: newId('mrs'),
        org_id: orgId,
        equipment_type: input.equipment_type,
        origin_label: origin.label,
        destination_label: destination.label,
        origin_latitude: origin.latitude,
        origin_longitude: origin.longitude,
        destination_latitude: destination.latitude,
        destination_longitude: destination.longitude,
        origin_state: origin.state,
        destination_state: destination.state,
        origin_cell: cellOf(origin.latitude, origin.longitude),
        destination_cell: cellOf(destination.latitude, destination.longitude),
        rate_per_mile: input.rate_per_mile,
        rate_per_mile_low: low,
        rate_per_mile_high: high,
        currency: (input.currency ?? 'USD').toUpperCase(),
        source: input.source ?? null,
        as_of: input.as_of ?? now,
        created_at: now,
      };
      const snapshot = toMarketRate(row);
      await pipeline.write(orgId, async (tx, changes) => {
        await insertSnapshot(tx, row);
        changes.record({ kind: 'market_rates', op: 'created', id: row.id, external_reference_id: null, data: snapshot });
      });
      return snapshot;
    },

    async list(orgId: string, query: MarketRateListQuery) {
      const { rows, total } = await listSnapshots(pipeline.reader, orgId, query);
      return { items: rows.map(toMarketRate), pagination: pagination(query.page, query.page_size, total) };
    },
  };
}

export type MarketRatesService = ReturnType<typeof marketRatesService>;
