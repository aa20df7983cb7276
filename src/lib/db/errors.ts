// Driver errors are recognised here once; services and handlers never look at driver codes.

interface DriverError {
  code?: string;
  errno?: string;
  message?: string;
}

export function isUniqueViolation(err: unknown): boolean {
  const e = err as DriverError;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as DriverError;
  return e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/**
 * The engine gave up this transaction so that another could go on (PostgreSQL: deadlock detected, a
 * serialization failure): the whole unit of work may simply run again (docs/reliability.md "One load").
 */
export function isTransactionConflict(err: unknown): boolean {
  const e = err as DriverError;
  return e?.code === '40P01' || e?.code === '40001';
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  // A statement past its statement_timeout (src/lib/db/postgres.ts), or a transaction idle past its limit.
  '57014',
  '25P03',
  // A lock wait past lock_timeout (a batch waiting past its request's deadline, src/lib/db/locks.ts).
  '55P03',
  // A deadlock or serialization failure still there after the write pipeline's retries (isTransactionConflict).
  '40P01',
  '40001',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
]);

/** The database cannot be reached or cannot take the request now: the client should retry later (503). */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as DriverError;
  if (!e || typeof e !== 'object') return false;
  if (e.code && UNAVAILABLE_CODES.has(e.code)) return true;
  // Extended codes: SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT, SQLITE_LOCKED_SHAREDCACHE …
  if (typeof e.code === 'string' && /^SQLITE_(IOERR|BUSY|LOCKED)_/.test(e.code)) return true;
  const msg = e.message ?? '';
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|driver has already been destroyed/i.test(
    msg,
  );
}
