import type { Kysely, Transaction } from 'kysely';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
/** A repository method takes either the root handle or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;
