import type { FastifyRequest } from 'fastify';

/** The query string of the dashboard's lists: every value is read leniently (anything malformed is ignored, never an error). */

/** A query parameter's first value, trimmed and cut to `max` characters; '' when absent. */
export function queryText(req: FastifyRequest, name: string, max = 100): string {
  const v = (req.query as Record<string, unknown>)[name];
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === 'string' ? first.trim().slice(0, max) : '';
}

/** The `page` parameter: a whole number from 1 to 1,000,000, else 1. */
export function pageNumber(req: FastifyRequest): number {
  const n = Number(queryText(req, 'page'));
  return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : 1;
}
