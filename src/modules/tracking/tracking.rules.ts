import { ValidationError } from '../../lib/http/errors.js';
import { EDI_STATUS_CODES, type TrackingEventInput, TRACKING_TYPES } from './tracking.schema.js';

type TrackingType = (typeof TRACKING_TYPES)[number];

/** D14: the event's type from `type` and/or its EDI 214 alias; 422 when neither or when they contradict. */
export function trackingTypeOf(input: TrackingEventInput): TrackingType {
  const code = input.edi_status_code?.toUpperCase();
  const fromCode = code === undefined ? undefined : EDI_STATUS_CODES[code];
  if (code !== undefined && fromCode === undefined) {
    throw new ValidationError([
      { type: 'enum', loc: ['body', 'edi_status_code'], msg: `Input should be one of ${Object.keys(EDI_STATUS_CODES).map((c) => `'${c}'`).join(', ')} (EDI 214 arrival and departure codes)` },
    ]);
  }
  const type = input.type as TrackingType | undefined;
  if (type === undefined && fromCode === undefined) {
    throw new ValidationError([{ type: 'missing', loc: ['body', 'type'], msg: 'Field required: type (ARRIVED or DEPARTED), or an edi_status_code' }]);
  }
  if (type !== undefined && fromCode !== undefined && type !== fromCode) {
    throw new ValidationError([
      { type: 'value_error', loc: ['body', 'edi_status_code'], msg: `Value error, edi_status_code ${code} means ${fromCode}, which contradicts type ${type}` },
    ]);
  }
  return (type ?? fromCode)!;
}
