import { fetch, type Dispatcher } from 'undici';

/** An attempt's time limit (docs/webhooks.md, "A delivery"), from the start of the connection to the last byte of the answer read. */
export const TIMEOUT_MS = 10_000;
/** The most of an answer's body that is read; the rest is never read: the connection is closed. */
export const RESPONSE_READ_LIMIT = 64 * 1024;
/** The most of an answer's body kept in the attempt log (the start of what was read). */
export const RESPONSE_EXCERPT_LIMIT = 2 * 1024;

/** Why an attempt was cut short by us: its deadline, the process stopping, or its endpoint going away. */
export type CutReason = 'deadline' | 'stopping' | 'endpoint_removed';

/** The reason an attempt's controller is aborted with (an attempt in flight can be told apart by it). */
export class AttemptCut extends Error {
  constructor(readonly reason: CutReason | 'read_limit') {
    super(`attempt cut: ${reason}`);
  }
}

export interface AttemptRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The whole attempt's limit (connection, headers and body). */
  deadlineMs: number;
  dispatcher: Dispatcher;
}

export interface AttemptAnswer {
  /** The answer's status, or null when none arrived. */
  responseStatus: number | null;
  retryAfter: string | null;
  /** The start of the answer's body (at most RESPONSE_EXCERPT_LIMIT bytes, as text), or null. */
  responseExcerpt: string | null;
  durationMs: number;
  /** Why no whole answer was had (no status; or a status whose body was cut short), else null. */
  error: string | null;
  /** Set when we cut the attempt: its deadline, the process stopping, its endpoint going away. */
  cut: CutReason | null;
}

/**
 * One POST to a receiver that ends by its deadline whatever the receiver does: a timer held by this
 * call (not a signal the collector may take: on Node 20, `AbortSignal.any` holds a timeout signal
 * weakly) aborts `control` at `deadlineMs`, which ends the connection, the wait for headers and the
 * body alike. At most RESPONSE_READ_LIMIT bytes of the body are read; past them the connection is
 * closed. `control` is the caller's too, so it can cut the attempt (stopping, endpoint deleted).
 */
export async function sendAttempt(req: AttemptRequest, control: AbortController): Promise<AttemptAnswer> {
  const t0 = performance.now();
  const deadline = setTimeout(() => control.abort(new AttemptCut('deadline')), req.deadlineMs);
  let responseStatus: number | null = null;
  let retryAfter: string | null = null;
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  let error: string | null = null;
  try {
    const res = await fetch(req.url, {
      method: 'POST',
      headers: req.headers,
      body: req.body,
      redirect: 'manual',
      signal: control.signal,
      dispatcher: req.dispatcher,
    });
    responseStatus = res.status;
    retryAfter = res.headers.get('retry-after');
    if (res.body) {
      const reader = res.body.getReader();
      let read = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const take = Math.min(value.byteLength, RESPONSE_READ_LIMIT - read);
        if (keptBytes < RESPONSE_EXCERPT_LIMIT) {
          const piece = value.subarray(0, Math.min(take, RESPONSE_EXCERPT_LIMIT - keptBytes));
          kept.push(piece);
          keptBytes += piece.byteLength;
        }
        read += take;
        if (take < value.byteLength) {
          // Past the limit: the rest is not read; aborting closes the connection (it cannot be reused).
          error = `The answer's body is longer than ${RESPONSE_READ_LIMIT / 1024} KiB: the rest was not read; connection closed`;
          control.abort(new AttemptCut('read_limit'));
          await reader.cancel().catch(() => undefined);
          break;
        }
      }
    }
  } catch (err) {
    error = describe(err, control.signal, req.deadlineMs, responseStatus !== null);
  } finally {
    clearTimeout(deadline);
  }
  const reason = control.signal.reason;
  const cut = reason instanceof AttemptCut && reason.reason !== 'read_limit' ? reason.reason : null;
  return {
    responseStatus,
    retryAfter,
    responseExcerpt: keptBytes > 0 ? Buffer.concat(kept).toString('utf8') : null,
    durationMs: Math.round(performance.now() - t0),
    error,
    cut,
  };
}

function describe(err: unknown, signal: AbortSignal, deadlineMs: number, hadStatus: boolean): string {
  const reason = signal.reason;
  if (signal.aborted && reason instanceof AttemptCut) {
    const limit = `${deadlineMs / 1000} s`;
    if (reason.reason === 'deadline') return hadStatus ? `The answer's body did not end within ${limit}; connection closed` : `Timed out after ${limit}`;
    if (reason.reason === 'stopping') return 'Stopped: the process is shutting down';
    if (reason.reason === 'endpoint_removed') return 'Stopped: the endpoint was deleted or disabled';
  }
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code;
  if (code === 'ECONNREFUSED') return 'Connection refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'Connection reset';
  if (code === 'EBLOCKEDADDRESS') return `URL refused: ${e.cause!.message}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'Host could not be resolved';
  if (code?.startsWith('ERR_TLS') || code?.includes('CERT')) return `TLS error (${code})`;
  return (e.cause?.message ?? e.message ?? String(err)).slice(0, 500);
}
