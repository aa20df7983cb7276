import { ConflictError, NotFoundError, ValidationError } from '../../lib/http/errors.js';
import { toIso, type Clock } from '../../lib/clock.js';
import type { Executor } from '../../lib/db/index.js';
import type { ChangeSet, WritePipeline } from '../shared/write-pipeline.js';
import { LoadWorkspace } from '../loads/loads.workspace.js';
import type { LoadUpdate } from '../loads/loads.schema.js';
import type { StopWithLocation } from '../../lib/db/types.js';
import type { LoadsService } from '../loads/loads.service.js';
import type { TrackingEventAnswer, TrackingEventInput } from './tracking.schema.js';
import { answeredTimes, instantAt, readTrackingEvent, stopTimeZone } from './tracking.rules.js';
import { insertTrackingEvent, trackingEventById } from './tracking.repo.js';

export interface TrackingDeps {
  pipeline: WritePipeline;
  /** A tracking event changes a stop through the load's own update (its history row, events, follow-up). */
  loads: Pick<LoadsService, 'steps' | 'present'>;
}

/** An answer kept before answers carried the stop's wall time (docs/api.md) gains it from the stop's location now. */
async function keptAnswer(tx: Executor, ws: LoadWorkspace, answer: TrackingEventAnswer): Promise<TrackingEventAnswer> {
  if (answer.time_zone !== undefined) return answer;
  const row = await ws.find(tx, answer.load_external_reference_id);
  const stop = row ? (await ws.stopsOf(tx, row.id)).find((s) => s.stop_number === answer.stop_number) : undefined;
  const place = stop ? await ws.record(tx, 'locations', stop.location_external_reference_id) : undefined;
  return Object.assign({}, answer, answeredTimes(answer.occurred_at, stopTimeZone(place?.timezone)));
}

/**
 * Sets the stop's actual through the load's update, then announces load.stop_arrived or
 * load.stop_departed (data: the load as answered).
 */
async function applyToStop(
  loads: TrackingDeps['loads'],
  tx: Executor,
  changes: ChangeSet,
  ws: LoadWorkspace,
  orgId: string,
  ref: string,
  stops: StopWithLocation[],
  stopNumber: number,
  field: 'actual_arrival' | 'actual_departure',
  occurredAt: string,
) {
  const next = stops.map((s) => ({
    stop_number: s.stop_number,
    stop_type: s.stop_type,
    location_external_reference_id: s.location_external_reference_id,
    early_arrival: s.early_arrival,
    late_arrival: s.late_arrival,
    actual_arrival: s.actual_arrival,
    actual_departure: s.actual_departure,
    ...(s.stop_number === stopNumber ? { [field]: occurredAt } : {}),
  }));
  const updated = await loads.steps.update(tx, changes, ws, orgId, ref, { stops: next } as LoadUpdate);
  await ws.flush(tx);
  const [answer] = await loads.present(tx, orgId, [updated]);
  changes.presented(updated.id, answer);
  changes.announce({ kind: 'loads', type: field === 'actual_arrival' ? 'load.stop_arrived' : 'load.stop_departed', record_id: updated.id, data: answer });
}

/** The departure may not come before the arrival at one stop (422). */
function assertOrder(arrival: string | null, departure: string | null, stopNumber: number): void {
  if (arrival !== null && departure !== null && departure < arrival) {
    throw ValidationError.single(
      ['body', 'occurred_at'],
      `Value error, the departure (${departure}) would be before the arrival (${arrival}) at stop ${stopNumber}`,
    );
  }
}

/** The unit of work of one tracking event (see trackingService): the answer kept for its event_id, or the stop's actual set now. */
async function recordEvent(
  clock: Clock,
  loads: TrackingDeps['loads'],
  tx: Executor,
  changes: ChangeSet,
  ws: LoadWorkspace,
  orgId: string,
  ref: string,
  input: TrackingEventInput,
  { type, time }: ReturnType<typeof readTrackingEvent>,
): Promise<TrackingEventAnswer> {
  const prior = await trackingEventById(tx, orgId, input.event_id);
  if (prior) return keptAnswer(tx, ws, JSON.parse(prior.answer) as TrackingEventAnswer);
  const row = await ws.find(tx, ref);
  if (!row) throw new NotFoundError('Load', ref);
  const stops = await ws.stopsOf(tx, row.id);
  const stop = stops.find((s) => s.stop_number === input.stop_number);
  if (!stop)
    throw ValidationError.single(
      ['body', 'stop_number'],
      `Value error, load '${ref}' has no stop ${input.stop_number} (its stops: ${stops.map((s) => s.stop_number).join(', ')})`,
    );
  const timeZone = stopTimeZone((await ws.record(tx, 'locations', stop.location_external_reference_id))?.timezone);
  const occurredAt = instantAt(time, timeZone, stop.stop_number);
  const field = type === 'ARRIVED' ? 'actual_arrival' : 'actual_departure';
  const current = stop[field];
  if (current !== null && current !== occurredAt && input.correction !== true) {
    throw new ConflictError(
      `Stop ${stop.stop_number} of load '${ref}' already has ${field} ${current}; send "correction": true to replace it with ${occurredAt}`,
    );
  }
  assertOrder(type === 'ARRIVED' ? occurredAt : stop.actual_arrival, type === 'DEPARTED' ? occurredAt : stop.actual_departure, stop.stop_number);
  if (current !== occurredAt) await applyToStop(loads, tx, changes, ws, orgId, ref, stops, stop.stop_number, field, occurredAt);
  const answer: TrackingEventAnswer = {
    event_id: input.event_id,
    load_external_reference_id: row.external_reference_id,
    stop_number: stop.stop_number,
    type,
    ...answeredTimes(occurredAt, timeZone),
    source: (input.source ?? (input.edi_status_code !== undefined ? 'EDI' : 'MANUAL')) as TrackingEventAnswer['source'],
  };
  await insertTrackingEvent(tx, { org_id: orgId, event_id: input.event_id, load_id: row.id, answer: JSON.stringify(answer), created_at: toIso(clock.now()) });
  return answer;
}

/**
 * Tracking events (docs/api.md, "Stop actuals, tracking events and recommendation evidence"): an ELD,
 * app, EDI 214 or tracking provider's arrival or departure becomes a stop's actual_arrival or
 * actual_departure.
 */
export function trackingService(clock: Clock, deps: TrackingDeps) {
  const { pipeline, loads } = deps;
  const stamp = () => toIso(clock.now());
  return {
    /**
     * A tracking event sets a stop's actual arrival or departure through the load's own update (its
     * history row, load.updated and the recommendations follow-up come with it), then load.stop_arrived or
     * load.stop_departed; kept by event_id in the same transaction, so the same id answers the same again.
     */
    record(orgId: string, ref: string, input: TrackingEventInput): Promise<TrackingEventAnswer> {
      // The event's type and time are read (and refused) before the transaction opens.
      const event = readTrackingEvent(input);
      return pipeline.write<TrackingEventAnswer, LoadWorkspace>(
        orgId,
        (tx, changes, ws) => recordEvent(clock, loads, tx, changes, ws, orgId, ref, input, event),
        {
          workspace: () => new LoadWorkspace(orgId, stamp),
          analyticsRun: true,
          // Two requests with one new event_id: the loser's insert fails the unique key and runs again, finding the winner's.
          retryUniqueRace: true,
        },
      );
    },
  };
}

export type TrackingService = ReturnType<typeof trackingService>;
