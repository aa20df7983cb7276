import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDataStore } from '../src/lib/db/index.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string | null;
  }
}

/**
 * With LANEBRIDGE_TEST_DATABASE_URL=postgres://… the whole suite runs on PostgreSQL: a fresh database is
 * created for the run and migrated once. Without it every test file gets its own SQLite file.
 */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.LANEBRIDGE_TEST_DATABASE_URL;
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
