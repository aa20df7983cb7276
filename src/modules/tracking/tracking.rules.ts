import { ValidationError, type ValidationIssue } from '../../lib/http/errors.js';
import { instantOfWallTime, wallTimeOf } from '../../lib/time.js';
import { EDI_STATUS_CODES, type TrackingEventAnswer, type TrackingEventInput, TRACKING_TYPES } from './tracking.schema.js';

type TrackingType = (typeof TRACKING_TYPES)[number];

/** When the event happened, as sent: an instant (UTC) or a time read off the stop's clock. */
export type TrackingTime = { utc: string } | { local: string };

/** The event's type from `type` and/or its EDI 214 alias (docs/api.md, "Stop actuals, tracking events and recommendation evidence"); a problem when neither or when they contradict. */
function typeOf(input: TrackingEventInput): TrackingType | ValidationIssue {
  const code = input.edi_status_code?.toUpperCase();
  const fromCode = code === undefined ? undefined : EDI_STATUS_CODES[code];
  if (code !== undefined && fromCode === undefined) {
    return {
      type: 'enum',
      loc: ['body', 'edi_status_code'],
      msg: `Input should be one of ${Object.keys(EDI_STATUS_CODES)
        .map((c) => `'${c}'`)
        .join(', ')} (EDI 214 arrival and departure codes)`,
    };
  }
  const type = input.type as TrackingType | undefined;
  if (type === undefined && fromCode === undefined)
    return { type: 'missing', loc: ['body', 'type'], msg: 'Field required: type (ARRIVED or DEPARTED), or an edi_status_code' };
  if (type !== undefined && fromCode !== undefined && type !== fromCode) {
    return {
      type: 'value_error',
      loc: ['body', 'edi_status_code'],
      msg: `Value error, edi_status_code ${code} means ${fromCode}, which contradicts type ${type}`,
    };
  }
  return (type ?? fromCode)!;
}

/** Times without an offset, one rule (docs/api.md): occurred_at is UTC, occurred_at_local the stop's clock; exactly one. */
function timeOf(input: TrackingEventInput): TrackingTime | ValidationIssue {
  const { occurred_at: utc, occurred_at_local: local } = input;
  if (utc !== undefined && local !== undefined) {
    return {
      type: 'value_error',
      loc: ['body', 'occurred_at_local'],
      msg: "Value error, send occurred_at (the instant, UTC unless it carries an offset) or occurred_at_local (the stop's local clock time), not both",
    };
  }
  if (utc !== undefined) return { utc };
  if (local !== undefined) return { local };
  return {
    type: 'missing',
    loc: ['body', 'occurred_at'],
    msg: "Field required: occurred_at (the instant, UTC unless it carries an offset), or occurred_at_local (the stop's local clock time, YYYY-MM-DDTHH:MM[:SS])",
  };
}

/** The event's type and time, or one 422 naming every problem of the two. */
export function readTrackingEvent(input: TrackingEventInput): { type: TrackingType; time: TrackingTime } {
  const type = typeOf(input);
  const time = timeOf(input);
  const problems = [type, time].filter((x): x is ValidationIssue => typeof x === 'object' && 'msg' in x);
  if (problems.length > 0) throw new ValidationError(problems);
  return { type: type as TrackingType, time: time as TrackingTime };
}

/** The zone a stop's times are read and answered in: its location's, UTC for a location without one. */
export const stopTimeZone = (timeZone: string | null | undefined): string => timeZone ?? 'UTC';

/** The instant of the event at a stop whose clock runs in `timeZone`; 422 when a local time names none. */
export function instantAt(time: TrackingTime, timeZone: string, stopNumber: number): string {
  if ('utc' in time) return time.utc;
  const reading = instantOfWallTime(time.local, timeZone);
  if ('instant' in reading) return reading.instant;
  const [type, msg] = {
    invalid: ['datetime_parsing', `Input should be a valid local date and time, YYYY-MM-DDTHH:MM[:SS] without an offset (got ${time.local})`],
    skipped: [
      'value_error',
      `Value error, ${time.local} does not exist in ${timeZone} (stop ${stopNumber}'s time zone): the clocks skipped it for daylight saving time; send the time the stop's clock showed, or occurred_at in UTC`,
    ],
    out_of_range: [
      'datetime_parsing',
      `Input should be a local time whose instant lies between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in UTC (${time.local} in ${timeZone} is outside)`,
    ],
  }[reading.refused] as [string, string];
  throw ValidationError.single(['body', 'occurred_at_local'], msg, type);
}

/** The answer's time fields: the instant in UTC, and the same instant on the stop's wall clock. */
export function answeredTimes(occurredAt: string, timeZone: string): Pick<TrackingEventAnswer, 'occurred_at' | 'occurred_at_local' | 'time_zone'> {
  return { occurred_at: occurredAt, occurred_at_local: wallTimeOf(occurredAt, timeZone), time_zone: timeZone };
}
