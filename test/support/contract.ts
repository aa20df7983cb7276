/**
 * The response contract: every answer of a documented route is checked against the OpenAPI document
 * the app serves (its status is declared for the operation, its JSON body matches that status's
 * schema, its headers are declared and match their schemas). The schemas are checked by
 * openapi-backend's validator (Ajv, here the JSON Schema 2020-12 dialect of OpenAPI 3.1, with formats);
 * the status and header rules it does not enforce are checked here.
 */
import type { FastifyInstance } from 'fastify';
import { OpenAPIBackend, type Document } from 'openapi-backend';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/** Headers the service itself sets: when one is sent, the response must declare it. */
export const SERVICE_HEADERS = [
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'retry-after',
  'idempotent-replayed',
  'x-events-kept-after',
  'allow',
];

export interface ObservedResponse {
  method: string;
  /** The route as Fastify declares it, e.g. `/v2/tms-api/loads/:external_reference_id`. */
  route: string;
  status: number;
  headers: Record<string, unknown>;
  /** The body as sent (text), or null when there is none. */
  body: string | null;
}

export interface Violation {
  where: string;
  problems: string[];
}

type OperationObject = { operationId?: string; responses?: Record<string, ResponseObject> };
type ResponseObject = {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
  headers?: Record<string, { required?: boolean; schema?: unknown }>;
};

export interface ContractChecker {
  /** null when the route is not in the document (the docs page, the dashboard, ops routes). */
  check(observed: ObservedResponse): Violation | null;
}

function openapiPath(route: string): string {
  return route.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/$/, '');
}

/**
 * openapi-backend checks the document itself with a JSON Schema of OpenAPI 3.0, which refuses 3.1
 * (type lists, `license.identifier`): the document is checked by Redocly's lint instead
 * (test/lib/http/openapi.test.ts), and this only validates answers.
 */
class ResponseValidator extends OpenAPIBackend {
  override validateDefinition() {
    return this.document;
  }
}

/** A checker for one served document (dereferenced once; its validators compiled on first use). */
export async function contractChecker(document: unknown): Promise<ContractChecker> {
  const api = new ResponseValidator({
    definition: structuredClone(document) as Document,
    strict: true,
    // Validators are compiled when an operation is first answered (all at once take seconds).
    quick: true,
    ajvOpts: { strict: false, allErrors: true },
    customizeAjv: (_ajv, opts) => addFormats(new Ajv2020({ ...opts, strict: false, allErrors: true })) as never,
  });
  await api.init();
  const paths = (api.definition as unknown as { paths: Record<string, Record<string, OperationObject>> }).paths;
  return {
    check(observed) {
      const method = observed.method.toLowerCase();
      if (method === 'head' || method === 'options') return null;
      const op = paths[openapiPath(observed.route)]?.[method];
      if (!op) return null;
      const where = `${observed.method} ${observed.route} → ${observed.status}`;
      const problems: string[] = [];
      const declared = op.responses?.[String(observed.status)] ?? op.responses?.[`${String(observed.status)[0]}XX`] ?? op.responses?.default;
      if (!declared) {
        return { where, problems: [`status ${observed.status} is not declared (declared: ${Object.keys(op.responses ?? {}).join(', ')})`] };
      }
      if (!declared.description || declared.description === 'Default Response') problems.push('the response has no real description');
      // Body: JSON matching the declared schema, or nothing when no content is declared.
      const json = declared.content?.['application/json'];
      const contentType = String(observed.headers['content-type'] ?? '');
      if (json) {
        if (!/^application\/json\b/.test(contentType)) problems.push(`content-type '${contentType}' is not application/json`);
        let body: unknown;
        try {
          body = JSON.parse(observed.body ?? '');
        } catch {
          problems.push(`the body is not JSON: ${String(observed.body).slice(0, 200)}`);
        }
        if (body !== undefined) {
          const result = api.validator.validateResponse(body, op.operationId!, observed.status);
          for (const e of result.errors ?? []) problems.push(`body${e.instancePath} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
        }
      } else if (observed.body) {
        problems.push(`a body was sent where none is declared: ${observed.body.slice(0, 200)}`);
      }
      // Headers: declared ones match their schemas, required ones are present, the service's own are declared.
      const sent = Object.fromEntries(Object.entries(observed.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v)]));
      const declaredHeaders = Object.fromEntries(Object.entries(declared.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
      const headerResult = api.validator.validateResponseHeaders(sent, op.operationId!, { statusCode: observed.status });
      for (const e of headerResult.errors ?? []) problems.push(`header ${e.instancePath.replace(/^\/headers\//, '')} ${e.message ?? e.keyword}`);
      for (const [name, h] of Object.entries(declaredHeaders)) if (h.required && !(name in sent)) problems.push(`required header ${name} is missing`);
      for (const name of SERVICE_HEADERS) if (name in sent && !(name in declaredHeaders)) problems.push(`header ${name} is sent but not declared`);
      return problems.length > 0 ? { where, problems } : null;
    },
  };
}

/**
 * What a test run found: violations wait here until the test's afterEach reports them. Kept on the
 * global object: the setup file, the mocked Fastify and a test file may each hold their own copy of
 * this module.
 */
const FOUND = Symbol.for('lanebridge.contract.violations');
const found: Violation[] = ((globalThis as Record<symbol, Violation[]>)[FOUND] ??= []);

export function recordViolation(v: Violation): void {
  found.push(v);
}

/** Takes (and clears) what was found so far. */
export function takeViolations(): Violation[] {
  return found.splice(0, found.length);
}

export function formatViolations(vs: Violation[]): string {
  return `${vs.length} response(s) do not match the OpenAPI document:\n` + vs.map((v) => `- ${v.where}\n    ${v.problems.join('\n    ')}`).join('\n');
}

/** Throws (failing the test) when any response checked since the last call broke the contract. */
export function assertNoViolations(): void {
  const vs = takeViolations();
  if (vs.length > 0) throw new Error(formatViolations(vs));
}

/** One checker per distinct document (apps of a file serve the same one). */
const checkers = new Map<string, Promise<ContractChecker>>();
const perApp = new WeakMap<FastifyInstance, Promise<ContractChecker | null>>();

function checkerFor(app: FastifyInstance): Promise<ContractChecker | null> {
  let found = perApp.get(app);
  if (!found) {
    const swagger = (app as unknown as { swagger?: () => unknown }).swagger;
    if (typeof swagger !== 'function') found = Promise.resolve(null);
    else {
      const doc = swagger.call(app);
      const text = JSON.stringify(doc);
      let checker = checkers.get(text);
      if (!checker) checkers.set(text, (checker = contractChecker(doc)));
      found = checker;
    }
    perApp.set(app, found);
  }
  return found;
}

export function installContractHook(app: FastifyInstance): FastifyInstance {
  app.addHook('onSend', async (req, reply, payload) => {
    const route = req.routeOptions?.url;
    if (!route || !app.hasDecorator('swagger')) return payload;
    // Streams (static files) are never API answers.
    if (payload !== null && payload !== undefined && typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
    const checker = await checkerFor(app);
    if (!checker) return payload;
    const body = payload === null || payload === undefined ? null : Buffer.isBuffer(payload) ? payload.toString('utf8') : (payload as string);
    // A 204 goes out without a body whatever the serialiser made of it (Fastify drops it).
    const sent = reply.statusCode === 204 || body === '' ? null : body;
    const violation = checker.check({ method: req.method, route, status: reply.statusCode, headers: reply.getHeaders(), body: sent });
    if (violation) recordViolation(violation);
    return payload;
  });
  return app;
}
