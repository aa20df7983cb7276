/**
 * Loaded before every test file (vitest.config.ts, setupFiles): every Fastify app a test builds (through
 * startApp, buildApp directly, injected or listening on a port) gets one onSend hook that checks each
 * answer of a documented route against the OpenAPI document that app serves (./contract.ts). A
 * violation fails the test that received it, in its afterEach, on whichever engine the suite runs.
 */
import { afterAll, afterEach, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { assertNoViolations } from './contract.js';

vi.mock('fastify', async (importOriginal) => {
  const mod = await importOriginal<typeof import('fastify')>();
  const { installContractHook } = await import('./contract.js');
  const original = mod.default;
  const withContract = ((opts?: unknown) => installContractHook(original(opts as never) as unknown as FastifyInstance)) as unknown as typeof original;
  Object.assign(withContract, original);
  return { ...mod, default: withContract, fastify: withContract };
});

afterEach(() => assertNoViolations());
// Requests made in beforeAll/afterAll hooks are reported too.
afterAll(() => assertNoViolations());
