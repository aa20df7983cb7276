import { Type, type Static, type TSchema, type TString, type StringOptions } from '@sinclair/typebox';
import { CANONICAL_TIMESTAMP, CI_ENUM } from './validation.js';

/** A value that may also be sent as null (to clear it). Expressed as a type list so errors stay single. */
export function Nullable<T extends TSchema>(schema: T) {
  const s = schema as unknown as Record<string, unknown>;
  const type = s.type;
  return Type.Unsafe<Static<T> | null>({ ...s, type: Array.isArray(type) ? [...type, 'null'] : [type, 'null'] });
}

/** Enumeration accepted in any letter case, canonicalised during validation. */
export function CiEnum<const V extends readonly string[]>(values: V, options: { description?: string; default?: V[number] } = {}) {
  return Type.Unsafe<V[number]>({ type: 'string', [CI_ENUM]: [...values], ...options });
}

export const ExternalReferenceId = (options: StringOptions = {}): TString =>
  Type.String({ minLength: 1, maxLength: 255, description: 'Your identifier for the record, unique within the organization.', ...options });

export const Timestamp = (description?: string) => Type.String({ format: 'date-time', [CANONICAL_TIMESTAMP]: true, ...(description ? { description } : {}) });

/** An inclusive upper bound: a bare date (`2026-03-02`) means the end of that UTC day, as the dashboard's filter does. */
export const TimestampUpTo = (description: string) =>
  Type.String({
    format: 'date-time',
    [CANONICAL_TIMESTAMP]: 'end-of-day',
    description: `${description} A bare date (YYYY-MM-DD) includes that whole UTC day.`,
  });

/** Free text with a length cap (protects storage and responses from hostile sizes). */
export const Text = (maxLength = 255, description?: string) => Type.String({ maxLength, ...(description ? { description } : {}) });
