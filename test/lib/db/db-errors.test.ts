import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable, isTransactionConflict } from '../../../src/lib/db/errors.js';

// A database that cannot take the request now is a 503 (retry later), never a 500; an import pauses.
describe('database errors that mean "not now"', () => {
  it('include SQLite’s extended busy, locked and I/O codes, not its constraint codes', () => {
    for (const code of [
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
      'SQLITE_BUSY_TIMEOUT',
      'SQLITE_LOCKED',
      'SQLITE_LOCKED_SHAREDCACHE',
      'SQLITE_IOERR',
      'SQLITE_IOERR_WRITE',
      'SQLITE_FULL',
    ]) {
      expect(isDatabaseUnavailable({ code, message: 'x' }), code).toBe(true);
    }
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'SQLITE_BUSYNESS', '23505']) {
      expect(isDatabaseUnavailable({ code, message: 'x' }), code).toBe(false);
    }
  });

  it('a deadlock or serialization failure is a conflict to run again, and 503 when it outlasts the retries', () => {
    for (const code of ['40P01', '40001']) {
      expect(isTransactionConflict({ code, message: 'x' }), code).toBe(true);
      expect(isDatabaseUnavailable({ code, message: 'x' }), code).toBe(true);
    }
    for (const code of ['23505', '55P03', 'SQLITE_BUSY']) expect(isTransactionConflict({ code, message: 'x' }), code).toBe(false);
  });
});
