import type { Config } from '../config.js';
import { openDataStore, type DataStore, type OpenOptions } from '../lib/db/index.js';
import { UsageError } from './usage.js';

async function readStdinLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

/** The password of --password or --password-stdin (the accounts service checks it); undefined when neither is given. */
export async function passwordOption(values: Record<string, unknown>): Promise<string | undefined> {
  if (values.password !== undefined && values['password-stdin']) throw new UsageError('give --password or --password-stdin, not both');
  const password = values['password-stdin'] ? await readStdinLine() : (values.password as string | undefined);
  return password;
}

/** Says on stderr which database a command opened when it had to create it (DATABASE_URL unset opens ./data/lanebridge.db). */
export const storeOptions: OpenOptions = { onCreated: (message) => process.stderr.write(`lanebridge: ${message}\n`) };

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function optionalInt(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a whole number of at least 1`);
  }
  return n;
}

export function print(obj: unknown) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

export async function withStore<T>(config: Config, work: (store: DataStore) => Promise<T>): Promise<T> {
  const store = openDataStore(config.databaseUrl, { ...storeOptions, poolSize: 2 });
  try {
    await store.migrate();
    return await work(store);
  } finally {
    await store.close();
  }
}
