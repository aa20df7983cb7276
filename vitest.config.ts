import { defineConfig } from 'vitest/config';

// The PostgreSQL the `postgres` project runs on (a fresh database is made beside it for each run).
const PG_URL = process.env.LANEBRIDGE_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

// One project per engine: `npm test` runs `sqlite` (no server needed), `npm run test:pg` runs
// `postgres`, and `npm run test:all` both.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Every answer a test receives is checked against the served OpenAPI document (test/support/contract.ts).
    setupFiles: ['test/support/response-contract.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'sqlite', env: { LANEBRIDGE_TEST_DATABASE_URL: '' } } },
      { extends: true, test: { name: 'postgres', env: { LANEBRIDGE_TEST_DATABASE_URL: PG_URL } } },
    ],
  },
});
