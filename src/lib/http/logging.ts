import type { FastifyRequest } from 'fastify';

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
        url: req.url.replace(/lbk_[0-9A-Za-z]{8,}/g, 'lbk_[redacted]'),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
    ...extra,
  };
}
