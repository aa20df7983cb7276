import { PostgresAdapter } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
/** A repository method takes either the root handle or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** The engine an executor (the database, or a transaction on it) talks to. */
export function dialectOf(executor: Executor): 'sqlite' | 'postgres' {
  return executor.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}
