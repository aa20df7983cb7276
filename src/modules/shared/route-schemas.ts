import { Type } from '@sinclair/typebox';
import { ExternalReferenceId } from '../../lib/http/schema-helpers.js';

export const RefParams = Type.Object({ external_reference_id: ExternalReferenceId() });
export const RefOrIdParams = Type.Object({
  external_reference_id: ExternalReferenceId({ description: 'The external_reference_id, or the service id of the record.' }),
});
