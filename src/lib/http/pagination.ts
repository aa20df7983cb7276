import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import { CiEnum, Timestamp } from './schema-helpers.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;
/** Far past any real data; keeps the offset a safe integer (`page=Infinity` was a 500, `page=1e20` lost precision). */
export const MAX_PAGE = 1_000_000_000;

/** Query schema of a list endpoint: paging, whitelisted sort (`-` for descending), delta-sync filters. */
export function listQuerySchema<F extends TProperties>(sortFields: readonly string[], filters: F) {
  const sortValues = sortFields.flatMap((f) => [f, `-${f}`]);
  return Type.Object({
    page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1, description: 'Page number, 1-indexed.' }),
    page_size: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: 'Items per page, at most 100.' }),
    sort: CiEnum(sortValues, {
      default: 'created_at',
      description: `Sort field, ascending; prefix with '-' for descending. Ties are broken by id. One of: ${sortFields.join(', ')}.`,
    }),
    updated_since: Type.Optional(Timestamp('Only records updated at or after this time (ISO 8601).')),
    created_since: Type.Optional(Timestamp('Only records created at or after this time (ISO 8601).')),
    ...filters,
  });
}

export interface PageRequest {
  page: number;
  page_size: number;
  sort: string;
}

export interface Pagination {
  page: number;
  page_size: number;
  total: number;
  total_items: number;
  total_pages: number;
  has_more: boolean;
  has_next: boolean;
  has_previous: boolean;
}

/** Both pagination shapes of the specification at once, so clients written against either work. */
export function pagination(page: number, pageSize: number, total: number): Pagination {
  const totalPages = Math.ceil(total / pageSize);
  const hasNext = page < totalPages;
  return {
    page,
    page_size: pageSize,
    total,
    total_items: total,
    total_pages: totalPages,
    has_more: hasNext,
    has_next: hasNext,
    has_previous: page > 1,
  };
}

export const PaginationSchema = Type.Object(
  {
    page: Type.Integer(),
    page_size: Type.Integer(),
    total: Type.Integer(),
    total_items: Type.Integer({ description: 'Same as total.' }),
    total_pages: Type.Integer(),
    has_more: Type.Boolean({ description: 'Same as has_next.' }),
    has_next: Type.Boolean(),
    has_previous: Type.Boolean(),
  },
  { $id: 'Pagination' },
);

export function pageSchema<T extends TSchema>(item: T, name: string) {
  return Type.Object({ items: Type.Array(item), pagination: Type.Ref(PaginationSchema) }, { $id: name });
}

export function parseSort(sort: string): { field: string; direction: 'asc' | 'desc' } {
  return sort.startsWith('-') ? { field: sort.slice(1), direction: 'desc' } : { field: sort, direction: 'asc' };
}
