import { Type, type TSchema } from '@sinclair/typebox';
import { CiEnum, ExternalReferenceId } from '../../lib/http/schema-helpers.js';
import { ErrorSchemas } from '../../lib/http/openapi.js';

/** The batch endpoints' request and result schemas (docs/api.md, "Batches"); the runner is batch.ts. */
export const MAX_BATCH_ITEMS = 100;

export type BatchOperation = 'create' | 'update' | 'upsert' | 'delete';

export function batchRequestSchema(dataKey: string, operations: readonly BatchOperation[]) {
  return Type.Object({
    items: Type.Array(
      Type.Object({
        operation: CiEnum(operations, { description: `One of ${operations.join(', ')} (any letter case).` }),
        external_reference_id: Type.Optional(
          ExternalReferenceId({ description: `Used when the ${dataKey} object omits its own; when both are given they must be equal.` }),
        ),
        [dataKey]: Type.Optional(
          Type.Unknown({ description: `The ${dataKey}, validated per item with the same rules as the single-record endpoints. Omitted for delete.` }),
        ),
      }),
      { maxItems: MAX_BATCH_ITEMS, description: `At most ${MAX_BATCH_ITEMS} items, applied in order.` },
    ),
  });
}

/**
 * The batch request as the document shows it: each item is one of the operations, with the data object
 * of that operation (create: the create schema; update and upsert: the update schema; delete: none).
 * The runtime schema above keeps the data object open so that each item is validated on its own.
 */
export function batchRequestDocument(dataKey: string, operations: readonly BatchOperation[], schemas: { create: unknown; update: unknown }) {
  const operation = (ops: readonly BatchOperation[]) => CiEnum(ops);
  const itemRef = ExternalReferenceId({ description: `Used when the ${dataKey} object omits its own; when both are given they must be equal.` });
  const variants: TSchema[] = [];
  if (operations.includes('create')) {
    variants.push(
      Type.Object(
        {
          operation: operation(['create']),
          external_reference_id: Type.Optional(itemRef),
          [dataKey]: Type.Unsafe(Object.assign({}, schemas.create as object, { description: `The new ${dataKey}, as the single create takes it.` })),
        },
        { title: `Create ${dataKey}`, description: 'Creates the record; 409 in its result when the external_reference_id exists.' },
      ),
    );
  }
  const changing = operations.filter((op): op is 'update' | 'upsert' => op === 'update' || op === 'upsert');
  if (changing.length > 0) {
    variants.push(
      Type.Object(
        {
          operation: operation(changing),
          external_reference_id: Type.Optional(itemRef),
          [dataKey]: Type.Unsafe(
            Object.assign({}, schemas.update as object, {
              description: `The fields to change, as the single update takes them (upsert: the fields of a new ${dataKey} when none exists).`,
            }),
          ),
        },
        {
          title: `Update or upsert ${dataKey}`,
          description: 'update: 404 in its result when the record does not exist; upsert creates it then (with the create rules).',
        },
      ),
    );
  }
  if (operations.includes('delete')) {
    variants.push(
      Type.Object(
        { operation: operation(['delete']), external_reference_id: ExternalReferenceId({ description: `The ${dataKey} to delete.` }) },
        { title: `Delete ${dataKey}`, description: `Deletes the ${dataKey}; no data object.` },
      ),
    );
  }
  return Type.Object({
    // One variant per operation (their operations never overlap). anyOf rather than oneOf: the operation is
    // matched in any letter case, which a discriminator cannot express, and linters cannot see the patterns exclude each other.
    items: Type.Array(Type.Unsafe({ anyOf: variants }), {
      maxItems: MAX_BATCH_ITEMS,
      description: `At most ${MAX_BATCH_ITEMS} items, applied in order, each on its own.`,
    }),
  });
}

export const BatchResultSchema = Type.Object(
  {
    success_count: Type.Integer(),
    error_count: Type.Integer(),
    results: Type.Array(
      Type.Object({
        index: Type.Integer(),
        external_reference_id: Type.Union([Type.String(), Type.Null()]),
        operation: Type.String({ enum: ['create', 'update', 'upsert', 'delete'], description: 'The operation, in lower case.' }),
        success: Type.Boolean(),
        id: Type.Union([Type.String(), Type.Null()], { description: 'The service id of the record; null when the item failed.' }),
        error: Type.Optional(
          Type.Object(
            {
              status: Type.Integer({
                description:
                  '404, 409, 422 as the single-record endpoints answer; 503 when the item was not processed (send it again); 500 on an unexpected failure.',
              }),
              request_id: Type.Optional(Type.String({ description: 'On a 500: the request id to quote when reporting it.' })),
              detail: Type.Union([Type.String(), Type.Array(Type.Ref(ErrorSchemas.ValidationIssue), { maxItems: 100 })], {
                description:
                  'What the single-record endpoint would have answered as detail: a message, or for 422 one {type, loc, msg} per problem (at most the first 100), loc starting at ["body", "items", index].',
              }),
              truncated: Type.Optional(Type.Literal(true, { description: 'On a 422 with more than 100 problems: only the first 100 are listed.' })),
            },
            { description: 'Present on a failed item only.' },
          ),
        ),
      }),
    ),
  },
  { $id: 'BatchResult' },
);
