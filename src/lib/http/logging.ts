import type { FastifyRequest } from 'fastify';

/**
 * Text with every API-key-shaped run (`lbk_` and what follows) masked to `lbk_[redacted]`: a key sent
 * where it does not belong (`?api_key=…`, a path segment) leaves neither in logs nor in trace spans
 * (docs/observability.md).
 */
export function maskApiKeys(text: string): string {
  // Letters, digits and `_` written as %XX are the same URL (RFC 3986 unreserved): read them as such first,
  // so `lbk%5F…` or `lbk_%37%30…` is masked too.
  const plain = text.includes('%')
    ? text.replace(/%([0-9a-f]{2})/gi, (esc, hex: string) =>
        /[0-9A-Za-z_]/.test(String.fromCharCode(parseInt(hex, 16))) ? String.fromCharCode(parseInt(hex, 16)) : esc,
      )
    : text;
  return plain.replace(/lbk_[0-9a-z]+/gi, 'lbk_[redacted]');
}

/**
 * The one log format of every process (`serve`, `worker`): Pino's JSON lines on stdout (`level` as
 * Pino's number, `time` in epoch ms, `pid`, `hostname`, `msg`), keys and cookies redacted.
 */
export function loggerOptions(level: string, extra: Record<string, unknown> = {}) {
  return {
    level,
    // Keys and cookies never reach the logs.
    redact: ['req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers.authorization'],
    // Nor does a key sent where it does not belong (`?api_key=…`, a path): the logged URL masks it.
    serializers: {
      req: (req: FastifyRequest) => ({
        method: req.method,
        url: maskApiKeys(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
    ...extra,
  };
}
