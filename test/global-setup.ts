import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDataStore } from '../src/lib/db/index.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string | null;
  }
}

/**
 * The `postgres` project runs the whole suite on PostgreSQL: a fresh database is created beside the one
 * named (LANEBRIDGE_TEST_DATABASE_URL, default the local `test`) and migrated once. The `sqlite` project
 * gives every test file its own SQLite file.
 */
export default async function setup(project: TestProject) {
  // The project's own setting (vitest.config.ts): empty for `sqlite`, the admin URL for `postgres`.
  const adminUrl = project.config.env?.LANEBRIDGE_TEST_DATABASE_URL;
  if (!adminUrl) {
    project.provide('databaseUrl', null);
    return;
  }
  const url = new URL(adminUrl);
  const dbName = `lanebridge_test_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${dbName}`);
  url.pathname = `/${dbName}`;
  const store = openDataStore(url.toString());
  await store.migrate();
  await store.close();
  project.provide('databaseUrl', url.toString());
  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  };
}
