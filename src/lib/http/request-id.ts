import type { IncomingMessage } from 'node:http';
import { pooledRandom } from '../random.js';

// A caller's request id is echoed when it is reasonable (printable, bounded); otherwise we make one.
const ACCEPTABLE = /^[\w.:@/+=-]{1,128}$/;

export function newRequestId(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  if (typeof sent === 'string' && ACCEPTABLE.test(sent)) return sent;
  // 128 random bits.
  const [bytes, at] = pooledRandom(16);
  return `req_${bytes.toString('hex', at, at + 16)}`;
}
